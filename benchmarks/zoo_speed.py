"""Speed rows of benchmarks/run.py for the LLM cross-encoder (row 12) and the bi-encoder (row 13).

Row 11: ``LLMMaxP`` over a small random Llama (4 layers, width 256; MiniLM's WordPiece tokenizer
with [SEP] as its EOS) against transformers' ``AutoModelForSequenceClassification`` on exactly
the same (template, window) id sequences, given ready-made, padded per batch of the same size,
and the same max over each document's windows; ``--llm PATH`` times a local causal-LM folder
instead (e.g. TinyLlama). Row 12: ``BiEncoderMaxP`` against ``SentenceTransformer.encode`` of
the query and the window texts (decoded from the same windows), cosine, and the same max. Both
fp32, on the benchmark's device. No targets: the engine's ratio and the score agreement are
reported.
"""
from __future__ import annotations

from pathlib import Path

import _common as C
import numpy as np


def write_small_llama(path: Path, *, hidden: int = 256, layers: int = 4, seed: int = 0) -> str:
    """A random Llama sequence classifier with the benchmarks' tokenizer (MiniLM's; [SEP] as EOS, [PAD] as pad)."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, LlamaConfig

    path.mkdir(parents=True, exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(C.tokenizer_path())
    tokenizer.eos_token = "[SEP]"
    tokenizer.save_pretrained(path)
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=hidden * 4 * 2 // 3,
                         num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=2048, num_labels=1, pad_token_id=tokenizer.pad_token_id,
                         eos_token_id=tokenizer.eos_token_id, bos_token_id=tokenizer.cls_token_id)
    AutoModelForSequenceClassification.from_config(config).save_pretrained(path)
    return str(path)


def _windows(model, frame) -> tuple[list[list[int]], list[list[int]], np.ndarray]:
    """Each (query, window) of ``model``'s MaxP over ``frame``: the query's ids, the window's ids
    (without specials) and the document of each window."""
    engine = model.model
    query_ids, _ = engine.query_tokenization(frame["query"].tolist(), engine.chunking.max_query_tokens)
    doc_ids, _ = engine.tokenization(frame["text"].tolist(), engine.chunking.tokens_read(engine.layout))
    queries, windows, doc_of = [], [], []
    for k, (q, d) in enumerate(zip(query_ids, doc_ids)):
        for start, end in engine.chunking.spans(len(d), engine.layout):
            queries.append(q.tolist())
            windows.append(d[start:end].tolist())
            doc_of.append(k)
    return queries, windows, np.asarray(doc_of)


def _max_per_doc(scores: np.ndarray, doc_of: np.ndarray) -> np.ndarray:
    return np.maximum.reduceat(scores, np.flatnonzero(np.r_[True, doc_of[1:] != doc_of[:-1]]))


def _compare(ours, reference, reps: int) -> tuple[float, float]:
    """The median over interleaved rounds of time(reference) / time(ours), and the max abs score difference."""
    scores = {}
    times = C.interleaved({"ours": lambda: scores.__setitem__("ours", ours()),
                           "reference": lambda: scores.__setitem__("reference", reference())}, reps)
    ratio = C.median(r / o for r, o in zip(times["reference"], times["ours"]))
    return ratio, float(np.abs(scores["ours"] - scores["reference"]).max())


def classifier_run(reference, sequences: list[list[int]], doc_of: np.ndarray, bs: int, device: str):
    """A function scoring ``sequences`` with a transformers sequence classifier, padded per batch
    of ``bs``, and giving each document's best."""
    import torch

    pad = reference.config.pad_token_id if reference.config.pad_token_id is not None else 0

    def run():
        scores = []
        with torch.inference_mode():
            for b in range(0, len(sequences), bs):
                part = sequences[b:b + bs]
                width = max(map(len, part))
                ids = torch.tensor([s + [pad] * (width - len(s)) for s in part], device=device)
                mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in part], device=device)
                scores.append(reference(input_ids=ids, attention_mask=mask).logits[:, 0].float().cpu().numpy())
        return _max_per_doc(np.concatenate(scores), doc_of)
    return run


def llm_rows(frame, bs: int, reps: int, device: str, llm: str | None, tmp: Path, quick: bool = False) -> list:
    """Row 11: LLMMaxP vs AutoModelForSequenceClassification on the same sequences (``quick``: a
    2-layer Llama of width 64)."""
    from transformers import AutoModelForSequenceClassification

    from pyterrier_longdoc import LLMMaxP

    path = llm or write_small_llama(tmp / "small-llama", **({"hidden": 64, "layers": 2} if quick else {}))
    ours = LLMMaxP(path, batch_size=bs, device=device, dtype="fp32", lora=None)
    reference = AutoModelForSequenceClassification.from_pretrained(path).to(device).eval()
    layout = ours.model.layout
    queries, windows, doc_of = _windows(ours, frame)
    sequences = [list(layout.prefix) + q + list(layout.middle) + w + list(layout.suffix)
                 for q, w in zip(queries, windows)]
    ratio, diff = _compare(lambda: C.score_fresh(ours, frame), classifier_run(reference, sequences, doc_of, bs, device),
                           reps)
    name = llm or f"random Llama ({reference.config.num_hidden_layers} layers, width {reference.config.hidden_size})"
    return [["12a", f"LLMMaxP speed-up vs AutoModelForSequenceClassification (+max), {name}, {len(frame)} docs, "
                    f"{len(sequences)} windows", f"{ratio:.2f}x", "-", "-"],
            ["12b", "  max abs score diff vs AutoModelForSequenceClassification (fp32, same ids)", f"{diff:.1e}",
             "<= 1e-4", diff <= 1e-4]]


def biencoder_rows(path: str, frame, bs: int, reps: int, device: str) -> list:
    """Row 12: BiEncoderMaxP vs SentenceTransformer.encode of the query and the window texts."""
    import torch
    from sentence_transformers import SentenceTransformer

    from pyterrier_longdoc import BiEncoderMaxP

    ours = BiEncoderMaxP(path, batch_size=bs, device=device, dtype="fp32")
    reference = SentenceTransformer(path, device=device)
    tokenizer = ours.model.tokenizer
    _, windows, doc_of = _windows(ours, frame)
    texts = tokenizer.batch_decode(windows)
    query_of = frame["query"].to_numpy()[doc_of]

    def run_reference():
        queries = list(dict.fromkeys(query_of))
        embedded = reference.encode(queries + texts, batch_size=bs, convert_to_tensor=True)
        query = embedded[[queries.index(q) for q in query_of]]
        scores = torch.nn.functional.cosine_similarity(query, embedded[len(queries):]).float().cpu().numpy()
        return _max_per_doc(scores, doc_of)

    ratio, diff = _compare(lambda: C.score_fresh(ours, frame), run_reference, reps)
    return [["13a", f"BiEncoderMaxP speed-up vs SentenceTransformer.encode (+cosine, max), {len(frame)} docs, "
                    f"{len(windows)} windows", f"{ratio:.2f}x", "-", "-"],
            ["13b", "  max abs score diff vs SentenceTransformer.encode (window texts decoded)", f"{diff:.1e}",
             "<= 1e-4", diff <= 1e-4]]

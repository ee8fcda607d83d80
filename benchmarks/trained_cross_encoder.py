"""A passage-trained cross-encoder for the reduced-precision row of run.py (row 8), offline.

Starts from the packaged all-MiniLM-L6-v2 and trains its sentence-transformers
``CrossEncoder`` on (term, definition) pairs of FOLDOC, the Free On-line Dictionary of
Computing (Debian package ``dict-foldoc``: /usr/share/dictd/foldoc.dict.dz): the query is a
term, the positive its definition, the negative another term's definition. Also builds the
long-document ranking frame row 8 ranks with it (documents of several definitions, one of them
the query term's).

    python benchmarks/trained_cross_encoder.py OUT_DIR [--triples 400]
    python benchmarks/run.py --trained OUT_DIR
"""
from __future__ import annotations

import argparse
import gzip
import random
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

FOLDOC = Path("/usr/share/dictd/foldoc.dict.dz")


def foldoc_entries(path: Path = FOLDOC, min_words: int = 30) -> list[tuple[str, str]]:
    """(term, definition) pairs of a dictd dictionary: a term at column 0, its text indented;
    markup ({cross references}, <topics>, dates) removed, the term left out of its definition."""
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: install the Debian package dict-foldoc")
    entries, term, lines = [], None, []
    with gzip.open(path, "rt", encoding="utf-8", errors="replace") as file:
        for line in file:
            if line[:1] not in (" ", "\t", "\n") and line.strip():
                if term is not None:
                    entries.append((term, lines))
                term, lines = line.strip(), []
            elif term is not None:
                lines.append(line.strip())
    entries.append((term, lines))
    out = []
    for term, body in entries:
        if term.startswith("00-") or not re.fullmatch(r"[A-Za-z][A-Za-z0-9 +#.-]{2,40}", term):
            continue
        text = re.sub(r"\(\d{4}-\d{2}-\d{2}\)|<[^>]*>|[{}]", " ", " ".join(body))
        text = re.sub(re.escape(term), " ", text, flags=re.IGNORECASE)
        words = text.split()
        if len(words) >= min_words:
            out.append((term, " ".join(words[:200])))
    return out


def train(out: Path, n_triples: int = 400, seed: int = 0, epochs: int = 1, lr: float = 1e-4,
          batch_size: int = 16, device: str = "cpu") -> Path:
    """Trains the cross-encoder with binary cross-entropy on (term, definition) labels 1 and 0, in
    a plain AdamW loop over sentence-transformers' ``CrossEncoder`` model and tokenizer (its
    legacy ``fit`` left the loss at chance, 0.69, in two tries here), and saves it with
    ``CrossEncoder.save``."""
    import torch
    from sentence_transformers import CrossEncoder

    entries = foldoc_entries()
    rng = random.Random(seed)
    rng.shuffle(entries)
    pairs = []
    for term, definition in entries[:n_triples]:
        _, negative = rng.choice(entries[n_triples:])
        pairs += [(term, definition, 1.0), (term, negative, 0.0)]
    torch.manual_seed(seed)
    ce = CrossEncoder(C.minilm_path(), num_labels=1, max_length=128, device=device)
    model, tokenizer = ce.model, ce.tokenizer
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    steps = epochs * ((len(pairs) + batch_size - 1) // batch_size)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / max(1, steps // 10)))
    loss_fn = torch.nn.BCEWithLogitsLoss()
    losses = []
    for _ in range(epochs):
        rng.shuffle(pairs)
        for start in range(0, len(pairs), batch_size):
            batch = pairs[start:start + batch_size]
            inputs = tokenizer([p[0] for p in batch], [p[1] for p in batch], padding=True, truncation=True,
                               max_length=128, return_tensors="pt")
            inputs = inputs.to(device)
            loss = loss_fn(model(**inputs).logits[:, 0], torch.tensor([p[2] for p in batch], device=device))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            losses.append(loss.item())
    print(f"loss: first 10 steps {sum(losses[:10]) / 10:.3f}, last 10 steps {sum(losses[-10:]) / 10:.3f}")
    model.eval()
    ce.save(str(out))
    return out


def ranking_frame(n_queries: int, docs_per_query: int, definitions_per_doc: tuple[int, int] = (3, 8),
                  seed: int = 1, skip: int = 2000):
    """A re-ranking frame ``qid, query, docno, text``: for each query term, ``docs_per_query``
    documents of several definitions each; the first holds the term's own definition. Terms and
    definitions come after the first ``skip`` shuffled entries (not the training ones)."""
    import pandas as pd

    entries = foldoc_entries()
    random.Random(0).shuffle(entries)
    pool = entries[skip:]
    rng = random.Random(seed)
    rows = []
    for q, (term, definition) in enumerate(pool[:n_queries]):
        for d in range(docs_per_query):
            parts = [text for _, text in rng.sample(pool[n_queries:], rng.randint(*definitions_per_doc))]
            if d == 0:
                parts.insert(rng.randrange(len(parts) + 1), definition)
            rows.append((f"q{q}", term, f"q{q}-d{d}", " ".join(parts)))
    return pd.DataFrame(rows, columns=["qid", "query", "docno", "text"])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", help="directory to save the cross-encoder in")
    parser.add_argument("--triples", type=int, default=400, help="(term, positive, negative) triples (400)")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--lr", type=float, default=1e-4, help="AdamW learning rate (1e-4)")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1)")
    parser.add_argument("--device", default="cpu", help="where to train: cpu (default) or cuda")
    args = parser.parse_args(argv)
    C.set_threads(args.threads)
    C.silence_loading()
    print(train(Path(args.out), args.triples, epochs=args.epochs, lr=args.lr, device=args.device))
    return 0


if __name__ == "__main__":
    sys.exit(main())

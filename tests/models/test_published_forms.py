"""What users bring, in miniature: peft adapters as castorini publishes RankLLaMA's (the head's
weights in the adapter file, ``modules_to_save: null``), with ``modules_to_save`` or without a
head, from a folder or a hub id in an offline cache, in safetensors or a weights-only ``.bin``;
checkpoints saved in bf16; the attention kernel and token-budget batches; LoRA runs the same in
every process."""
import contextlib
import json
import os
import re
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("peft")

from helpers.cross_encoders import write_cross_encoder
from helpers.llm_backbones import write_tiny_lm

import pyterrier_longdoc as pl
from pyterrier_longdoc.engine.batching import batch_bounds
from pyterrier_longdoc.engine.runtime import Runtime, hold_parameters

QUERY, DOC = "what red cat", "the red cat sat on a mat near the river castle in the city"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def base_lm(tmp_path_factory):
    """A plain LM, as RankLLaMA's base (Llama-2-7b-hf) is: no score head of its own."""
    return str(write_tiny_lm(tmp_path_factory.mktemp("base"), "llama", classifier=False))


def write_adapter(folder: Path, base: str, head: str, *, safetensors: bool = True) -> Path:
    """A trained-looking LoRA adapter over ``base``; ``head``: "in_file" (castorini's RankLLaMA:
    task_type SEQ_CLS, modules_to_save null, the score head's weights in the adapter file),
    "modules_to_save" (the head named there) or "none" (no head saved)."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForSequenceClassification

    torch.manual_seed(1)
    model = AutoModelForSequenceClassification.from_pretrained(base, num_labels=1)
    config = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "down_proj"],
                        task_type="SEQ_CLS" if head == "in_file" else None,
                        modules_to_save=["score"] if head == "modules_to_save" else None)
    model = get_peft_model(model, config)
    with torch.no_grad():  # as if trained: adapters and head away from their start
        for name, parameter in model.named_parameters():
            if "lora_B" in name or "score" in name:
                parameter.normal_(0, 0.3)
    model.save_pretrained(str(folder), safe_serialization=safetensors)
    saved = json.loads((folder / "adapter_config.json").read_text())
    if head == "in_file":  # what older peft (castorini's) wrote: the head is implied by SEQ_CLS
        saved["modules_to_save"] = None
    (folder / "adapter_config.json").write_text(json.dumps(saved))
    return folder


def peft_reference(base: str, adapter: str, ids: list[int]) -> float:
    """The owners' code: ``PeftModel.from_pretrained(base, adapter).merge_and_unload()``."""
    from peft import PeftModel
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained(base, num_labels=1)
    model = PeftModel.from_pretrained(model, adapter).merge_and_unload().eval()
    with torch.no_grad():
        return float(model(input_ids=torch.tensor([ids])).logits[0, 0])


def card_input(folder: str) -> list[int]:
    """The published model card's input: ``tokenizer(f'query: {q}', f'document: {d}')``."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(folder)(f"query: {QUERY}", f"document: {DOC}")["input_ids"]


@pytest.mark.parametrize("head,safetensors", [("in_file", True), ("in_file", False), ("modules_to_save", True)])
def test_an_adapter_scores_as_peft_merged_onto_its_base(base_lm, tmp_path, head, safetensors):
    adapter = write_adapter(tmp_path / "adapter", base_lm, head, safetensors=safetensors)
    assert (adapter / ("adapter_model.safetensors" if safetensors else "adapter_model.bin")).is_file()
    expected = peft_reference(base_lm, str(adapter), card_input(base_lm))
    with _no_untrained_head_warning():
        model = pl.LLMFirstP(str(adapter), max_length=128, dtype="fp32")
    np.testing.assert_allclose(model.predict([(QUERY, DOC)]), [expected], rtol=1e-5, atol=1e-5)


def test_an_adapter_without_a_head_gets_a_new_one_and_says_so(base_lm, tmp_path):
    adapter = write_adapter(tmp_path / "adapter", base_lm, "none")
    with pytest.warns(pl.UntrainedHeadWarning, match="is new"):
        pl.LLMFirstP(str(adapter), max_length=128)


def test_a_pickle_that_runs_code_is_refused(base_lm, tmp_path):
    adapter = write_adapter(tmp_path / "adapter", base_lm, "in_file", safetensors=False)
    torch.save({"weights": torch.zeros(1), "code": os.system}, adapter / "adapter_model.bin")  # not weights alone
    with pytest.raises(ValueError, match="adapter_model.bin is not weights alone"):
        pl.LLMFirstP(str(adapter))


def test_a_truncated_adapter_file_is_named(base_lm, tmp_path):
    adapter = write_adapter(tmp_path / "adapter", base_lm, "in_file")
    weights = adapter / "adapter_model.safetensors"
    weights.write_bytes(weights.read_bytes()[:200])  # cut short, as by a failed copy or download
    with pytest.raises(ValueError, match=re.escape(str(weights)) + ".*corrupt or truncated"):
        pl.LLMFirstP(str(adapter))


def test_an_adapter_whose_base_is_not_in_the_offline_cache_names_both(base_lm, tmp_path, monkeypatch):
    from huggingface_hub import constants

    adapter = write_adapter(tmp_path / "adapter", base_lm, "in_file")
    saved = json.loads((adapter / "adapter_config.json").read_text())
    saved["base_model_name_or_path"] = "no-such-org/no-such-base"
    (adapter / "adapter_config.json").write_text(json.dumps(saved))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(OSError, match=r"(?s)no-such-org/no-such-base.*adapter_config\.json.*local folder") as raised:
        pl.LLMFirstP(str(adapter))
    assert str(adapter / "adapter_config.json") in str(raised.value)


def test_an_adapter_by_hub_id_loads_from_the_offline_cache(base_lm, tmp_path, monkeypatch):
    from huggingface_hub import constants

    cache = tmp_path / "hub"
    commit = "0123456789abcdef0123456789abcdef01234567"
    snapshot = cache / "models--castorini--tiny-rankllama" / "snapshots" / commit
    write_adapter(snapshot, base_lm, "in_file")
    (snapshot.parents[1] / "refs").mkdir()
    (snapshot.parents[1] / "refs" / "main").write_text(commit)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    expected = peft_reference(base_lm, str(snapshot), card_input(base_lm))
    with _no_untrained_head_warning():
        model = pl.LLMFirstP("castorini/tiny-rankllama", max_length=128, dtype="fp32")
    np.testing.assert_allclose(model.predict([(QUERY, DOC)]), [expected], rtol=1e-5, atol=1e-5)


@contextlib.contextmanager
def _no_untrained_head_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error", pl.UntrainedHeadWarning)
        yield


# bf16 checkpoints

def save_in_bf16(source: str, folder: Path) -> str:
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    model = AutoModelForSequenceClassification.from_pretrained(source).to(torch.bfloat16)
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(source).save_pretrained(folder)
    assert json.loads((folder / "config.json").read_text()).get("dtype", "bfloat16") == "bfloat16"
    return str(folder)


def fp32_reference(folder: str, ids: list[int]) -> float:
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained(folder, dtype=torch.float32).eval()
    with torch.no_grad():
        return float(model(input_ids=torch.tensor([ids])).logits[0, 0])


@pytest.mark.parametrize("dtype", [None, "fp32"])
def test_a_bf16_saved_llm_loads_in_fp32_on_the_cpu(tmp_path, dtype):
    folder = save_in_bf16(str(write_tiny_lm(tmp_path / "lm", "qwen2")), tmp_path / "bf16")
    model = pl.LLMFirstP(folder, max_length=128, dtype=dtype, lora=None)
    assert {p.dtype for p in model.model.parameters()} == {torch.float32}
    np.testing.assert_allclose(model.predict([(QUERY, DOC)]), [fp32_reference(folder, card_input(folder))],
                               rtol=1e-5, atol=1e-5)


def test_maxp_over_a_bf16_saved_bert_scores_as_its_fp32_weights(tmp_path):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    folder = save_in_bf16(str(write_cross_encoder(tmp_path / "bert")), tmp_path / "bf16")
    upcast = tmp_path / "fp32"  # the same weights, saved in fp32
    AutoModelForSequenceClassification.from_pretrained(folder, dtype=torch.float32).save_pretrained(upcast)
    AutoTokenizer.from_pretrained(folder).save_pretrained(upcast)
    model = pl.MaxP(folder, window=8, stride=4)
    assert {p.dtype for p in model.model.parameters()} == {torch.float32}
    np.testing.assert_array_equal(model.predict([(QUERY, DOC)]),
                                  pl.MaxP(str(upcast), window=8, stride=4).predict([(QUERY, DOC)]))


@pytest.mark.filterwarnings("ignore:this CPU has no native bf16:pyterrier_longdoc.LongDocWarning")  # on this CPU or not
@pytest.mark.parametrize("dtype,device,expected", [
    ("bf16", "cuda", torch.bfloat16), ("fp16", "cuda", torch.float16), ("fp32", "cuda", torch.float32),
    ("bf16", "cpu", torch.float32), (None, "cpu", torch.float32), ("int8", "cpu", torch.float32)])
def test_half_precision_holds_the_weights_in_it_on_a_gpu_only(dtype, device, expected):
    assert Runtime(dtype=dtype).weights_dtype(torch.device(device)) == expected


def test_weights_change_dtype_but_buffers_keep_theirs():
    layer = torch.nn.Linear(2, 2)
    layer.register_buffer("frequencies", torch.rand(3))
    layer.bias.requires_grad = False
    hold_parameters(layer, torch.bfloat16)
    assert layer.weight.dtype == layer.bias.dtype == torch.bfloat16 and layer.frequencies.dtype == torch.float32
    hold_parameters(layer, torch.float32, trainable_only=True)  # what fit trains is fp32, the frozen stays
    assert layer.weight.dtype == torch.float32 and layer.bias.dtype == torch.bfloat16


# the attention kernel and token budgets

def test_the_attention_kernel_is_a_setting_passed_to_transformers(tmp_path):
    lm = str(write_tiny_lm(tmp_path / "lm", "llama"))
    sdpa = pl.LLMFirstP(lm, max_length=128)
    eager = pl.LLMFirstP(lm, max_length=128, attn_implementation="eager")
    assert sdpa.attn_implementation == "sdpa" and eager.model.encoder.config._attn_implementation == "eager"
    np.testing.assert_allclose(eager.predict([(QUERY, DOC)]), sdpa.predict([(QUERY, DOC)]), rtol=1e-5)
    eager.attn_implementation = "sdpa"
    assert eager.model.encoder.config._attn_implementation == "sdpa"
    with pytest.raises((ValueError, ImportError), match="not_a_kernel"):
        pl.MaxP(str(write_cross_encoder(tmp_path / "bert")), attn_implementation="not_a_kernel")


def test_batches_are_capped_by_tokens_once_padded():
    lengths = np.array([400, 300, 100, 100, 100, 100, 90])
    assert list(batch_bounds(lengths, 16)) == [(0, 7)]
    assert list(batch_bounds(lengths, 16, max_tokens=500)) == [(0, 1), (1, 2), (2, 7)]
    assert list(batch_bounds(lengths, 3, max_tokens=500)) == [(0, 1), (1, 2), (2, 5), (5, 7)]
    assert list(batch_bounds(np.array([900, 10]), 16, max_tokens=500)) == [(0, 1), (1, 2)]  # one, however long
    with pytest.raises(ValueError, match="max_batch_tokens"):
        Runtime(max_batch_tokens=0)


def test_llm_batches_hold_fewer_long_sequences(tmp_path):
    from pyterrier_longdoc.engine.model import ScoringObserver

    lm = str(write_tiny_lm(tmp_path / "lm", "llama"))

    class Batches(ScoringObserver):
        shapes = []

        def stage(self, name, seconds, batch=None):
            if name == "encode":
                self.shapes.append(tuple(batch.input_ids.shape))

    model = pl.LLMLongP(lm, max_doc_tokens=200)
    assert model.max_batch_tokens == 16 * 512  # the LLM models' default budget
    model.max_batch_tokens = 300
    model.model.observer = Batches()
    pairs = [(QUERY, DOC * (1 + k % 4)) for k in range(8)]
    scores = model.predict(pairs)
    assert len(Batches.shapes) > 1 and all(n * width <= 300 or n == 1 for n, width in Batches.shapes)
    model.max_batch_tokens = None
    np.testing.assert_allclose(model.predict(pairs), scores, rtol=1e-5, atol=1e-6)


# LoRA runs

FIT_SCRIPT = textwrap.dedent("""
    import sys, warnings
    import pandas as pd, torch
    warnings.simplefilter("ignore")
    torch.rand(int(sys.argv[2]))  # whatever the process drew before: the run must not depend on it
    import pyterrier_longdoc as pl
    topics = pd.DataFrame({"qid": ["q1", "q2"], "query": ["red cat", "blue river"]})
    candidates = pd.DataFrame([{"qid": q, "query": query, "docno": f"{q}-{k}", "rank": k, "score": -k,
                                "text": f"the {word} sat on a mat " * 3}
                               for q, query in topics.itertuples(index=False)
                               for k, word in enumerate(query.split() + ["dog", "house"])])
    qrels = candidates.assign(label=candidates["rank"].eq(0).astype(int))[["qid", "docno", "label"]]
    model = pl.LLMMaxP(sys.argv[1], window=8, stride=4, max_doc_tokens=32, append_eos=True)
    history = model.fit(topics, qrels, candidates=candidates, epochs=4, lr=1e-2, queries_per_step=1, seed=7)
    print(repr(history["loss"].tolist()))
""")


def test_lora_runs_are_bit_identical_in_two_processes(tmp_path):
    lm = str(write_tiny_lm(tmp_path / "lm", "llama"))
    (tmp_path / "fit.py").write_text(FIT_SCRIPT)
    root = str(ROOT)
    runs = []
    for draws, hash_seed in ((1, "1"), (5, "2")):
        env = {**os.environ, "PYTHONPATH": root, "PYTHONHASHSEED": hash_seed, "OMP_NUM_THREADS": "1",
               "HF_HUB_OFFLINE": "1", "CUDA_VISIBLE_DEVICES": ""}
        done = subprocess.run([sys.executable, str(tmp_path / "fit.py"), lm, str(draws)], env=env, cwd=root,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        runs.append(done.stdout.strip().splitlines()[-1])
    assert len(eval(runs[0])) == 8 and runs[0] == runs[1]  # 4 epochs of 2 steps

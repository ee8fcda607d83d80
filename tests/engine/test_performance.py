"""The engine's fast paths give the scores of its plain path, and the seams benchmarks use
(``model.batching``, ``model.observer``, the token cache's size) do what they say."""
import numpy as np
import pytest
import torch
from helpers.tiny_bert import WORDS
from helpers.cross_encoders import ARCHITECTURES, write_cross_encoder

import pyterrier_longdoc as pl
from pyterrier_longdoc._scoring import pipeline_groups
from pyterrier_longdoc.engine import fast_paths as _fast_paths
from pyterrier_longdoc.engine.model import ScoringObserver

# expected here, not what these tests are about: models built over a plain encoder (the tiny random BERT)
# get a new head, and documents longer than the tiny settings read are cropped
pytestmark = [pytest.mark.filterwarnings("ignore::pyterrier_longdoc.UntrainedHeadWarning"),
              pytest.mark.filterwarnings("ignore::pyterrier_longdoc.CroppingWarning")]

# the models whose chunk features are last-layer vectors at the sequence's leading positions:
# [CLS] (and for PARADE-Transformer-Q the query tokens after it)
READ_LEADING_ONLY = ("firstp", "maxp", "sump", "kmax_avgp", "avgp", "parade_avg", "parade_max", "parade_sum",
                     "parade_attn", "parade_cnn", "parade_transformer", "parade_transformer_pretr",
                     "parade_transformer_q")
SETTINGS = {"window": 12, "stride": 6, "max_doc_tokens": 60}


def documents(n=6, seed=0):
    rng = np.random.default_rng(seed)
    words = list(WORDS)
    queries = [" ".join(rng.choice(words, 3)) for _ in range(n)]
    texts = [" ".join(rng.choice(words, int(rng.integers(4, 70)))) for _ in range(n)]
    return queries, texts


def both_paths(reranker, queries, texts):
    fast = reranker.score_texts(queries, texts)
    reranker.model.partial_last_layer = False
    full = reranker.score_texts(queries, texts)
    reranker.model.partial_last_layer = True
    return fast, full


@pytest.mark.parametrize("name", READ_LEADING_ONLY)
def test_last_layer_at_leading_only_gives_the_full_paths_scores(tiny_bert, name, tmp_path):
    from helpers.zoo_backbones import tiny_backbone_for

    torch.manual_seed(0)
    backbone, settings = tiny_backbone_for(name, tmp_path) or (tiny_bert, {} if name in ("firstp", "avgp") else SETTINGS)
    reranker = pl.model_class(name)(backbone, batch_size=4, **settings)
    assert reranker.model.partial_last_layer
    fast, full = both_paths(reranker, *documents())
    assert np.abs(fast - full).max() <= 1e-5
    assert np.ptp(full) > 1e-4  # the documents are told apart: the comparison can fail


@pytest.mark.parametrize("arch", ["bert", "electra", "roberta"])
def test_last_layer_at_leading_only_with_a_cross_encoders_own_head(tmp_path, arch):
    folder = write_cross_encoder(tmp_path / arch, arch)
    reranker = pl.MaxP(str(folder), batch_size=4, **SETTINGS)
    assert reranker.model.partial_last_layer
    queries, texts = documents()
    fast, full = both_paths(reranker, queries, texts)
    assert np.abs(fast - full).max() <= 1e-5


def test_the_partial_last_layer_leaves_the_encoder_as_it_was(tiny_bert):
    reranker = pl.MaxP(tiny_bert, **SETTINGS)
    layers = list(reranker.model.encoder.encoder.layer)
    keys = set(reranker.model.state_dict())
    reranker.score_texts(*documents())
    assert list(reranker.model.encoder.encoder.layer) == layers
    assert set(reranker.model.state_dict()) == keys


def last_layer_widths(reranker, queries, texts, monkeypatch) -> list[tuple[int, int]]:
    """(positions the last layer computed, sequence width) of each encoder call at inference."""
    widths = []

    def full(module, args, kwargs, output):
        states = output[0] if isinstance(output, tuple) else output
        widths.append((states.shape[1], (args[0] if args else kwargs["hidden_states"]).shape[1]))
    handle = reranker.model.encoder.encoder.layer[-1].register_forward_hook(full, with_kwargs=True)
    original = _fast_paths._LeadingOnlyLayer.forward

    def leading(layer, hidden_states, *args, **kwargs):
        out = original(layer, hidden_states, *args, **kwargs)
        widths.append((out.shape[1], hidden_states.shape[1]))
        return out
    monkeypatch.setattr(_fast_paths._LeadingOnlyLayer, "forward", leading)
    try:
        reranker.score_texts(queries, texts)
    finally:
        handle.remove()
    return widths


def test_the_query_token_variant_computes_the_last_layer_up_to_the_last_query_token(tmp_path, monkeypatch):
    from helpers.zoo_backbones import tiny_backbone_for

    backbone, settings = tiny_backbone_for("parade_transformer_q", tmp_path)
    reranker = pl.model_class("parade_transformer_q")(backbone, batch_size=64, **settings)
    queries, texts = documents()
    queries[2] = queries[2] + " " + " ".join(["river"] * 5)  # the longest query sets the batch's positions
    (positions, width), = last_layer_widths(reranker, queries, texts, monkeypatch)
    longest = max(len(ids) for ids in reranker.model.tokenization(queries, 10 ** 6)[0])
    assert positions == 1 + min(longest, reranker.model.chunking.max_query_tokens) < width


@pytest.mark.parametrize("name", ["cedr_knrm", "neural_model1"])
def test_models_that_read_every_position_keep_the_full_path(tmp_path, name, monkeypatch):
    from helpers.zoo_backbones import tiny_backbone_for

    backbone, settings = tiny_backbone_for(name, tmp_path)
    reranker = pl.model_class(name)(backbone, **settings)
    assert not reranker.model.partial_last_layer
    widths = last_layer_widths(reranker, *documents(), monkeypatch)
    assert widths and all(positions == width for positions, width in widths)


def test_mean_pooling_and_other_layouts_keep_the_full_path(tmp_path):
    modernbert = pl.MaxP(str(write_cross_encoder(tmp_path / "modernbert", "modernbert")), **SETTINGS)
    assert not modernbert.model.partial_last_layer  # its head reads the mean of every position
    deberta = pl.MaxP(str(write_cross_encoder(tmp_path / "deberta", "deberta-v2")), **SETTINGS)
    assert not deberta.model.partial_last_layer  # not a BERT-style layer


def counting_onednn_calls(monkeypatch) -> dict:
    """How often oneDNN's linear runs from now on, plain and fused with GELU."""
    calls = {"none": 0, "gelu": 0}
    original = _fast_paths._OneDnnLinear.forward

    def counted(layer, x):
        calls[layer.activation] += 1
        return original(layer, x)
    monkeypatch.setattr(_fast_paths._OneDnnLinear, "forward", counted)
    return calls


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_onednn_linears_give_the_plain_paths_scores(tmp_path, arch, monkeypatch):
    reranker = pl.MaxP(str(write_cross_encoder(tmp_path / arch, arch)), batch_size=4, dtype="fp32", **SETTINGS)
    reranker.model.onednn_linears = True  # on whatever this CPU would choose
    keys, modules = set(reranker.model.state_dict()), [type(m) for m in reranker.model.modules()]
    queries, texts = documents()
    calls = counting_onednn_calls(monkeypatch)
    fast = reranker.score_texts(queries, texts)
    assert calls["none"] > 0
    # BERT-style feed-forward layers run their first matrix and exact GELU as one call
    assert (calls["gelu"] > 0) == (arch in ("bert", "electra", "roberta", "deberta-v2"))
    reranker.model.onednn_linears = False
    before = dict(calls)
    plain = reranker.score_texts(queries, texts)
    assert calls == before
    assert np.abs(fast - plain).max() <= 1e-5 and np.ptp(plain) > 1e-4
    assert set(reranker.model.state_dict()) == keys and [type(m) for m in reranker.model.modules()] == modules


@pytest.mark.filterwarnings("ignore:dtype='int8' re-orders rankings:pyterrier_longdoc.LongDocWarning")  # asserted in test_runtime
@pytest.mark.filterwarnings("ignore:this CPU has no native bf16:pyterrier_longdoc.LongDocWarning")  # on this CPU or not
def test_onednn_linears_only_in_fp32_inference(tiny_bert, monkeypatch):
    queries, texts = documents()
    calls = counting_onednn_calls(monkeypatch)
    for dtype in ("fp32", "bf16", "int8"):
        before = sum(calls.values())
        reranker = pl.MaxP(tiny_bert, batch_size=4, dtype=dtype, **SETTINGS)
        reranker.model.onednn_linears = True
        reranker.score_texts(queries, texts)
        # bf16 autocast computes the linear layers in bf16 itself; quantized ones keep their kernel
        assert (sum(calls.values()) > before) == (dtype == "fp32")
    training = pl.MaxP(tiny_bert, batch_size=4, dtype="fp32", **SETTINGS)
    training.model.onednn_linears = True
    training.model.train()
    before = sum(calls.values())
    assert training.score_batch(queries, texts).scores.requires_grad
    assert sum(calls.values()) == before  # with gradients the plain path


@pytest.mark.parametrize("capability, vendor, onednn", [
    ("AVX512", "AuthenticAMD", True), ("AVX512", "", True), ("AVX512", "GenuineIntel", False),
    ("AVX2", "AuthenticAMD", False), ("AVX2", "GenuineIntel", False), ("DEFAULT", "", False)])
def test_by_default_the_cpu_kind_chooses_the_linear_kernel(tiny_bert, monkeypatch, capability, vendor, onednn):
    """oneDNN's linears on AMD CPUs with AVX-512 (where MKL keeps to its AVX2 code), MKL's on
    Intel's (whose AVX-512 MKL uses) and with AVX2 alone, as measured; an explicit True or False
    holds on every CPU."""
    from pyterrier_longdoc.engine import fast_paths

    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: capability)
    monkeypatch.setattr(fast_paths, "cpu_vendor", lambda: vendor)
    queries, texts = documents()
    calls = counting_onednn_calls(monkeypatch)
    reranker = pl.MaxP(tiny_bert, batch_size=4, dtype="fp32", **SETTINGS)
    assert reranker.model.onednn_linears is None and reranker.model.runs_onednn_linears == onednn
    reranker.score_texts(queries, texts)
    assert (sum(calls.values()) > 0) == onednn
    for explicit in (True, False):
        reranker.model.onednn_linears = explicit
        assert reranker.model.runs_onednn_linears == explicit


def test_training_takes_the_full_path(tiny_bert):
    reranker = pl.MaxP(tiny_bert, **SETTINGS)
    seen = []
    last = reranker.model.encoder.encoder.layer[-1]
    last.register_forward_hook(lambda module, args, output: seen.append(output.shape[1]))
    reranker.model.train()
    queries, texts = documents(2)
    reranker.score_batch(queries, texts)
    assert seen and min(seen) > 1  # every position of the last layer
    seen.clear()
    reranker.score_texts(queries, texts)
    assert not seen  # at inference the stand-in layer ran instead


class Recording(ScoringObserver):
    def __init__(self):
        self.stages = []
        self.encoded = []

    def stage(self, name, seconds, batch=None):
        assert seconds >= 0
        self.stages.append(name)
        if name == "encode":
            self.encoded += list(batch.index)


def test_observer_sees_every_stage_and_every_chunk_once(tiny_bert):
    reranker = pl.MaxP(tiny_bert, batch_size=3, **SETTINGS)
    observer = Recording()
    reranker.model.observer = observer
    queries, texts = documents()
    reranker.score_texts(queries, texts)
    # per group of documents: the wait for its ids (tokenized ahead, on another thread), its plan, its
    # batches and encoder calls, the aggregator
    assert observer.stages[:2] == ["tokenize", "plan"]
    assert observer.stages.count("tokenize") == observer.stages.count("aggregate") == len(pipeline_groups(len(texts)))
    assert observer.stages[-1] == "aggregate"
    assert {"batch", "encode"} <= set(observer.stages)
    n_chunks = sum(len(reranker.chunk_spans(t)) for t in texts)
    assert sorted(observer.encoded) == list(range(n_chunks))


def test_input_order_batching_gives_the_same_scores_and_bad_names_are_refused(tiny_bert):
    reranker = pl.MaxP(tiny_bert, batch_size=3, **SETTINGS)
    queries, texts = documents()
    sorted_scores = reranker.score_texts(queries, texts)
    reranker.model.batching = "input_order"
    np.testing.assert_allclose(reranker.score_texts(queries, texts), sorted_scores, atol=1e-6)
    with pytest.raises(ValueError, match="unknown batching 'random'"):
        reranker.model.batching = "random"  # refused when set, not at the next call
    assert reranker.model.batching == "input_order"


def test_token_cache_reports_its_size_and_clears(tiny_bert):
    reranker = pl.MaxP(tiny_bert, **SETTINGS)
    tokenization = reranker.model.tokenization
    reranker.score_texts(*documents())
    assert 0 < tokenization.cached_bytes <= tokenization.cache_bytes
    tokenization.clear()
    assert tokenization.cached_bytes == 0


def test_threads_sharing_one_encoder_get_the_scores_of_one(tiny_bert):
    reranker = pl.MaxP(tiny_bert, batch_size=1, **SETTINGS)
    model = reranker.model.eval()
    queries, texts = documents(8)
    with torch.inference_mode():
        alone = model.score(queries, texts, batch_size=1).scores
        def encode(batch):  # every thread runs the very same encoder; grad mode is per thread
            with torch.inference_mode():
                return model.encode(batch)
        shared = model.score(queries, texts, batch_size=1, workers=[encode, encode, encode]).scores
    np.testing.assert_allclose(shared.numpy(), alone.numpy(), atol=1e-6)


def test_freed_memory_goes_back_to_the_system_between_groups_of_documents(tiny_bert, monkeypatch):
    import pyterrier_longdoc._scoring as scoring_module
    from pyterrier_longdoc.engine.runtime import _malloc_trim, release_freed_memory

    reranker = pl.MaxP(tiny_bert, **SETTINGS)
    queries, texts = documents()
    expected = reranker.score_texts(queries, texts)
    calls = []
    monkeypatch.setattr(scoring_module, "_GROUP_SIZE", 2)
    monkeypatch.setattr(scoring_module, "release_freed_memory", lambda: calls.append(1))
    np.testing.assert_allclose(reranker.score_texts(queries, texts), expected, atol=1e-6)
    assert len(calls) == (len(texts) - 1) // 2  # between groups, not after the last
    assert _malloc_trim() is not None  # glibc: the trim is real on Linux
    release_freed_memory()


@pytest.mark.parametrize("preset", [None, "100"])
def test_importing_caps_onednns_kernel_caches_unless_set_before(preset):
    import os
    import subprocess
    import sys

    names = ("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "LRU_CACHE_CAPACITY")
    env = {k: v for k, v in os.environ.items() if k not in names}
    env.update({name: preset for name in names} if preset else {})
    code = f"import os, torch, pyterrier_longdoc; print(*(os.environ[n] for n in {names!r}))"
    printed = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert printed.stdout.split() == [preset or "16"] * 2

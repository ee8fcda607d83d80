"""The Runtime: the one home of device, dtype, batch size and the engine options, each checked
when it is set (in the constructor or later), and the dtype vocabulary every entry point shares."""
import pytest
import torch

import pyterrier_longdoc as pl
from pyterrier_longdoc._runtime import Runtime

# models built over a plain encoder (the tiny random BERT) get a new head: expected here, not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::pyterrier_longdoc.UntrainedHeadWarning")

SETTINGS = dict(window=12, stride=6, max_length=48, max_query_tokens=8)


@pytest.mark.parametrize("name, value, error", [
    ("batch_size", 0, ValueError), ("batch_size", "8", ValueError), ("batch_size", True, ValueError),
    ("text_field", 3, TypeError), ("dtype", "fp8", ValueError), ("batching", "random", ValueError),
    ("partial_last_layer", "yes", TypeError), ("onednn_linears", "yes", TypeError), ("device", [], ValueError),
])
def test_every_option_is_checked_when_set_and_keeps_its_value(name, value, error):
    runtime = Runtime()
    before = getattr(runtime, name)
    with pytest.raises(error):
        setattr(runtime, name, value)
    assert getattr(runtime, name) == before
    with pytest.raises(error):
        Runtime(**{name: value})


def test_a_models_batch_size_and_engine_options_are_its_runtimes(tiny_bert):
    model = pl.MaxP(tiny_bert, batch_size=4, **SETTINGS)
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        model.batch_size = 0
    assert model.batch_size == model.runtime.batch_size == 4
    model.model.batching = "input_order"  # the engine reads the reranker's runtime
    assert model.runtime.batching == "input_order"
    with pytest.raises(ValueError, match="unknown batching"):
        model.runtime.batching = "random"
    model.runtime.partial_last_layer = False
    assert not model.model.partial_last_layer


def test_the_default_batch_size_is_written_once():
    from pyterrier_longdoc._runtime_names import BATCH_SIZE
    from pyterrier_longdoc.cli import build_parser

    assert Runtime().batch_size == BATCH_SIZE
    assert build_parser().parse_args(["rerank", "--topics", "t", "--model", "m", "--output", "o"]).batch_size \
        == BATCH_SIZE


def test_auto_and_int8_resolve_on_the_device(monkeypatch):
    monkeypatch.setattr("pyterrier_longdoc._runtime.native_bf16_cpu", lambda: False)
    assert Runtime(dtype="auto", device="cpu").dtype_name() == "fp32"
    monkeypatch.setattr("pyterrier_longdoc._runtime.native_bf16_cpu", lambda: True)
    assert Runtime(dtype="auto", device="cpu").autocast_dtype() == torch.bfloat16
    assert Runtime(dtype=None, device="cpu").dtype_name() == "fp32"  # None stays fp32 on the CPU
    assert Runtime(dtype="int8", device="cpu").dtype_name() == "int8"
    with pytest.raises(ValueError, match="CPU only"):
        Runtime(dtype="int8", device="cuda").autocast_dtype()


def test_the_passage_stage_takes_the_same_dtypes_and_bf16_still_works_with_a_warning():
    from pyterrier_longdoc.training.passage import train_passage_ranker

    with pytest.raises(ValueError, match="unknown dtype"):
        train_passage_ranker("unused", [("q", "p", "n")], dtype="fp8")
    # bf16= warns and then goes on (here to the missing triples)
    with pytest.warns(DeprecationWarning, match="dtype="), pytest.raises(ValueError, match="no training triples"):
        train_passage_ranker("unused", None, bf16=False)
    with pytest.raises(TypeError, match="give dtype only"):
        train_passage_ranker("unused", None, bf16=True, dtype="fp32")


def test_the_passage_stage_and_the_models_share_one_default_precision(monkeypatch):
    """A recipe without dtype trains both stages alike: on a CPU with native bf16 the passage stage
    trained in bf16 ("auto") while the document stage's models ran in fp32 (None)."""
    import inspect

    from pyterrier_longdoc import _runtime
    from pyterrier_longdoc.training.passage import train_passage_ranker

    monkeypatch.setattr(_runtime, "native_bf16_cpu", lambda: True)
    default = inspect.signature(train_passage_ranker).parameters["dtype"].default
    assert default == Runtime().dtype
    assert Runtime(dtype=default, device="cpu").dtype_name() == "fp32"
    assert Runtime(dtype="auto", device="cpu").dtype_name() == "bf16"  # what the passage stage used to default to



def test_int8_says_that_it_reorders_rankings(tiny_bert):
    from pyterrier_longdoc import LongDocWarning

    model = pl.MaxP(tiny_bert, window=6, stride=3, dtype="int8")
    with pytest.warns(LongDocWarning, match=r"dtype='int8' re-orders rankings.*dtype='auto' never picks it"):
        model.score_texts(["red cat"], ["the red cat sat on the mat"])
    dynamic = torch.ao.nn.quantized.dynamic.Linear
    quantized = [m for m in model._replicas._copies[0].encoder.modules() if isinstance(m, dynamic)]
    assert quantized and all(m.weight().qscheme() == torch.per_channel_affine for m in quantized)

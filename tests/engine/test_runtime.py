"""The Runtime: the one home of device, dtype, batch size and the engine options, each checked
when it is set (in the constructor or later), and the dtype vocabulary every entry point shares."""
import warnings

import numpy as np
import pytest
import torch

import pyterrier_longdoc as pl
from pyterrier_longdoc import LongDocWarning
from pyterrier_longdoc.engine.runtime import Runtime

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
    from pyterrier_longdoc.engine import BATCH_SIZE
    from pyterrier_longdoc.cli import build_parser

    assert Runtime().batch_size == BATCH_SIZE
    assert build_parser().parse_args(["rerank", "--topics", "t", "--model", "m", "--output", "o"]).batch_size \
        == BATCH_SIZE


def test_auto_and_int8_resolve_on_the_device(monkeypatch):
    monkeypatch.setattr("pyterrier_longdoc.engine.runtime.native_bf16_cpu", lambda: False)
    assert Runtime(dtype="auto", device="cpu").dtype_name() == "fp32"
    monkeypatch.setattr("pyterrier_longdoc.engine.runtime.native_bf16_cpu", lambda: True)
    assert Runtime(dtype="auto", device="cpu").autocast_dtype() == torch.bfloat16
    assert Runtime(dtype=None, device="cpu").dtype_name() == "fp32"  # None stays fp32 on the CPU
    assert Runtime(dtype="int8", device="cpu").dtype_name() == "int8"
    with pytest.raises(ValueError, match="CPU only"):
        Runtime(dtype="int8", device="cpu").autocast_dtype(torch.device("cuda"))


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
    from pyterrier_longdoc.engine import runtime as _runtime
    from pyterrier_longdoc.training import PassageArguments

    monkeypatch.setattr(_runtime, "native_bf16_cpu", lambda: True)
    default = PassageArguments().dtype
    assert default == Runtime().dtype
    assert Runtime(dtype=default, device="cpu").dtype_name() == "fp32"
    assert Runtime(dtype="auto", device="cpu").dtype_name() == "bf16"  # what the passage stage used to default to



def test_int8_says_that_it_reorders_rankings(tiny_bert):
    from pyterrier_longdoc import LongDocWarning

    model = pl.MaxP(tiny_bert, window=6, stride=3, dtype="int8")
    with pytest.warns(LongDocWarning, match=r"dtype='int8' re-orders rankings.*dtype='auto' never picks it"):
        model.score_texts(["red cat"], ["the red cat sat on the mat"])
    dynamic = torch.ao.nn.quantized.dynamic.Linear
    quantized = [m for m in model._placement.replicas._copies[0].encoder.modules() if isinstance(m, dynamic)]
    assert quantized and all(m.weight().qscheme() == torch.per_channel_affine for m in quantized)


# one rule for every option: set on the model, on its runtime or by set_parameter, checked when set

VALID = {"batch_size": 4, "text_field": "body", "device": "cpu", "dtype": "fp32", "verbose": True,
         "warn_cropping": False, "attn_implementation": "eager", "max_batch_tokens": 4096,
         "batching": "input_order", "partial_last_layer": False, "onednn_linears": False}


def test_every_runtime_option_is_set_the_same_three_ways(tiny_bert):
    from pyterrier_longdoc.engine.runtime import OPTIONS

    assert set(VALID) == set(OPTIONS)
    for how in ("attribute", "runtime", "set_parameter"):
        model = pl.MaxP(tiny_bert, **SETTINGS)
        for name, value in VALID.items():
            if how == "attribute":
                setattr(model, name, value)
            elif how == "runtime":
                setattr(model.runtime, name, value)
            else:
                model.set_parameter(name, value)
            assert getattr(model.runtime, name) == model.get_parameter(name) == value, (how, name)
            if name not in ("device", "attn_implementation"):  # these read what the model runs on
                assert getattr(model, name) == value, (how, name)


@pytest.mark.parametrize("name, value, message", [
    ("dtype", "bf17", "unknown dtype 'bf17'"), ("batch_size", 0, "batch_size must be a positive integer"),
    ("batching", "random", "unknown batching 'random'"), ("device", "cuda", "device='cuda': no CUDA GPU"),
    ("onednn_linears", "yes", "onednn_linears must be True or False"),
    ("verbose", "yes", r"verbose must be True \(a progress bar\), False \(none\) or None .*, got 'yes'"),
])
def test_a_bad_value_fails_when_set_naming_the_option_and_changes_nothing(tiny_bert, monkeypatch, name, value,
                                                                           message):
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)  # no GPU, even on a machine with one
    model = pl.MaxP(tiny_bert, **SETTINGS)
    before = getattr(model.runtime, name)
    for set_it in (lambda: setattr(model, name, value), lambda: setattr(model.runtime, name, value),
                   lambda: model.set_parameter(name, value)):
        with pytest.raises((ValueError, TypeError), match=message):
            set_it()
        assert getattr(model.runtime, name) == before


def test_a_cuda_device_on_a_machine_without_one_fails_when_set(monkeypatch):
    # runtime.device = "cuda" was accepted on a CPU-only machine and failed at the next call
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    runtime = Runtime(device="cpu")
    with pytest.raises(ValueError, match=r"device='cuda': no CUDA GPU is available .*use device='cpu'"):
        runtime.device = "cuda"
    with pytest.raises(ValueError, match=r"device='cuda:1': no CUDA GPU"):
        runtime.device = ["cpu", "cuda:1"]
    assert runtime.device == "cpu"
    with pytest.raises(ValueError, match="device='cuda'"):
        Runtime(device="cuda")


def test_int8_on_a_gpu_fails_when_set_and_leaves_the_model_as_it_was(tiny_bert, monkeypatch):
    model = pl.MaxP(tiny_bert, **SETTINGS)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)  # a GPU as far as the device check sees
    model.runtime.device = "cuda"  # the runtime alone: the weights stay where they are until a call
    with pytest.raises(ValueError, match="dtype='int8' .*CPU only"):
        model.dtype = "int8"
    assert model.runtime.dtype is None


@pytest.mark.parametrize("given, message", [
    (dict(window=20), r"MaxP: window 20 is smaller than the default stride 100.*pass stride=\.\.\. as well \(at most 20\)"),
    (dict(stride=200), r"MaxP: stride 200 is larger than the default window 150.*pass window=\.\.\. as well"),
    (dict(window=20, stride=40), r"stride \(40\) > window \(20\)"),
])
def test_a_window_or_stride_error_names_the_setting_given(tiny_bert, given, message):
    # MaxP(p, window=20) failed with "stride (100) > window (20)", naming a stride the user never set
    with pytest.raises(ValueError, match=message):
        pl.MaxP(tiny_bert, **given)


def test_a_saved_models_stride_is_named_as_the_models():
    settings = {**pl.MaxP.defaults, "window": 20, "stride": 50}
    with pytest.raises(ValueError, match=r"MaxP: window 20 is smaller than the model's stride 50"):
        pl.MaxP.Settings.from_dict(settings, owner="MaxP", given={"window": 20})


def test_dtype_and_batch_size_are_set_on_the_model_alike_and_score_as_given_to_the_constructor(tiny_bert, tmp_path):
    # model.batch_size = 4 worked while model.dtype = "bf16" raised: both are runtime options, set one way
    warnings.simplefilter("ignore", LongDocWarning)  # bf16 is emulated (and says so) on a CPU without native bf16
    built = pl.MaxP(tiny_bert, **SETTINGS)
    built.save_pretrained(tmp_path / "m")
    model = pl.MaxP(str(tmp_path / "m"))
    model.dtype = "bf16"
    model.batch_size = 4
    assert (model.dtype, model.batch_size) == ("bf16", 4) == (model.runtime.dtype, model.runtime.batch_size)
    given = pl.MaxP(str(tmp_path / "m"), dtype="bf16", batch_size=4)
    texts = ["the red cat sat on the mat " * 3, "a dog"]
    assert np.array_equal(model.score_texts(["red cat"] * 2, texts), given.score_texts(["red cat"] * 2, texts))


def test_a_cuda_device_set_on_the_model_fails_at_once_and_keeps_the_device(tiny_bert, monkeypatch):
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    model = pl.MaxP(tiny_bert, **SETTINGS)
    with pytest.raises(ValueError, match=r"device='cuda': no CUDA GPU is available"):
        model.device = "cuda"
    assert model.runtime.device is None and model.device == torch.device("cpu")

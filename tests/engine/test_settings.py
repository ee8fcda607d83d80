"""A model's settings: one frozen dataclass per family, its constructor's signature, checked before
anything loads, shown by repr and changed by set_parameter through the same checks; and the runtime,
read at every use."""
import dataclasses
import inspect
import warnings

import pandas as pd
import pytest
import torch
from helpers.toy_training import new_model

import pyterrier_longdoc as pl
from pyterrier_longdoc.training import TrainingArguments

# models built over a plain encoder (the tiny random BERT) get a new head: expected here, not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::pyterrier_longdoc.UntrainedHeadWarning")


def test_the_signature_names_the_class_s_options_and_help_lists_every_setting_with_its_default():
    assert str(inspect.signature(pl.MaxP)) == "(model_name_or_path: 'Source', **options: 'Unpack[MaxPOptions]')"
    assert "    window (int | None): tokens per window; default ``150``." in pl.MaxP.__doc__
    assert "stride (int | None): tokens between the starts of two passages; default ``75``." in pl.ParadeAttn.__doc__
    assert "query_prefix (str): text before the query (RankLLaMA's template; '' for none); default ``'query: '``" \
        in pl.LLMMaxP.__doc__
    assert "model_name_or_path" in inspect.signature(pl.LLMMaxP).parameters  # LLMCrossEncoder's *args were not shown
    for name, cls in pl.registered_models().items():
        fields = {f.name for f in dataclasses.fields(cls.Settings) if not f.metadata["derived"]}
        assert all(f"    {field} (" in cls.__doc__ for field in fields), name
        assert all(doc.strip() for doc in cls.Settings.docs().values()), name
        assert cls.defaults == cls.Settings().to_dict(), name


def test_a_bad_setting_fails_before_the_encoder_loads(tiny_bert, monkeypatch):
    def load(*args, **kwargs):
        raise AssertionError("the encoder was loaded")

    monkeypatch.setattr("pyterrier_longdoc._build.load_pretrained", load)
    with pytest.raises(ValueError, match="window must be a positive integer"):
        pl.MaxP(tiny_bert, window=0)
    with pytest.raises(ValueError, match=r"stride \(20\) > window \(10\)"):
        pl.MaxP(tiny_bert, window=10, stride=20)
    with pytest.raises(ValueError, match="k must be a positive integer"):
        pl.KMaxAvgP(tiny_bert, k=0)
    with pytest.raises(ValueError, match="similarity must be one of"):
        pl.BiEncoderMaxP(tiny_bert, similarity="euclid")
    with pytest.raises(TypeError, match=r"MaxP got unknown settings \['windw'\]"):
        pl.MaxP(tiny_bert, windw=10)


def test_settings_are_frozen_and_typed(tiny_bert):
    model = new_model(tiny_bert)
    assert isinstance(model.typed_settings, pl.MaxP.Settings) and model.typed_settings.window == 12
    with pytest.raises(dataclasses.FrozenInstanceError):
        model.typed_settings.window = 30
    model.settings["window"] = 30  # a copy: the model is unchanged
    assert model.get_parameter("window") == 12


def test_set_parameter_goes_through_the_checks_and_repr_follows(tiny_bert, tmp_path):
    model = new_model(tiny_bert)
    with pytest.raises(ValueError, match="window must be a positive integer"):
        model.set_parameter("window", 0)
    model.set_parameter("window", 8)
    model.set_parameter("stride", 4)
    assert "window=8" in repr(model) and "stride=4" in repr(model)
    assert model.typed_settings.window == 8 and model.settings["stride"] == 4
    spans = model.chunk_spans("word " * 30)
    assert all(end - start <= 8 for start, end in spans) and spans[1][0] - spans[0][0] == 4
    model.save_pretrained(tmp_path / "saved")
    assert pl.MaxP.from_pretrained(tmp_path / "saved").settings["window"] == 8


def test_a_value_waits_for_the_setting_that_makes_it_valid(tiny_bert):
    model = new_model(tiny_bert)  # window 12, stride 6
    model.set_parameter("window", 4)  # stride 6 > 4 until stride follows, as pt.GridSearch sets them
    assert "window=4" in repr(model)
    model.set_parameter("stride", 2)
    assert model.typed_settings.window == 4 and model.typed_settings.stride == 2
    model.set_parameter("window", 1)
    with pytest.raises(ValueError, match="do not work together"):
        model.chunk_spans("a text")


def test_runtime_dtype_is_read_at_every_use(tiny_bert):
    inp = pd.DataFrame({"qid": ["q"] * 3, "query": ["red cat"] * 3, "docno": ["a", "b", "c"],
                        "text": ["the red cat sat on the mat " * k for k in (1, 3, 5)]})
    model = new_model(tiny_bert)
    fp32 = model(inp)["score"].to_numpy()
    assert model.autocast_dtype is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a CPU without native bf16 says so
        model.runtime.dtype = "bf16"
        assert model.autocast_dtype == torch.bfloat16
        changed = model(inp)["score"].to_numpy()
        built = new_model(tiny_bert, dtype="bf16")(inp)["score"].to_numpy()
    assert (changed != fp32).any()
    assert (changed == built).all()


def test_a_runtime_option_set_on_the_model_is_its_runtimes(tiny_bert):
    # model.dtype = ... raised an AttributeError pointing at model.runtime.dtype, where model.batch_size = 4 worked
    model = new_model(tiny_bert)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a CPU without native bf16 says so
        model.dtype = "bf16"
        assert model.dtype == model.runtime.dtype == "bf16" and model.autocast_dtype == torch.bfloat16
        model.device = "cpu"
    assert model.runtime.device == "cpu" and model.device == torch.device("cpu")
    model.batch_size = 4
    assert model.runtime.batch_size == 4


def test_explicit_args_win_over_fit_options_for_the_fields_they_set(tiny_bert, monkeypatch):
    seen = {}

    def fake_fit(reranker, topics, qrels, candidates, args=None, text=None, **options):
        seen["args"] = (args or TrainingArguments()).replace(**options)
        seen["text"] = text
        return pd.DataFrame({"loss": [0.0]})

    monkeypatch.setattr("pyterrier_longdoc.training.fit", fake_fit)
    text = {"d": "the red cat"}
    model = new_model(tiny_bert, fit_options={"lr": 1e-4, "epochs": 3, "text": text})
    topics = pd.DataFrame({"qid": ["q"], "query": ["red cat"]})
    qrels = pd.DataFrame({"qid": ["q"], "docno": ["d"], "label": [1]})
    candidates = pd.DataFrame({"qid": ["q"], "docno": ["d"], "score": [1.0], "rank": [0]})
    model.fit(topics, qrels, candidates, args=TrainingArguments(lr=3e-5))
    # args win for what its caller set; the stored options still hold the rest (they were dropped: epochs 1)
    assert seen["args"].lr == 3e-5 and seen["args"].epochs == 3
    assert seen["text"] is text  # the stored data options still apply
    model.fit(topics, qrels, candidates, args=TrainingArguments(lr=3e-5), epochs=2)  # a call's own keyword wins
    assert seen["args"].lr == 3e-5 and seen["args"].epochs == 2
    model.fit(topics, qrels, candidates)  # without args, the stored options apply
    assert seen["args"].lr == 1e-4 and seen["args"].epochs == 3


# --- chunking held once: the engine reads with its Settings' chunking; set_parameter tunes every setting it can ---

def test_chunking_fields_are_declared_once_for_the_settings_and_the_engine():
    # Chunking declared the 11 chunking fields and ModelSettings declared them again (types, docs), synchronised
    # by hand: now both are ChunkingSettings, whose fields are the one declaration
    import ast
    import inspect

    from pyterrier_longdoc.engine import settings as settings_module
    from pyterrier_longdoc.engine.chunking import CHUNKING_SETTINGS, Chunking, ChunkingSettings
    from pyterrier_longdoc.engine.settings import ModelSettings
    from pyterrier_longdoc.models import MaxP

    declared = dataclasses.fields(ChunkingSettings)
    assert dataclasses.fields(Chunking) == declared
    assert dataclasses.fields(ModelSettings)[:len(declared)] == declared
    assert issubclass(MaxP.Settings, ChunkingSettings) and not issubclass(ModelSettings, Chunking)
    assert all(f.metadata["doc"] for f in declared) and CHUNKING_SETTINGS == tuple(f.name for f in declared)
    assert MaxP.Settings.docs()["max_doc_tokens"] == declared[CHUNKING_SETTINGS.index("max_doc_tokens")].metadata["doc"]
    body = ast.parse(inspect.getsource(settings_module)).body
    model_settings = next(n for n in body if isinstance(n, ast.ClassDef) and n.name == "ModelSettings")
    redeclared = [n.target.id for n in model_settings.body if isinstance(n, ast.AnnAssign)
                  and n.target.id in CHUNKING_SETTINGS]
    assert not redeclared, redeclared


def test_chunking_defaults_have_one_home_and_the_engine_reads_the_settings_chunking(tiny_bert):
    from pyterrier_longdoc.engine.chunking import CHUNKING_DEFAULTS, CHUNKING_SETTINGS, Chunking
    from pyterrier_longdoc.engine.settings import ModelSettings

    plain = ModelSettings()
    assert {name: getattr(plain, name) for name in CHUNKING_SETTINGS} == CHUNKING_DEFAULTS == dataclasses.asdict(Chunking())
    model = new_model(tiny_bert)
    model.set_parameter("window", 8)
    model.set_parameter("stride", 4)
    assert model.model.chunking == model.typed_settings.chunking()


def test_set_parameter_errors_name_the_class_settings_and_suggest_the_name(tiny_bert):
    model = new_model(tiny_bert)
    with pytest.raises(ValueError, match=r"MaxPSettings: window must be a positive integer"):
        model.set_parameter("window", 0)
    with pytest.raises(ValueError, match=r"no parameter 'windw' \(did you mean 'window'\?\)"):
        model.set_parameter("windw", 8)
    assert model.get_parameter("window") == 12


def test_set_parameter_tunes_k_as_the_constructor_sets_it(tiny_bert, tmp_path):
    model = new_model(tiny_bert, pl.KMaxAvgP)
    model.save_pretrained(tmp_path / "m")
    texts = ["the red cat sat on the mat " * 4, "a dog ran " * 6]
    model.set_parameter("k", 1)
    assert model.get_parameter("k") == 1 and "k=1" in repr(model) and model.model.aggregator.k == 1
    built = pl.KMaxAvgP(str(tmp_path / "m"), k=1)
    assert torch.allclose(torch.as_tensor(model.score_texts(["red cat"] * 2, texts)),
                          torch.as_tensor(built.score_texts(["red cat"] * 2, texts)), atol=1e-6)
    with pytest.raises(ValueError, match="KMaxAvgPSettings: k must be a positive integer"):
        model.set_parameter("k", 0)


def test_set_parameter_dtype_scores_as_the_constructors_dtype(tiny_bert, tmp_path):
    warnings.simplefilter("ignore", pl.LongDocWarning)  # bf16 is emulated (and says so) on a CPU without native bf16
    new_model(tiny_bert).save_pretrained(tmp_path / "m")
    model = pl.MaxP(str(tmp_path / "m"))
    model.set_parameter("dtype", "bf16")
    texts = ["the red cat sat on the mat " * 4]
    assert model.score_texts(["red cat"], texts) == pl.MaxP(str(tmp_path / "m"), dtype="bf16").score_texts(
        ["red cat"], texts)


@pytest.mark.parametrize("cls, name, value, message", [
    (pl.ParadeCNN, "layers", 2, r"ParadeCNN's layers=4 shapes its head's weights .*cannot change in place; build one "
                                r"model per value instead, ParadeCNN\(source, layers=\.\.\.\)"),
    (pl.ParadeTransformer, "layers", 1, r"ParadeTransformer's layers=2 shapes its head's weights"),
    (pl.MaxP, "gradient_checkpointing", True, r"gradient_checkpointing=False changed the encoder when the model was "
                                              r"built"),
])
def test_set_parameter_refuses_what_changes_the_weights_saying_what_to_do(tiny_bert, cls, name, value, message):
    model = new_model(tiny_bert, cls)
    with pytest.raises(ValueError, match=message):
        model.set_parameter(name, value)
    assert model.get_parameter(name) == cls.defaults[name]
    assert name not in model.tunable_parameters()


def test_set_parameter_prefixes_follow_into_the_layout(tiny_bert):
    # the layout (prefix tokens) stayed the old one when set_parameter changed doc_prefix
    model = new_model(tiny_bert)
    model.set_parameter("doc_prefix", "document: ")
    assert model.model.layout == new_model(tiny_bert, doc_prefix="document: ").model.layout
    assert model.model.layout != new_model(tiny_bert).model.layout


def test_a_biencoder_keeps_its_query_room_after_set_parameter(tiny_bert):
    # settling set_parameter copied the settings' max_length over the bi-encoder's windows' (max_length + queries)
    model = pl.BiEncoderMaxP(tiny_bert, window=6, stride=3, max_length=32, max_query_tokens=8)
    before = model.model.chunking
    model.set_parameter("stride", 2)
    assert model.model.chunking == dataclasses.replace(before, stride=2)


def test_a_setting_assigned_as_an_attribute_is_set_parameter(tiny_bert, tmp_path):
    # model.window = 20 was kept as an attribute nothing read: get_parameter, settings, repr and the scores
    # stayed at the old window
    model = new_model(tiny_bert)  # window 12, stride 6
    model.window = 8
    model.stride = 4
    assert model.window == 8 and model.get_parameter("window") == 8 and model.settings["window"] == 8
    assert "window=8, stride=4" in repr(model) and "window" not in vars(model)
    spans = model.chunk_spans("word " * 30)
    assert all(end - start <= 8 for start, end in spans) and spans[1][0] - spans[0][0] == 4
    with pytest.raises(ValueError, match="window must be a positive integer"):
        model.window = 0
    assert model.window == 8
    model.save_pretrained(tmp_path / "saved")
    assert pl.MaxP.from_pretrained(tmp_path / "saved").settings["window"] == 8


def test_a_misspelt_attribute_is_an_error_with_the_close_name(tiny_bert):
    model = new_model(tiny_bert)
    with pytest.raises(AttributeError, match=r"no parameter 'windw' \(did you mean 'window'\?\)"):
        model.windw = 3
    with pytest.raises(AttributeError, match=r"no parameter 'batchsize' \(did you mean 'batch_size'\?\)"):
        model.batchsize = 3
    assert not hasattr(model, "windw") and model.window == 12
    model.history = None  # what the model holds stays assignable
    with pytest.raises(AttributeError):
        model.windw  # noqa: B018


@pytest.mark.parametrize("how", ["constructor", "attribute", "set_parameter"])
def test_repr_settings_and_saves_agree_for_a_saved_folder_set_back_to_the_default(tiny_bert, tmp_path, how):
    # a folder saved with window 240, then given window=150 (MaxP's default), printed as MaxP(path, stride=75) and
    # was rebuilt by that repr with window 240: grid_scan labelled its rows with the wrong window
    pl.MaxP(tiny_bert, window=240, stride=75, max_query_tokens=8).save_pretrained(tmp_path / "w240")
    folder = str(tmp_path / "w240")
    if how == "constructor":
        model = pl.MaxP(folder, window=150)
    else:
        model = pl.MaxP(folder)
        model.set_parameter("window", 150) if how == "set_parameter" else setattr(model, "window", 150)
    assert model.get_parameter("window") == 150 and model.settings["window"] == 150
    assert repr(model) == f"MaxP({folder!r}, window=150, stride=75, max_query_tokens=8)"
    rebuilt = eval(repr(model), {"MaxP": pl.MaxP})
    assert rebuilt.settings == model.settings
    model.save_pretrained(tmp_path / "again")
    assert pl.MaxP(str(tmp_path / "again")).settings == model.settings

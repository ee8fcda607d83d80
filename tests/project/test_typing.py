"""Constructors a type checker reads from the real modules (no stubs): every public class shows its real keywords
(``inspect``, the API reference); each model class's ``__init__`` takes ``**options: Unpack[<its Options>]`` (PEP 692),
a TypedDict written beside its ``Settings`` whose keys and types are the settings' fields, the runtime options and
how it loads (no drift); ``from_pretrained`` and ``from_hf`` take the class's constructor keywords (PEP 612); and
``mypy`` (pyproject's ``[tool.mypy]``) finds no error in the package, accepts a typed use of every family and flags a
misspelt setting or a value of the wrong type."""
import importlib
import inspect
import re
import tomllib
import typing
from pathlib import Path

import pytest
import typing_extensions

import pyterrier_longdoc as pl
from pyterrier_longdoc._reranker import LOAD_DEFAULTS
from pyterrier_longdoc.engine.runtime import CONSTRUCTOR_OPTIONS, Runtime

ROOT = Path(__file__).resolve().parents[2]
VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
WRONG_USAGE = ("from pyterrier_longdoc import LongDocReranker, LLMMaxP, MaxP, ParadeCNN\n"
               "MaxP('model', windw=150)\n"
               "MaxP('model', window='150')\n"
               "ParadeCNN.from_pretrained('model', layer=3)\n"
               "MaxP.from_pretrained('model', k=3)\n"
               "LLMMaxP.from_hf('owner/model', lora='r=8')\n"
               "LongDocReranker.from_pretrained('model', batch_size='8')\n")


def reference_classes() -> dict[str, type]:
    """Every class the API reference documents (docs/api.md): its autoclass lines, and the classes of
    its automodule lines (their public names, or those it lists)."""
    text = (ROOT / "docs" / "api.md").read_text()
    classes = {}
    for name in re.findall(r"autoclass:: (\S+)", text):
        module, _, attribute = name.rpartition(".")
        classes[name] = getattr(importlib.import_module(module), attribute)
    for name, members in re.findall(r"automodule:: (\S+)\n(?:\s+:members:(.*)\n)?", text):
        module = importlib.import_module(name)
        names = [m.strip() for m in members.split(",") if m.strip()] or getattr(module, "__all__", dir(module))
        classes.update({f"{name}.{n}": getattr(module, n) for n in names
                        if not n.startswith("_") and inspect.isclass(getattr(module, n))})
    return classes


def hidden(signature: inspect.Signature) -> list[str]:
    """The ``*args``/``**kwargs`` that hide keywords: not a TypedDict's (PEP 692) or a constructor's (PEP 612)."""
    return [str(p) for p in signature.parameters.values() if p.kind in VARIADIC
            and not str(p.annotation).startswith(("Unpack[", "P."))]


def test_every_documented_class_shows_its_real_constructor():
    classes = reference_classes()
    assert {"pyterrier_longdoc.LongDoc", "pyterrier_longdoc.RankGPT", "pyterrier_longdoc.data.bm25.BM25",
            "pyterrier_longdoc.training.ListwiseSoftmaxLoss", "pyterrier_longdoc.scale_out.RayScorer"} <= set(classes)
    found = {}
    for name, cls in classes.items():
        if issubclass(cls, BaseException) or getattr(cls, "_is_protocol", False):
            continue  # a warning's (message) is Python's own; a Protocol is not built
        entry_points = [cls] + [getattr(cls, n) for n in ("from_pretrained", "from_hf") if hasattr(cls, n)]
        for entry in entry_points:
            if hidden(inspect.signature(entry)):
                found[f"{name} {getattr(entry, '__name__', '')}"] = hidden(inspect.signature(entry))
    assert not found


def options_of(cls: type) -> type:
    """The TypedDict of a model class's ``**options`` (``Unpack[MaxPOptions]``: ``MaxPOptions``)."""
    unpacked = typing.get_type_hints(cls.__init__)["options"]
    assert typing_extensions.get_origin(unpacked) is typing_extensions.Unpack, unpacked
    options, = typing_extensions.get_args(unpacked)
    return options


@pytest.mark.parametrize("name", ["LongDocReranker", *pl.registered_models()])
def test_a_model_class_s_typed_keywords_are_its_settings_and_the_runtime_options(name):
    cls = pl.LongDocReranker if name == "LongDocReranker" else pl.model_class(name)
    assert "__init__" in vars(cls), f"{cls.__name__} writes no __init__ of its own: its keywords are not typed"
    options = options_of(cls)
    settings = {p.name: p for p in cls.Settings.parameters()}  # derived settings (never given) left out
    declared = typing.get_type_hints(options)
    expected = {**{n: t for n, t in typing.get_type_hints(Runtime).items() if n in CONSTRUCTOR_OPTIONS},
                **{n: declared.get(n) for n in LOAD_DEFAULTS},  # how it loads: declared there alone
                **{n: t for n, t in typing.get_type_hints(cls.Settings).items() if n in settings}}
    assert declared == expected  # the same names and types: Settings stays the one source, the TypedDict checked
    assert options.__total__ is False  # every keyword optional
    signature = inspect.signature(cls)  # what help() and IDEs show: the source, then the class's Options
    assert [str(p) for p in signature.parameters.values()] == [
        "model_name_or_path: 'Source'", f"**options: 'Unpack[{options.__name__}]'"]
    for entry in ("from_pretrained", "from_hf"):  # read the class's constructor's keywords
        assert str(inspect.signature(getattr(cls, entry)).parameters["options"]) == "**options: 'P.kwargs'"
    unwrapped = " ".join(cls.__doc__.split("\n        "))
    for setting, parameter in settings.items():  # help() and the reference: each setting's type, meaning, default
        doc = cls.Settings.docs()[setting].rstrip(".")
        line = f"    {setting} ({parameter.annotation}): {doc}; default ``{parameter.default!r}``."
        assert line in unwrapped, setting


@pytest.fixture(scope="module")
def mypy_run(tmp_path_factory):
    """One run of mypy with pyproject's configuration over the package, the typed use and a wrong use (its cache
    under .mypy_cache, ignored by git: a few seconds once warm, under a minute cold)."""
    api = pytest.importorskip("mypy.api", reason="mypy is in the dev extra")
    wrong = tmp_path_factory.mktemp("mypy") / "wrong_usage.py"
    wrong.write_text(WRONG_USAGE)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)
        out, err, status = api.run(["--config-file", "pyproject.toml", "--no-error-summary",
                                    "pyterrier_longdoc", "tests/project/typed_usage.py", str(wrong)])
    return out + err, status


def errors(report: str, path: str) -> list[str]:
    return [line for line in report.splitlines() if line.startswith(path) and ": error:" in line]


def test_mypy_finds_no_error_in_the_package(mypy_run):
    report, _ = mypy_run
    assert not errors(report, "pyterrier_longdoc"), report


def test_mypy_accepts_every_family_built_with_its_settings_and_loaded_with_overrides(mypy_run):
    report, _ = mypy_run
    assert not errors(report, "tests/project/typed_usage.py"), report


def test_mypy_flags_a_misspelt_setting_and_a_value_of_the_wrong_type(mypy_run):
    report, status = mypy_run
    assert status == 1
    flagged = {int(line) for line in re.findall(r"wrong_usage\.py:(\d+): error", report)}
    assert flagged == {2, 3, 4, 5, 6, 7}, report
    assert 'Unexpected keyword argument "windw" for "MaxP"; did you mean "window"?' in report
    assert 'Argument "window" to "MaxP" has incompatible type "str"; expected "int | None"' in report
    assert 'Unexpected keyword argument "layer" for "from_pretrained"' in report


def test_mypy_checks_the_whole_package_with_no_module_exempt():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert config["files"] == ["pyterrier_longdoc"] and not config.get("exclude")
    assert not [o for o in config.get("overrides", []) if o.get("ignore_errors")
                or any(m.startswith("pyterrier_longdoc") for m in o["module"])]

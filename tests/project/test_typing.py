"""Constructors a type checker can read: every public class shows its real keywords (``inspect``, the API
reference), the model classes' ``__init__``, ``from_pretrained`` and ``from_hf`` list their settings (no
``**settings``, ``*args, **kwargs`` or ``**overrides``), the committed stubs that give them to type
checkers are what ``scripts/generate_stubs.py`` writes, and mypy accepts a typed use of every family
and flags a misspelt setting or a value of the wrong type."""
import ast
import importlib
import importlib.util
import inspect
import re
import sys
from pathlib import Path

import pytest

import pyterrier_longdoc as pl

ROOT = Path(__file__).resolve().parents[2]
VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
ENTRY_POINTS = ("__init__", "from_pretrained", "from_hf")
# the package's modules followed silently (the stubs are read), third-party ones skipped: a few seconds
MYPY_CONFIG = """[mypy]
follow_imports = skip
ignore_missing_imports = True
[mypy-pyterrier_longdoc,pyterrier_longdoc.*]
follow_imports = silent
"""


def generator():
    spec = importlib.util.spec_from_file_location("generate_stubs", ROOT / "scripts" / "generate_stubs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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


def variadic(signature: inspect.Signature) -> list[str]:
    return [str(p) for p in signature.parameters.values() if p.kind in VARIADIC]


def test_every_documented_class_shows_its_real_constructor():
    classes = reference_classes()
    assert {"pyterrier_longdoc.LongDoc", "pyterrier_longdoc.RankGPT", "pyterrier_longdoc.data.bm25.BM25",
            "pyterrier_longdoc.training.ListwiseSoftmaxLoss", "pyterrier_longdoc.scale_out.RayScorer"} <= set(classes)
    hidden = {}
    for name, cls in classes.items():
        if issubclass(cls, BaseException) or getattr(cls, "_is_protocol", False):
            continue  # a warning's (message) is Python's own; a Protocol is not built
        entry_points = [cls] + [getattr(cls, n) for n in ("from_pretrained", "from_hf") if hasattr(cls, n)]
        for entry in entry_points:
            if variadic(inspect.signature(entry)):
                hidden[f"{name} {getattr(entry, '__name__', '')}"] = variadic(inspect.signature(entry))
    assert not hidden


@pytest.mark.parametrize("name", ["LongDocReranker", *pl.registered_models()])
def test_a_model_class_lists_its_settings_at_every_entry_point(name):
    cls = pl.LongDocReranker if name == "LongDocReranker" else pl.model_class(name)
    settings = [p.name for p in cls.Settings.parameters()]
    for entry in ENTRY_POINTS:
        signature = inspect.signature(getattr(cls, entry))
        assert not variadic(signature), (entry, variadic(signature))
        keywords = [p.name for p in signature.parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY]
        assert keywords[-len(settings):] == settings and {"batch_size", "device", "dtype"} <= set(keywords), entry
    assert list(inspect.signature(cls).parameters) == list(inspect.signature(cls.__init__).parameters)[1:]
    docs = cls.Settings.docs()
    assert all(f"    {setting}: {docs[setting]}" in cls.__doc__ for setting in settings)  # help() and the reference


@pytest.mark.parametrize("name", ["LongDocReranker", *pl.registered_models()])
def test_the_stubs_give_a_type_checker_the_same_keywords(name):
    cls = pl.LongDocReranker if name == "LongDocReranker" else pl.model_class(name)
    stub = Path(sys.modules[cls.__module__].__file__).with_suffix(".pyi")
    assert stub.exists(), f"{cls.__module__} has no stub: add it to scripts/generate_stubs.py's MODULES"
    node, = [n for n in ast.walk(ast.parse(stub.read_text())) if isinstance(n, ast.ClassDef) and n.name == cls.__name__]
    functions = {f.name: f for f in node.body if isinstance(f, ast.FunctionDef)}
    for entry in ENTRY_POINTS:
        arguments = functions[entry].args
        assert arguments.vararg is None and arguments.kwarg is None, entry
        stubbed = [a.arg for a in arguments.args[1:] + arguments.kwonlyargs]
        assert stubbed == list(inspect.signature(getattr(cls, entry)).parameters)[entry == "__init__":], entry


def test_the_committed_stubs_are_what_the_generator_writes():
    stale = [str(path.relative_to(ROOT)) for path, text in generator().stubs().items()
             if not path.exists() or path.read_text(encoding="utf-8") != text]
    assert not stale, f"run `python scripts/generate_stubs.py` and commit: {stale} differ from the Settings"
    registered = {sys.modules[pl.model_class(n).__module__].__name__ for n in pl.registered_models()}
    assert {f"pyterrier_longdoc.{m}" for m in generator().MODULES} >= registered | {"pyterrier_longdoc._reranker"}


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory):
    """One mypy cache for the module's runs: the package's stubs are analysed once, not once per test."""
    return tmp_path_factory.mktemp("mypy-cache")


def mypy(tmp_path, cache, *files) -> tuple[str, int]:
    api = pytest.importorskip("mypy.api", reason="mypy is in the dev extra")
    config = tmp_path / "mypy.ini"
    config.write_text(MYPY_CONFIG)
    out, err, status = api.run(["--config-file", str(config), "--cache-dir", str(cache),
                                "--no-error-summary", "--show-error-codes", *map(str, files)])
    return out + err, status


def test_mypy_accepts_every_family_built_with_its_settings_and_loaded_with_overrides(tmp_path, mypy_cache,
                                                                                     monkeypatch):
    monkeypatch.chdir(ROOT)
    report, status = mypy(tmp_path, mypy_cache, Path("tests/project/typed_usage.py"))
    assert status == 0 and not report.strip(), report


def test_mypy_flags_a_misspelt_setting_and_a_value_of_the_wrong_type(tmp_path, mypy_cache, monkeypatch):
    monkeypatch.chdir(ROOT)
    usage = tmp_path / "wrong_usage.py"
    usage.write_text("from pyterrier_longdoc import LongDocReranker, LLMMaxP, MaxP, ParadeCNN\n"
                     "MaxP('model', windw=150)\n"
                     "MaxP('model', window='150')\n"
                     "ParadeCNN.from_pretrained('model', layer=3)\n"
                     "MaxP.from_pretrained('model', k=3)\n"
                     "LLMMaxP.from_hf('owner/model', lora='r=8')\n"
                     "LongDocReranker.from_pretrained('model', batch_size='8')\n")
    report, status = mypy(tmp_path, mypy_cache, usage)
    assert status == 1
    flagged = {int(line) for line in re.findall(r"wrong_usage\.py:(\d+): error", report)}
    assert flagged == {2, 3, 4, 5, 6, 7}, report
    assert 'Unexpected keyword argument "windw" for "MaxP"; did you mean "window"?' in report
    assert 'Argument "window" to "MaxP" has incompatible type "str"; expected "int | None"' in report


# the modules mypy checks clean, the package's imports followed silently: a ratchet, each module added stays clean
# (the reranker's collaborators, typed since they stopped taking the reranker as an untyped argument)
MYPY_CLEAN = ["_parameters", "_scoring", "_pairs", "_hub", "_explain", "_card", "_registry", "_placement"]


def test_mypy_finds_no_error_in_the_reranker_s_collaborators(tmp_path, mypy_cache, monkeypatch):
    monkeypatch.chdir(ROOT)
    report, status = mypy(tmp_path, mypy_cache, *(Path("pyterrier_longdoc") / f"{m}.py" for m in MYPY_CLEAN))
    assert status == 0 and not report.strip(), report

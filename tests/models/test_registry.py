"""The model registry is a declared table (short name -> "module:Class") resolved on first use:
every name resolves to the class that names itself so, every public model class has its row, and
the engine loads without the model classes (nothing depends on importing ``models`` first)."""
import subprocess
import sys

import pytest

import pyterrier_longdoc as pl
from pyterrier_longdoc import _registry
from pyterrier_longdoc._reranker import LongDocReranker


def test_every_registered_name_resolves_to_the_class_that_names_itself():
    from pyterrier_longdoc import models

    for name, where in _registry.MODELS.items():
        cls = pl.model_class(name)
        assert cls.name == name and f"{cls.__module__}:{cls.__qualname__}" == where
    assert {getattr(models, c).name for c in models.__all__} == set(_registry.MODELS)
    assert list(pl.registered_models()) == sorted(_registry.MODELS)
    with pytest.raises(ValueError, match="unknown model 'nope'; known models: avgp, .*maxp"):
        pl.model_class("nope")


def test_the_engine_loads_without_the_model_classes_and_a_name_loads_its_family():
    code = """if True:
        import sys
        import pyterrier_longdoc._reranker, pyterrier_longdoc._build, pyterrier_longdoc._registry as registry
        import pyterrier_longdoc.training, pyterrier_longdoc.training.best, pyterrier_longdoc.cli
        assert not [m for m in sys.modules if m.startswith("pyterrier_longdoc.models")], "models imported"
        assert "maxp" in registry.known_names()
        assert not [m for m in sys.modules if m.startswith("pyterrier_longdoc.models")], "known_names imported"
        assert registry.model_class("parade_attn").__name__ == "ParadeAttn"
        assert "pyterrier_longdoc.models.parade" in sys.modules
        print("ok")
    """
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-3000:]


def test_a_class_of_the_package_must_have_its_row(monkeypatch):
    monkeypatch.setattr(_registry, "_DEFINED_ELSEWHERE", {})
    with pytest.raises(ValueError, match="'newp' of pyterrier_longdoc.models.fake:NewP is not declared .*MODELS"):
        type("NewP", (LongDocReranker,), {"name": "newp", "__module__": "pyterrier_longdoc.models.fake"})


def test_a_class_defined_elsewhere_registers_under_its_own_name(monkeypatch):
    monkeypatch.setattr(_registry, "_DEFINED_ELSEWHERE", {})
    mine = type("MineP", (pl.MaxP,), {"name": "minep"})
    assert pl.model_class("minep") is mine and "minep" in pl.registered_models()
    with pytest.raises(ValueError, match="model name 'maxp' is taken by"):
        type("OtherMaxP", (pl.MaxP,), {"name": "maxp"})

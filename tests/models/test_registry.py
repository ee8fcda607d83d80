"""The model registry: each model class registers the short name it declares (once, on the class); the
packages that define model classes are entry points (``pyterrier_longdoc.models``), loaded when a name is not
registered yet, so nothing below the model classes imports them by a computed name."""
import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import pyterrier_longdoc as pl
from pyterrier_longdoc import _registry

ROOT = Path(__file__).resolve().parents[2]


def test_every_public_model_class_is_registered_under_the_name_it_declares():
    from pyterrier_longdoc import models

    classes = [getattr(models, c) for c in models.__all__ if c not in ("LongDocReranker", "model_class",
                                                                          "registered_models")]
    assert {cls.name: cls for cls in classes} == pl.registered_models()
    assert all(pl.model_class(cls.name) is cls for cls in classes)
    assert list(pl.registered_models()) == sorted(pl.registered_models())
    with pytest.raises(ValueError, match="unknown model 'nope'; known models: avgp, .*maxp"):
        pl.model_class("nope")


def test_the_package_declares_its_model_classes_as_an_entry_point():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["entry-points"][_registry.ENTRY_POINT_GROUP] == {
        "pyterrier_longdoc": "pyterrier_longdoc.models"}


def test_the_engine_loads_without_the_model_classes_and_a_name_loads_them_through_the_entry_point(tmp_path):
    # the registry imported `models` through importlib (an upward import the floors could not see); now a name not
    # registered yet loads the packages declared as entry points, as an installed package declares them
    info = tmp_path / "pyterrier_longdoc_models_plugin-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pyterrier-longdoc-models-plugin\nVersion: 0\n")
    (info / "entry_points.txt").write_text(f"[{_registry.ENTRY_POINT_GROUP}]\n"
                                           "pyterrier_longdoc = pyterrier_longdoc.models\n")
    code = """if True:
        import sys
        import pyterrier_longdoc._reranker, pyterrier_longdoc._build, pyterrier_longdoc._registry as registry
        import pyterrier_longdoc.training, pyterrier_longdoc.training.best, pyterrier_longdoc.cli
        assert not [m for m in sys.modules if m.startswith("pyterrier_longdoc.models")], "models imported"
        assert registry.model_class("parade_attn").__name__ == "ParadeAttn"
        assert "pyterrier_longdoc.models.parade" in sys.modules
        print("ok")
    """
    path = [str(tmp_path), str(ROOT), *sys.path]
    run = subprocess.run([sys.executable, "-c", f"import sys; sys.path[:0] = {path!r}\n{code}"], capture_output=True,
                         text=True, cwd=tmp_path)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-3000:]


def test_a_class_registers_under_its_own_name_and_a_taken_name_is_an_error(monkeypatch):
    monkeypatch.setattr(_registry, "_REGISTERED", dict(_registry._REGISTERED))
    mine = type("MineP", (pl.MaxP,), {"name": "minep"})
    assert pl.model_class("minep") is mine and "minep" in pl.registered_models()
    with pytest.raises(ValueError, match="model name 'maxp' is taken by pyterrier_longdoc.models.score.MaxP"):
        type("OtherMaxP", (pl.MaxP,), {"name": "maxp"})
    unnamed = type("Tuned", (pl.MaxP,), {})  # a subclass without a name of its own is not a model of its own
    assert unnamed not in pl.registered_models().values()


def test_a_short_name_is_declared_once_on_its_class():
    # each name was written twice: the registry's table ("maxp": "pyterrier_longdoc.models.score:MaxP") and the class
    package = ROOT / "pyterrier_longdoc"
    for name in pl.registered_models():
        declared = [str(p.relative_to(package)) for p in package.rglob("*.py") if f'name = "{name}"' in p.read_text()]
        assert len(declared) == 1 and declared[0].startswith("models/"), (name, declared)
    # and no table of them in the registry (the old MODELS dict literal)
    tables = [n for n in ast.walk(ast.parse((package / "_registry.py").read_text())) if isinstance(n, ast.Dict) and n.keys]
    assert not tables

"""The package's imports run one way, floor by floor: the engine (leaves, config and runtime,
chunking, batching, heads, the model, training, the reranker, the model classes), then the
modules above it (wrapping, text, collections, diagnostics, evaluation, listwise ranking), then
the demo and the command line. Nothing imports the package's __init__, and the modules above the
engine use no private name of it."""
import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "pyterrier_longdoc"
# lower floors never import higher ones; every module of the package has a floor
FLOORS = {
    "_version": 0, "packaged": 0, "_warn": 0,
    # the fusion with the first stage (pandas and PyTerrier only): the reranker saves it, the recipe chooses it
    "fusion": 0,
    # the heads (nn.Modules over per-chunk features): below the engine, which builds on them
    "aggregators": 0,
    # the engine (engine/): its light __init__ (kernel caches, the runtime's vocabulary), then its modules
    "engine": 0, "engine/text": 0, "engine/files": 0, "engine/frames": 0, "engine/rng": 0, "engine/lora": 0,
    "engine/embedder": 0, "engine/fast_paths": 0, "engine/config": 1, "engine/runtime": 1, "engine/chunking": 2,
    "engine/tokenization": 2, "engine/backbone": 2, "engine/batching": 3, "engine/settings": 3,
    "engine/weights": 5, "engine/model": 5, "engine/biencoder": 5, "engine/replicas": 6,
    "_pairs": 2, "_card": 1, "_registry": 5,
    # building a model, and what the reranker delegates to: below training, which builds (BeST's as_maxp) but never
    # imports the reranker
    "_build": 6, "_explain": 6, "_hub": 6, "_scoring": 6, "_parameters": 6, "_placement": 6,
    "training": 7, "_reranker": 8,
    "models": 9,
    # above the engine
    "wrap": 10, "scale_out": 10, "data": 10, "diagnostics": 10, "evaluation": 10, "listwise": 10, "pyserini": 10,
    # the applications: the demo imports models, diagnostics and evaluation
    "demo": 11, "reproduce": 12, "cli": 13,
    # the shape every collection has and its text loader (pandas and PyTerrier only), which diagnostics build on
    "data/documents": 1, "data/collection": 2,
    # token offsets and the FarRelevant builder (on the collection's shape): below diagnostics, which shows them,
    # and below the shipped prose, built with them
    "data/_tokens": 1, "data/far_relevant": 3,
    # the shipped prose as a FarRelevant collection: built from a data module (the dictionary task) and the
    # FarRelevant builder, so above both, with the demo
    "data/prose": 11,
}
ENGINE = 9  # floors up to this one: engine/ and what is built on it (heads, training, the reranker, the models)


def imported_modules(path: Path) -> set[str]:
    """The package modules a file imports, as their names in FLOORS (``engine/model``, ``models``)."""
    names = set()
    depth = len(path.relative_to(PACKAGE).parts) - 1
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level == 0:
                if node.module and node.module.startswith("pyterrier_longdoc"):
                    parts = node.module.split(".")[1:]
                else:
                    continue
            else:
                base = list(path.relative_to(PACKAGE).parts[:-1])[:max(0, depth - (node.level - 1))]
                parts = base + (node.module.split(".") if node.module else [])
            if not parts:  # "from . import x" at the top: module x, or a name of the package __init__
                names.update(alias.name if (PACKAGE / alias.name).is_dir() or (PACKAGE / f"{alias.name}.py").is_file()
                             else f"__init__:{alias.name}" for alias in node.names)
            else:
                names.add(unit(parts))
    return names


def unit(parts) -> str:
    """A module's name in FLOORS: ``engine/model`` where the subpackage's module has a floor of its own, else the
    top name (``models``)."""
    parts = [part.removesuffix(".py") for part in parts]
    return "/".join(parts[:2]) if "/".join(parts[:2]) in FLOORS else parts[0]


def floor(path: Path) -> int | None:
    return FLOORS.get(unit(path.relative_to(PACKAGE).parts))


def modules() -> list[Path]:
    return [p for p in PACKAGE.rglob("*.py") if not (p.name == "__init__.py" and p.parent == PACKAGE)]


def test_every_module_has_a_floor():
    assert not [str(p.relative_to(PACKAGE)) for p in modules() if floor(p) is None]


def test_imports_never_run_back_up():
    upward = []
    for path in modules():
        mine = floor(path)
        for name in imported_modules(path):
            theirs = FLOORS.get(name)
            if name.startswith("__init__:") or (theirs is not None and theirs > mine):
                upward.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert not upward, upward


def test_no_two_subpackages_import_each_other():
    # data/prose imported diagnostics (the FarRelevant builder) while diagnostics imported data (the collection's
    # shape): each module had its floor, but the two folders formed a cycle
    imports: dict[str, set[str]] = {}
    for path in modules():
        here = path.relative_to(PACKAGE).parts
        if len(here) > 1:
            imports.setdefault(here[0], set()).update(name.split("/")[0] for name in imported_modules(path))
    both = sorted({tuple(sorted((a, b))) for a, used in imports.items() for b in used
                   if b != a and a in imports.get(b, set())})
    assert not both, both


def test_units_on_one_floor_above_the_engine_import_none_of_each_other():
    # diagnostics imported data/ while the demo, then in data/, imported diagnostics: a cycle between two packages
    sideways = []
    for path in modules():
        mine, here = floor(path), unit(path.relative_to(PACKAGE).parts)
        if mine <= ENGINE or not (PACKAGE / here).is_dir():  # packages only
            continue
        for name in imported_modules(path):
            if FLOORS.get(name) == mine and name != here:
                sideways.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert not sideways, sideways


def test_no_package_name_shadows_one_of_its_modules():
    # pyterrier_longdoc.training.fit was the function, hiding the module training/fit.py
    shadowed = []
    for init in PACKAGE.rglob("__init__.py"):
        modules_here = {p.stem for p in init.parent.glob("*.py")} | {p.name for p in init.parent.iterdir() if p.is_dir()}
        for node in ast.walk(ast.parse(init.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                shadowed += [f"{init.parent.name}.{a.asname or a.name}" for a in node.names
                             if (a.asname or a.name) in modules_here]
    assert not shadowed, shadowed


def test_the_check_sees_an_upward_import(tmp_path, monkeypatch):
    fake = PACKAGE / "aggregators" / "score.py"
    source = fake.read_text()
    assert "_reranker" not in imported_modules(fake)
    bad = tmp_path / "score.py"
    bad.write_text(source + "\nfrom .._reranker import LongDocReranker\n")
    monkeypatch.setattr(Path, "relative_to", lambda self, other: Path("aggregators/score.py"))
    assert "_reranker" in imported_modules(bad)


def private_names_from_the_engine(path: Path) -> list[str]:
    """The underscored names a module imports from an engine module (``from ..engine.runtime import _x``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level and node.module:
            top = node.module.split(".")[0]
            if FLOORS.get(top, ENGINE + 1) <= ENGINE:
                found += [f"{node.module}.{a.name}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
    return found


def test_modules_above_the_engine_use_its_public_names():
    above = [p for p in modules() if floor(p) > ENGINE]
    assert above and not {str(p.relative_to(PACKAGE)): names for p in above
                          if (names := private_names_from_the_engine(p))}


def test_the_private_name_check_sees_one(tmp_path):
    bad = tmp_path / "wrap.py"
    bad.write_text("from .engine.runtime import _secret\nfrom .engine.model import LongDocModel\n")
    assert private_names_from_the_engine(bad) == ["engine.runtime._secret"]


def dynamic_imports(source: str) -> list[str]:
    """The calls that import a module by a name computed at run time (``importlib.import_module``, ``__import__``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if called in ("import_module", "__import__"):
                found.append(ast.unparse(node))
    return found


def test_only_the_registry_imports_the_package_by_a_computed_name():
    # _reranker imported `models` through importlib for the classes' registration: an upward import the floor
    # check could not see. The registry's declared table (name -> "module:Class") is the one place a module of
    # the package is imported by name, like an entry point; the package __init__ loads its public names lazily;
    # pyserini and the chat backends import third-party modules (jnius, pyserini, openai, anthropic)
    allowed = {"_registry.py", "pyserini.py", "listwise/backends.py"}
    found = {str(p.relative_to(PACKAGE)): calls for p in modules()
             if str(p.relative_to(PACKAGE)) not in allowed and (calls := dynamic_imports(p.read_text()))}
    assert not found, found
    old = 'def _register_models():\n    import importlib\n    importlib.import_module(f"{__package__}.models")\n'
    assert dynamic_imports(old) == ['importlib.import_module(f\'{__package__}.models\')']


# the reranker's modules: the class and the functions and collaborators it delegates to
RERANKER_MODULES = ("_reranker", "_placement", "_scoring", "_pairs", "_parameters", "_hub")


def foreign_classes(cls: type) -> list[type]:
    """The classes in ``cls``'s MRO that are neither the reranker (or a model class) nor PyTerrier's or object."""
    import pyterrier_longdoc as pl

    return [c for c in cls.__mro__ if not (issubclass(c, pl.LongDocReranker) or c is object
                                           or c.__module__.partition(".")[0] == "pyterrier")]


def test_the_reranker_is_composed_not_mixed_in():
    # LongDocReranker had 7 bases (5 mixins over 6 files, pt.Estimator, pt.Artifact), LLMMaxP an MRO of 13:
    # where it runs is a collaborator (Placement), scoring, pairs, parameters and publishing plain functions
    import pyterrier as pt

    import pyterrier_longdoc as pl

    assert pl.LongDocReranker.__bases__ == (pt.Estimator, pt.Artifact)
    classes = [pl.LongDocReranker, *pl.registered_models().values()]
    assert not {c.__name__: foreign for c in classes if (foreign := foreign_classes(c))}
    # each class from the reranker down to a model class has at most 3 bases
    wide = {k.__name__ for c in classes for k in c.__mro__ if issubclass(k, pl.LongDocReranker) and len(k.__bases__) > 3}
    assert not wide, wide
    # no class of the reranker's hierarchy intercepts attribute assignment (the runtime checks its own options)
    assert not {k.__name__ for c in classes for k in c.__mro__ if k is not object and "__setattr__" in vars(k)}
    assert len(pl.LLMMaxP.__mro__) <= 8  # LLMMaxP, LLMCrossEncoder, MaxP, LongDocReranker, pt's 3, object


def test_foreign_classes_sees_a_mixin():
    import pyterrier_longdoc as pl

    class Mixin:
        pass

    class Mixed(Mixin, pl.LongDocReranker):
        pass

    assert foreign_classes(Mixed) == [Mixin]


def test_the_reranker_s_classes_and_functions_stay_small():
    # no class over ~200 lines, no function over ~80 (the reranker's class spanned 595 lines over 6 files)
    too_long = []
    for name in RERANKER_MODULES:
        for node in ast.walk(ast.parse((PACKAGE / f"{name}.py").read_text())):
            limit = 200 if isinstance(node, ast.ClassDef) else 80
            if isinstance(node, (ast.ClassDef, ast.FunctionDef)) and node.end_lineno - node.lineno + 1 > limit:
                too_long.append(f"{name}.{node.name}: {node.end_lineno - node.lineno + 1} lines")
    assert not too_long, too_long


# what DESIGN's engine holds: tokenization, chunking, batching, fast paths, runtime, backbone loading, weights
# I/O, the model and its settings and config
ENGINE_MODULES = {"tokenization", "chunking", "batching", "fast_paths", "runtime", "backbone", "weights", "model",
                  "settings", "config"}


def test_the_engine_lives_in_its_subpackage():
    engine = {p.stem for p in (PACKAGE / "engine").glob("*.py")}
    assert ENGINE_MODULES <= engine, ENGINE_MODULES - engine
    assert not [p.name for p in PACKAGE.glob("*.py") if p.stem.lstrip("_") in engine and p.stem != "__init__"]


def test_the_root_holds_no_tiny_private_module():
    # 32 private modules sat beside the public ones, some of 1 to 16 lines (_runtime_names, _kernel_caches, _rng,
    # _public); _version.py stays: pyproject reads the version from it without importing the package
    tiny = {p.name: n for p in PACKAGE.glob("_*.py")
            if p.name not in ("__init__.py", "_version.py") and (n := len(p.read_text().splitlines())) < 20}
    assert not tiny, tiny


def test_the_engine_imports_only_itself_the_heads_and_the_leaves():
    # nothing in engine/ imports models/, the reranker, the registry or the package __init__ (DESIGN's one way:
    # cli -> models -> reranker -> engine -> aggregators)
    allowed = {"aggregators", "_warn", "_version"}
    found = {str(p.relative_to(PACKAGE)): sorted(bad) for p in (PACKAGE / "engine").rglob("*.py")
             if (bad := {n for n in imported_modules(p) if not n.startswith("engine") and n not in allowed})}
    assert not found, found


def test_the_heads_import_nothing_of_the_package_but_themselves():
    # aggregators/ imported the engine's batch, its similarity names and its backbone loader (PRETR) while the
    # engine imports the heads; now the engine hands PRETR its loader (load_encoder) and the batch is a Protocol
    found = {str(p.relative_to(PACKAGE)): sorted(names) for p in (PACKAGE / "aggregators").rglob("*.py")
             if (names := {n for n in imported_modules(p) if n != "aggregators"})}
    assert not found, found


def test_the_engine_check_sees_an_upward_import(tmp_path, monkeypatch):
    bad = tmp_path / "model.py"
    bad.write_text("from .._reranker import LongDocReranker\nfrom .. import MaxP\nfrom .batching import ChunkBatch\n")
    monkeypatch.setattr(Path, "relative_to", lambda self, other: Path("engine/model.py"))
    assert imported_modules(bad) == {"_reranker", "__init__:MaxP", "engine/batching"}

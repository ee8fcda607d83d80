"""The package's imports run one way: models/ -> _reranker -> _model -> aggregators/, _batching,
_chunking -> _config, _backbone, _runtime, _version. Nothing in the engine imports models/ or the
package's __init__, and no aggregator imports a model class."""
import ast
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "pyterrier_longdoc"
# lower floors never import higher ones
FLOORS = {
    "_version": 0, "_text": 0, "_files": 0, "_config": 1, "_lora": 1, "_embedder": 1, "_card": 1, "_fast_paths": 1, "_runtime": 1, "_chunking": 2, "_backbone": 2, "_batching": 3,
    "aggregators": 4, "_weights": 5, "_model": 5, "_biencoder": 5, "_reranker": 6, "models": 7,
    "_warn": 0, "_kernel_caches": 0, "_parameters": 3, "_pairs": 2,
}


def imported_modules(path: Path) -> set[str]:
    """The package modules a file imports, as top-level names of the package (``_model``, ``models``)."""
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
            if not parts:  # "from . import x" at the top: the package __init__
                names.update(f"__init__:{alias.name}" for alias in node.names)
            else:
                names.add(parts[0].removesuffix(".py"))
    return names


def floor(path: Path) -> int | None:
    top = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
    return FLOORS.get(top)


def test_imports_never_run_back_up():
    upward = []
    for path in PACKAGE.rglob("*.py"):
        mine = floor(path)
        if mine is None or path.name == "__init__.py" and path.parent == PACKAGE:
            continue
        for name in imported_modules(path):
            theirs = FLOORS.get(name)
            if name.startswith("__init__:") or (theirs is not None and theirs > mine):
                upward.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert not upward, upward


def test_the_check_sees_an_upward_import(tmp_path, monkeypatch):
    fake = PACKAGE / "aggregators" / "score.py"
    source = fake.read_text()
    assert "_reranker" not in imported_modules(fake)
    bad = tmp_path / "score.py"
    bad.write_text(source + "\nfrom .._reranker import LongDocReranker\n")
    monkeypatch.setattr(Path, "relative_to", lambda self, other: Path("aggregators/score.py"))
    assert "_reranker" in imported_modules(bad)

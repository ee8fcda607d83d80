"""The suite's configuration does what README's Contributing section says: its marker expressions
select what they name, and a library warning a test does not expect fails that test."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_not_notebook_runs_the_library_tests_alone():
    """-m "not notebook" (README) leaves out every test of the tutorials and keeps the others; the
    marker is registered (--strict-markers)."""
    run = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "--strict-markers", "-p",
                          "no:cacheprovider", "-m", "not notebook", "tests/docs/test_tutorials.py",
                          "tests/project/test_markers.py"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert {line.split("[")[0] for line in run.stdout.splitlines() if "::" in line} == {
        "tests/project/test_markers.py::test_not_notebook_runs_the_library_tests_alone",
        "tests/project/test_markers.py::test_library_warnings_are_errors_unless_asserted_or_declared"}
    assert int(re.search(r"(\d+) deselected", run.stdout).group(1)) > 20  # every test of the tutorials
    assert '-m "not notebook"' in (ROOT / "README.md").read_text()


WARNS = "import pyterrier_longdoc as pl\nfrom pyterrier_longdoc._warn import warn\n"
CASES = {
    # a library warning the test does not expect: an error
    "unexpected": ("def test_it():\n    warn('the documents were cropped')\n", "failed"),
    # asserted, with its message
    "asserted": ("def test_it():\n    with pytest.warns(pl.LongDocWarning, match='cropped'):\n"
                 "        warn('the documents were cropped')\n", "passed"),
    # declared by its class: that class only, not the library's other warnings
    "declared": ("@pytest.mark.filterwarnings('ignore::pyterrier_longdoc.UntrainedHeadWarning')\n"
                 "def test_it():\n    warn('a new head', pl.UntrainedHeadWarning)\n", "passed"),
    "declared, another class": ("@pytest.mark.filterwarnings('ignore::pyterrier_longdoc.UntrainedHeadWarning')\n"
                                "def test_it():\n    warn('the documents were cropped')\n", "failed"),
    # an old name used without asserting its deprecation
    "deprecated": ("def test_it():\n    warn('window is deprecated', pl.LongDocDeprecationWarning)\n", "failed"),
}


@pytest.mark.parametrize("case", CASES)
def test_library_warnings_are_errors_unless_asserted_or_declared(case, tmp_path):
    """The filterwarnings of pyproject.toml, on a test file written here: a LongDocWarning (or an old
    name's deprecation) that a test neither asserts nor declares fails it."""
    body, outcome = CASES[case]
    (tmp_path / "test_case.py").write_text("import pytest\n" + WARNS + "\n\n" + body)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c",
                          str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path), str(tmp_path / "test_case.py")],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert re.search(rf"\b1 {outcome}\b", run.stdout), run.stdout[-3000:] + run.stderr[-2000:]
    if outcome == "failed":
        assert "Warning: " in run.stdout and ("cropped" in run.stdout or "deprecated" in run.stdout)

"""The suite's configuration does what README's Contributing section says: its marker expressions
select what they name, and a library warning a test does not expect fails that test."""
import re
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

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


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    """The filterwarnings of pyproject.toml, on test files written here, one per case, run by one
    pytest (one interpreter start for all the cases): each case's outcome and failure text."""
    folder = tmp_path_factory.mktemp("warning-cases")
    files = {}
    for i, (case, (body, _)) in enumerate(CASES.items()):
        files[case] = f"test_case_{i}.py"
        (folder / files[case]).write_text("import pytest\n" + WARNS + "\n\n" + body)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                          "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(folder), "--junitxml", "report.xml",
                          *files.values()], cwd=folder, capture_output=True, text=True, timeout=300)
    shown = run.stdout[-3000:] + run.stderr[-2000:]
    assert (folder / "report.xml").exists(), shown
    report = {case.get("classname"): case for case in ElementTree.parse(folder / "report.xml").iter("testcase")}
    found = {}
    for case, name in files.items():
        testcase = report.get(name.removesuffix(".py"))  # junit's classname: the module's name
        assert testcase is not None, f"{case}: {name} did not run\n{shown}"
        failure = testcase.find("failure")
        if failure is None:
            failure = testcase.find("error")
        found[case] = ("passed", "") if failure is None else ("failed", (failure.get("message") or "") + (failure.text or ""))
    return found, shown


@pytest.mark.parametrize("case", CASES)
def test_library_warnings_are_errors_unless_asserted_or_declared(case, outcomes):
    """A LongDocWarning (or an old name's deprecation) that a test neither asserts nor declares fails it."""
    found, shown = outcomes
    outcome, failure = found[case]
    assert outcome == CASES[case][1], f"{case}: {outcome}\n{failure}\n{shown}"
    if outcome == "failed":
        assert "Warning: " in failure and ("cropped" in failure or "deprecated" in failure), failure

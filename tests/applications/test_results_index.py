"""benchmarks/results/README.md indexes the results: every current file is named in its table, every
file moved to archive/ in its list, and no text of the repository names a results file that is not
where it says (a moved file's links follow it)."""
import fnmatch
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
INDEX = (RESULTS / "README.md").read_text()


def expand(pattern: str) -> list[str]:
    """``a-{x,y}-b`` as ``a-x-b`` and ``a-y-b``; ``...`` as ``*``."""
    pattern = pattern.replace("...", "*")
    match = re.search(r"\{([^{}]*)\}", pattern)
    if not match:
        return [pattern]
    return [p for choice in match.group(1).split(",")
            for p in expand(pattern[:match.start()] + choice + pattern[match.end():])]


def test_every_current_file_is_in_the_index_and_its_links_resolve():
    current, archive = INDEX.split("## Archive")
    for path in RESULTS.iterdir():
        if path.is_file() and path.name != "README.md":
            assert path.stem in current, f"{path.name}: add it to the table of benchmarks/results/README.md"
    links = re.findall(r"\]\(([^)]+)\)", INDEX)
    assert links and all((RESULTS / link).exists() for link in links), \
        [link for link in links if not (RESULTS / link).exists()]


def test_every_archived_file_is_listed():
    archive = INDEX.split("## Archive")[1]
    patterns = [p for named in re.findall(r"`([^`]+)`", archive) for p in expand(named)]
    for path in (RESULTS / "archive").iterdir():
        assert any(fnmatch.fnmatch(path.name, p) or fnmatch.fnmatch(path.stem, p) for p in patterns), \
            f"archive/{path.name}: say in benchmarks/results/README.md what it was"


def test_no_text_names_a_results_file_that_is_not_there():
    tracked = subprocess.run(["git", "ls-files", "*.md", "*.py", "*.ipynb", "*.txt", "*.toml"], cwd=ROOT,
                             check=True, capture_output=True, text=True).stdout.split()
    missing = []
    for name in tracked:
        if not (ROOT / name).is_file():
            continue
        for mention in re.findall(r"benchmarks/results/([\w./-]+\.(?:json|md|txt))", (ROOT / name).read_text()):
            if not (RESULTS / mention).exists():
                missing.append(f"{name}: {mention}")
    assert not missing, missing

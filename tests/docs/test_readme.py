"""README.md is the entry document: short, its two set-up commands where .ci/run finds them, its
relative links resolving, and its quickstart running offline exactly as written there."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pyterrier_longdoc.demo import saved_models

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def quickstart(text: str) -> str:
    """The Python block after ``<!-- quickstart -->``."""
    match = re.search(r"<!-- quickstart -->\n```python\n(.*?)^```", text, flags=re.M | re.S)
    assert match, "README.md has no ```python block after <!-- quickstart -->"
    return match.group(1)


def test_readme_is_short_and_keeps_the_ci_commands_and_its_links():
    assert len(README.splitlines()) < 300
    commands = re.findall(r"<!-- ci: [^>]*-->\n```bash\n(python3 -m venv .*)\n```", README)
    assert commands == [
        'python3 -m venv .venv && . .venv/bin/activate && pip install torch==2.13.0 && pip install -e ".[demo]" '
        "&& pyterrier-longdoc demo",
        'python3 -m venv .venv && . .venv/bin/activate && pip install torch==2.13.0 && pip install -e ".[demo,dev]" '
        "&& pytest -q tests"]
    assert README.index("<!-- ci:") < README.index("## Quickstart")
    links = [link for link in re.findall(r"\]\(([^)]+)\)", README) if "://" not in link]
    assert links and all((ROOT / link.split("#")[0]).exists() for link in links), \
        [link for link in links if not (ROOT / link.split("#")[0]).exists()]


def test_readme_says_how_the_demos_models_read_and_what_explain_gives():
    from pyterrier_longdoc.demo import WINDOWS

    demo = README[README.index("## Two commands"):README.index("<!-- ci: set up and run the demo -->")]
    assert f"240-token windows, `window={WINDOWS['window']}, stride={WINDOWS['stride']}`" in demo
    assert WINDOWS["window"] == WINDOWS["stride"] == 240  # disjoint, as the paragraph says
    assert "`model.explain(candidates)`" in README


# README's quickstart is documentation run end to end, as the tutorials' notebooks are: "not notebook" leaves it out
@pytest.mark.notebook
@pytest.mark.slow  # FirstP and PARADE-Attn over 50 queries and PARADE's query controls: minutes on two CPU cores
def test_the_quickstart_runs_as_written(tmp_path):
    """It loads the models README's first command trained: CI runs the demo in this clone before the tests,
    and its models are used as they are; elsewhere a ``--quick`` demo makes them first (a smoke run, whose
    models need not read the query)."""
    (tmp_path / "quickstart.py").write_text(quickstart(README))
    # one thread while the notebooks' two kernels share the cores with it (README's test command); every core
    # when they do not run (pytest -m "not notebook")
    threads = "1" if "notebook_runner" in sys.modules else str(os.cpu_count() or 1)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": threads}
    demo = ROOT / "demo-output"
    trained = saved_models(demo) is not None
    if trained:
        (tmp_path / "demo-output").symlink_to(demo)
    else:
        subprocess.run([sys.executable, "-m", "pyterrier_longdoc.cli", "demo", "--quick", "--output", "demo-output"],
                       cwd=tmp_path, capture_output=True, text=True, env=env, timeout=900, check=True)
    run = subprocess.run([sys.executable, "quickstart.py"], cwd=tmp_path, capture_output=True, text=True, env=env,
                         timeout=1500)
    assert run.returncode == 0, run.stderr[-3000:]
    table = run.stdout.split("name", 1)[1]
    assert all(name in table for name in ("BM25", "FirstP", "ParadeAttn")) and "RR@10 p-value" in table
    assert "another query's text" in run.stdout and "ParadeAttn reads the query: " in run.stdout
    if trained:
        assert "ParadeAttn reads the query: True" in run.stdout

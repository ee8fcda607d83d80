"""Executes the tutorials' notebooks for the tests: each with its exercises' solutions appended, in
the tutorials folder (as a user runs it: it imports the helper modules from there).

``start`` runs notebooks 1-5, 7 and 8 in the background, two kernels at a time (one torch thread each),
longest first, while pytest runs the library's tests: the suite then takes about the time of its
CPU work spread over 2 cores instead of one notebook after another. ``result`` waits
for one notebook and returns its executed code cells; a failing cell fails there, with nbclient's
message naming the cell.

Run as a script (``python tests/helpers/notebook_runner.py NAME OUT``) it executes one notebook and writes the
executed notebook to OUT: how ``start`` runs each in its own process.

With PYTERRIER_LONGDOC_SAVE_TUTORIALS=1 a notebook is saved with its run's outputs (its own cells
only): how the saved outputs are refreshed after a change."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TUTORIALS = ROOT / "tutorials"
# longest first, so the two kernels finish together (CPU seconds on one thread, with the solutions; the suite's
# summary lists each run's: notebook 8, the PARADE lab, which trains three models, about 900; 4 about 670; 1 about
# 350; 3, 5 and 7 about 220, 160 and 60; 2 about 25)
EXECUTED = ["08_parade_lab", "04_positional_bias", "01_quickstart", "03_training", "05_comparing_models",
            "07_biencoder_zero_shot", "02_chunking"]
# notebooks whose models must read the query: each prints query_controls and asserts reads_the_query
READ_THE_QUERY = ["01_quickstart", "03_training", "08_parade_lab"]
# notebooks that read data a Debian package installs where it is, else the prose that ships with the package:
# name -> (dictionary, package). Their saved outputs are the Debian data's
SYSTEM_DATA = {"07_biencoder_zero_shot": ("foldoc", "dict-foldoc")}
# notebooks that load what README's first command saved (CI runs it before the tests): notebook 1 its models,
# notebook 8 its passage stage (reused, not trained again)
NEEDS_THE_DEMO = ["01_quickstart", "08_parade_lab"]
KERNELS = 2

_pool: ThreadPoolExecutor | None = None
_runs: dict[str, Future] = {}
_processes: set[subprocess.Popen] = set()
_stopped = False
cpu_seconds: dict[str, float] = {}  # notebook -> CPU seconds of its run (the script and its kernel), as it ends
_CPU_LINE = "notebook CPU seconds: "


def solution_cells(name) -> list[str]:
    """The solution file's cells: code between ``# %%`` lines."""
    text = (TUTORIALS / "solutions" / f"{name}_solutions.py").read_text()
    return [cell.strip() for cell in re.split(r"^# %%.*$", text, flags=re.M)[1:] if cell.strip()]


def run_with_solutions(name, timeout: int):
    """Executes notebook ``name`` with its solutions appended, in this process; returns the
    executed notebook (its own cells: the solutions' cells are dropped again)."""
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(TUTORIALS / f"{name}.ipynb", as_version=4)
    own = list(notebook.cells)
    notebook.cells += [nbformat.v4.new_code_cell(source) for source in solution_cells(name)]
    # startup_timeout: on a 2-core machine shared with other jobs a kernel may take minutes to start
    NotebookClient(notebook, timeout=timeout, startup_timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(TUTORIALS)}}).execute()
    notebook.cells = own
    if saving():
        nbformat.write(notebook, TUTORIALS / f"{name}.ipynb")
    return notebook


def saving() -> bool:
    """Whether runs are saved over the notebooks (PYTERRIER_LONGDOC_SAVE_TUTORIALS=1)."""
    return os.environ.get("PYTERRIER_LONGDOC_SAVE_TUTORIALS") == "1"


def refuse_saving() -> None:
    """For scripts that run notebooks to measure them, not to save them."""
    if saving():
        raise SystemExit("PYTERRIER_LONGDOC_SAVE_TUTORIALS=1 would save these runs over the notebooks: unset it")


def missing_data(name) -> str | None:
    """Why notebook ``name`` cannot run on this machine (the demo's trained models are missing), or None."""
    from pyterrier_longdoc.demo import saved_models

    if name in NEEDS_THE_DEMO and saved_models(ROOT / "demo-output") is None:
        return (f"{ROOT / 'demo-output'} holds no trained models: {name} loads those of README's first command "
                "(pyterrier-longdoc demo)")
    return None


def missing_system_data(name) -> str | None:
    """Why notebook ``name`` runs on the shipped prose here (the Debian package its saved outputs
    come from is not installed), or None: it then checks its conclusions, but prints other numbers."""
    from pyterrier_longdoc.data.dictionaries import dictd_path

    if name not in SYSTEM_DATA:
        return None
    dictionary, package = SYSTEM_DATA[name]
    path = Path(dictd_path(dictionary))
    return None if path.exists() else (f"{path} not found: {name} ran on the shipped prose, so its saved outputs "
                                       f"(from Debian's {package}: apt-get install {package}) were not compared")


def start(names) -> None:
    """Starts executing ``names`` (notebooks of EXECUTED) in the background, longest first; a
    notebook already started, or whose data is missing here (``missing_data``), is not started."""
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(KERNELS, thread_name_prefix="notebook")
    for name in sorted({n for n in names if not missing_data(n)} - set(_runs), key=EXECUTED.index):
        _runs[name] = _pool.submit(_execute_in_a_process, name)


def result(name):
    """The executed notebook ``name`` (started now if it was not)."""
    start([name])
    return _runs[name].result()


def stop() -> None:
    """Cancels the notebooks not started yet and ends the running ones (the session is over)."""
    global _stopped
    _stopped = True
    if _pool is not None:
        for run in _runs.values():
            run.cancel()
        for process in list(_processes):
            process.kill()
        _pool.shutdown(wait=True)


def _execute_in_a_process(name):
    import nbformat

    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / f"{name}.ipynb"
        output = _check_call([sys.executable, __file__, name, str(out)], f"notebook {name}")
        if _CPU_LINE in output:
            cpu_seconds[name] = float(output.rsplit(_CPU_LINE, 1)[1].split()[0])
        return nbformat.read(out, as_version=4)


def _check_call(command, what: str) -> str:
    if _stopped:
        raise RuntimeError(f"{what}: the test session ended first")
    # one torch thread per process: two kernels and pytest share the 2 cores
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    process = subprocess.Popen(command, cwd=TUTORIALS, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
    _processes.add(process)
    try:
        output, _ = process.communicate()
    finally:
        _processes.discard(process)
    if process.returncode:
        raise AssertionError(f"{what} failed (exit status {process.returncode}):\n{output[-6000:]}")
    return output


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its ended children (the notebook's kernel, once shut down)."""
    import resource  # POSIX only: the caller checks

    return sum(usage.ru_utime + usage.ru_stime
               for usage in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)))


if __name__ == "__main__":
    notebook_name, destination = sys.argv[1], sys.argv[2]
    import nbformat

    nbformat.write(run_with_solutions(notebook_name, timeout=1800), destination)
    if os.name == "posix":
        print(f"{_CPU_LINE}{_cpu_seconds():.0f}")  # what the suite's summary lists per notebook

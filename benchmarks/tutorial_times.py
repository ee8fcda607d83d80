"""How long each tutorial takes: the run times the tutorials' index and each notebook's first cell state.

Runs notebooks one after another, each as the test suite runs it (``tests/helpers/notebook_runner.py``:
the notebook with its exercises' solutions, a fresh kernel) but with ``--threads`` torch threads (2,
a 2-core laptop's), and records its wall time and CPU seconds (the runner and its kernel). A stated
run time is only as good as the machine was quiet: beside each notebook the file records the CPU
seconds that other processes used during its run (from ``/proc/stat``, Linux), so a reader sees
whether the cores were shared. Notebooks 1 and 8 load what README's first command saved
(``demo-output/``): run that first, as their text says.

    python benchmarks/tutorial_times.py                      # every tutorial, about 20 minutes on 2 cores
    python benchmarks/tutorial_times.py 07_biencoder_zero_shot

Writes ``tutorial-times-<date>.md`` and ``.json`` into ``--results``.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))

from _common import finish_run, run_header  # noqa: E402


def busy_seconds() -> float | None:
    """CPU seconds the whole machine has spent busy since boot (every process's), or None off Linux."""
    try:
        fields = [float(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except OSError:
        return None
    idle = fields[3] + fields[4]  # idle and iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def children_cpu() -> float:
    """CPU seconds of this process's ended children (POSIX: the script's measure is Linux's)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(name: str, threads: int) -> dict:
    """Runs notebook ``name`` with its solutions in a process of its own; its wall and CPU seconds,
    and the other processes' CPU seconds meanwhile."""
    from helpers import notebook_runner

    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    with tempfile.TemporaryDirectory() as folder:
        began, cpu, busy = time.perf_counter(), children_cpu(), busy_seconds()
        subprocess.run([sys.executable, notebook_runner.__file__, name, str(Path(folder) / "out.ipynb")],
                       cwd=notebook_runner.TUTORIALS, env=env, check=True, stdout=subprocess.DEVNULL)
        wall, cpu = time.perf_counter() - began, children_cpu() - cpu
    ended = busy_seconds()
    others = None if busy is None or ended is None else max(0.0, ended - busy - cpu)
    return {"notebook": name, "wall_seconds": round(wall, 1), "cpu_seconds": round(cpu, 1),
            "other_processes_cpu_seconds": None if others is None else round(others, 1)}


def described(cpu_seconds: float | None) -> str:
    return "unknown" if cpu_seconds is None else f"{cpu_seconds:.0f} CPU seconds"


def main(argv=None) -> int:
    from helpers import notebook_runner

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("notebooks", nargs="*", default=sorted(notebook_runner.EXECUTED))
    parser.add_argument("--threads", type=int, default=2, help="torch threads of each kernel (2)")
    parser.add_argument("--results", default=str(ROOT / "benchmarks" / "results"))
    args = parser.parse_args(argv)
    notebook_runner.refuse_saving()
    missing = [why for why in map(notebook_runner.missing_data, args.notebooks) if why]
    if missing:
        raise SystemExit("; ".join(missing))
    started = time.time()
    rows = [timed(name, args.threads) for name in args.notebooks]
    text = "\n".join(f"{row['notebook']}: {row['wall_seconds']:.0f} s wall, {row['cpu_seconds']:.0f} CPU seconds "
                     f"over {args.threads} torch threads (with its exercises' solutions); other processes "
                     f"meanwhile: {described(row['other_processes_cpu_seconds'])}" for row in rows)
    return finish_run(args.results, "tutorial-times", ".md", run_header(args.threads), text, rows,
                      f"took {time.time() - started:.0f} s")


if __name__ == "__main__":
    raise SystemExit(main())

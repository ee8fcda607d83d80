"""Scripts run each in a fresh process forked from one that has already imported torch, pandas,
transformers and PyTerrier: a script's own state starts empty, as in ``python script.py``, without
paying those imports' seconds again for every script (tests/docs/test_docs.py runs one per guide page)."""
from __future__ import annotations

import multiprocessing
import os
import runpy
import sys
from pathlib import Path

PRELOADED = ["torch", "pandas", "transformers", "pyterrier", "pyterrier_longdoc"]


def _run(folder: str, script: str, output: str) -> None:
    os.chdir(folder)
    with open(output, "w") as out:
        os.dup2(out.fileno(), 1)
        os.dup2(out.fileno(), 2)
    sys.argv = [script]
    sys.path.insert(0, folder)
    os.environ["OMP_NUM_THREADS"] = "1"

    import torch

    torch.set_num_threads(1)  # as OMP_NUM_THREADS=1 at the start of a fresh interpreter
    runpy.run_path(script, run_name="__main__")


class FreshProcesses:
    def __init__(self):
        self.context = multiprocessing.get_context("forkserver")
        self.context.set_forkserver_preload(PRELOADED)

    def run(self, folder: Path, script: str = "page.py", timeout: float = 600) -> tuple[int, str]:
        """``python script`` in ``folder``: its exit code and what it printed (stdout and stderr)."""
        output = Path(folder) / f"{script}.out"
        process = self.context.Process(target=_run, args=(str(folder), script, str(output)))
        process.start()
        process.join(timeout)
        if process.is_alive():
            process.kill()
            process.join()
        return process.exitcode, output.read_text() if output.exists() else ""

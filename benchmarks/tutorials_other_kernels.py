"""Do a tutorial's saved outputs hold on another CPU? Runs notebooks as the test suite does (with their
solutions, not saved) under other CPU kernels, and compares their outputs with the saved ones
(``tests/helpers/notebook_outputs``: the same check as the suite's).

Another CPU rounds floats otherwise because torch picks other vectorised kernels (AVX-512, AVX2,
none) and oneDNN other instruction sets. The same machine can run the kernels another CPU would:
``ATEN_CPU_CAPABILITY=default`` (no vectorised ATen kernels) and ``ONEDNN_MAX_CPU_ISA=SSE41``. What
differs here beyond the check's tolerance would differ on such a CPU too.

    python benchmarks/tutorials_other_kernels.py 07_biencoder_zero_shot 05_comparing_models

Writes ``tutorials-other-kernels-<notebooks' numbers>-<date>.md`` and ``.json`` into ``--results``.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))

from _common import finish_run, run_header  # noqa: E402

OTHER_KERNELS = {"ATEN_CPU_CAPABILITY": "default", "ONEDNN_MAX_CPU_ISA": "SSE41"}


def compare(name: str) -> dict:
    """Runs notebook ``name`` in a kernel that inherits OTHER_KERNELS; its differences from the saved outputs."""
    import nbformat
    from helpers import notebook_outputs, notebook_runner

    began = time.time()
    fresh = notebook_runner.run_with_solutions(name, timeout=3600)
    saved = nbformat.read(notebook_runner.TUTORIALS / f"{name}.ipynb", as_version=4)
    code = [[cell for cell in notebook.cells if cell.cell_type == "code"] for notebook in (saved, fresh)]
    return {"notebook": name, "differences": notebook_outputs.differences(*code), "seconds": round(time.time() - began)}


def main(argv=None) -> int:
    from helpers import notebook_runner

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("notebooks", nargs="+")
    parser.add_argument("--results", default=str(ROOT / "benchmarks" / "results"))
    args = parser.parse_args(argv)
    notebook_runner.refuse_saving()
    os.environ.update(OTHER_KERNELS)  # the kernels started from here inherit them
    started = time.time()
    rows = [compare(name) for name in args.notebooks]
    kernels = " ".join(f"{key}={value}" for key, value in OTHER_KERNELS.items())
    text = "\n".join(f"{row['notebook']} under {kernels}: {len(row['differences'])} differences from its saved "
                     f"outputs beyond the check's tolerance ({row['seconds']} s)"
                     + "".join(f"\n  {line[:2000]}" for line in row["differences"]) for row in rows)
    threads = int(os.environ.get("OMP_NUM_THREADS", "0")) or os.cpu_count()
    numbers = "-".join(sorted(name.split("_")[0] for name in args.notebooks))
    return finish_run(args.results, f"tutorials-other-kernels-{numbers}", ".md", run_header(threads), text, rows,
                      f"took {time.time() - started:.0f} s")


if __name__ == "__main__":
    sys.exit(main())

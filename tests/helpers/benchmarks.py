"""The benchmarks' scripts, run as their command lines run them, in this process."""
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def run_benchmark(script: str, *arguments):
    """``benchmarks/<script>.py``'s ``main`` with ``arguments``, in this process: its exit status and
    what it printed (``returncode``, ``stdout``, ``stderr``), as a subprocess would give them. A
    subprocess would spend its first seconds importing torch, transformers and PyTerrier, which this
    process has done; transformers' logging settings, which the benchmarks quiet, are put back after.
    Warnings are not shown, as the scripts' smoke runs ran with PYTHONWARNINGS=ignore."""
    import contextlib
    import importlib
    import io
    import sys
    import warnings
    from types import SimpleNamespace

    from transformers.utils import logging as hf_logging

    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    stdout, stderr = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                status = importlib.import_module(script).main([str(a) for a in arguments])
            except SystemExit as stop:  # argparse's refusals, and the scripts' own: what the interpreter does
                status = stop.code if isinstance(stop.code, int) else int(stop.code is not None)
                if not isinstance(stop.code, int) and stop.code is not None:
                    print(stop.code, file=sys.stderr)
    finally:
        if "_common" in sys.modules:  # the device, clock and models a main chose: each process's own
            sys.modules["_common"].reset()
        hf_logging.set_verbosity(verbosity)
        hf_logging.enable_progress_bar() if bars else hf_logging.disable_progress_bar()
    return SimpleNamespace(returncode=status, stdout=stdout.getvalue(), stderr=stderr.getvalue())

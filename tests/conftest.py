"""Shared fixtures: a tiny random BERT written to a local directory, offline."""
import os
import sys
import warnings

import pytest

from helpers.tiny_bert import write_tiny_bert

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # tests never touch the hub
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# The suite's reference values are the CPU's fp32 ones (on a GPU the models default to bf16), so
# GPUs are hidden from it; tests/engine/test_cuda.py checks the GPU, shown by LONGDOC_TESTS_ON_CUDA=1.
if os.environ.get("LONGDOC_TESTS_ON_CUDA") != "1":
    os.environ["CUDA_VISIBLE_DEVICES"] = ""


def pytest_configure(config):
    import torch

    config.addinivalue_line("markers", "slow: a test of half a minute or more; it runs in the suite (-m 'not slow' skips it)")
    config.addinivalue_line("markers", "notebook: documentation run end to end: the tutorials' notebooks "
                                       "(tests/docs/test_tutorials.py) and README's quickstart; -m 'not notebook' runs the "
                                       "library's tests alone")
    config.addinivalue_line("markers", "cuda: needs a CUDA GPU; skipped without one, in CI too")

    torch.set_num_threads(1)  # tiny models: one thread is faster than two fighting over small matmuls


def pytest_collection_finish(session):
    """The tutorials' notebooks start executing now, in the background (two kernels, one thread
    each), so they run while the library's tests do; their tests collect the results."""
    names = {item.callspec.params["name"] for item in session.items
             if getattr(item, "originalname", "") == "test_notebook_and_solutions_run"}
    if names and not session.config.option.collectonly:
        from helpers import notebook_runner

        notebook_runner.start(names)


def pytest_collection_modifyitems(items):
    """The tests that wait for a notebook's run go last (a stable sort keeps the rest in order): the library's
    tests then run while the kernels do, instead of after them, behind the first test that waits."""
    items.sort(key=lambda item: getattr(item, "originalname", "") == "test_notebook_and_solutions_run")


def pytest_sessionfinish(session):
    if "helpers.notebook_runner" in sys.modules:  # a session cut short leaves no kernel behind
        sys.modules["helpers.notebook_runner"].stop()


def pytest_terminal_summary(terminalreporter):
    """Where the suite's time goes: the CPU seconds of each notebook's run, beside the session's own."""
    runner = sys.modules.get("helpers.notebook_runner")
    if runner is not None and runner.cpu_seconds:  # POSIX only, as resource
        import resource

        own = resource.getrusage(resource.RUSAGE_SELF)
        listed = ", ".join(f"{name} {seconds:.0f}" for name, seconds in sorted(runner.cpu_seconds.items()))
        terminalreporter.write_line(f"notebooks' CPU seconds (with their solutions): {listed}; "
                                    f"pytest's own process {own.ru_utime + own.ru_stime:.0f}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    # in CI every dependency is installed, so a skipped test is a missing install step: fail it
    # (a GPU is hardware, not an install step: CI machines have none)
    report = (yield).get_result()
    if os.environ.get("CI") and report.skipped and "cuda" not in item.keywords:
        report.outcome = "failed"
        report.longrepr = f"skipped in CI: {report.longrepr}"


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory):
    return str(write_tiny_bert(tmp_path_factory.mktemp("tiny-bert")))


@pytest.fixture(scope="module")
def window_model(tiny_bert):
    """A MaxP over the tiny BERT with a random head, for tests of what scoring takes and gives."""
    import pyterrier_longdoc as pl

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pl.UntrainedHeadWarning)  # random scores are all these tests need
        return pl.MaxP(tiny_bert, seed=0, window=12, stride=6, max_length=48, max_query_tokens=8)


@pytest.fixture(scope="module")
def corpus():
    """(passages, queries, qrels) of made-up words for the FarRelevant builder and collections."""
    from helpers.far_relevant import far_relevant_corpus

    return far_relevant_corpus()


@pytest.fixture()
def trec_files(tmp_path):
    topics = tmp_path / "topics.txt"
    topics.write_text("q1\twhat cat\nq2\twhat dog\n")
    docs = tmp_path / "docs.tsv"
    rows = {f"{q}-d{j}": "the a of and " * 8 + ("castle " if j == 0 else "house ") * 6
            for q in ("q1", "q2") for j in range(3)}
    docs.write_text("".join(f"{docno}\t{text}\n" for docno, text in rows.items()))
    run = tmp_path / "bm25.run"
    run.write_text("".join(f"{d[:2]} Q0 {d} {int(d[-1]) + 1} {10 - int(d[-1])} bm25\n" for d in rows))
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"{d[:2]} 0 {d} {int(d.endswith('d0'))}\n" for d in rows))
    return {k: str(v) for k, v in {"topics": topics, "docs": docs, "run": run, "qrels": qrels}.items()}

"""The tutorials: notebooks 1-5, 7 and 8 run top to bottom (then their exercises' solutions, in the same
kernel), each exactly once, two at a time in the background while the library's tests run
(``notebook_runner``, started from conftest.py); their saved outputs come from such a run; notebooks 1, 3, 5
and 7 re-rank with bi-encoders, notebook 8 with the cross-encoders it trains (FirstP, MaxP, PARADE-Attn); each
prints its query controls and asserts that the models read the query.

The notebooks assert the numbers their text interprets (with margins, so that the conclusions hold
in fp32 and bf16), so a drift between text and output fails here. Set
PYTERRIER_LONGDOC_TUTORIALS_DTYPE=bf16 to run them in bf16."""
import ast
import importlib
import json
import re
import shutil
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")

pytestmark = pytest.mark.notebook  # -m "not notebook": the library's tests without these

from helpers import notebook_outputs, notebook_runner  # noqa: E402 - after the skip without nbformat
from helpers.notebook_runner import TUTORIALS, solution_cells  # noqa: E402

README = (TUTORIALS.parent / "README.md").read_text()

EXECUTED = sorted(notebook_runner.EXECUTED)


def read(name):
    return nbformat.read(TUTORIALS / f"{name}.ipynb", as_version=4)


def code_cells(notebook):
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


def ran_to_the_end(cells) -> bool:
    """The notebook's last cell printed its run time: every cell before it ran."""
    return "This notebook ran in" in cells[-1].outputs[0]["text"]


def tutorial_module(name):
    """A helper module of the tutorials folder (``_warm_start``, ``_stats``), imported as the
    notebooks import it: from the folder they run in."""
    import sys

    if str(TUTORIALS) not in sys.path:
        sys.path.insert(0, str(TUTORIALS))
    return importlib.import_module(name)


@pytest.mark.slow  # minutes each (the two kernels run them while the library's tests run)
@pytest.mark.parametrize("name", EXECUTED)
def test_notebook_and_solutions_run(name):
    """A failing cell fails the test (nbclient raises CellExecutionError, naming the cell): the
    notebooks assert the numbers their text interprets, so text and outputs cannot drift apart.
    Each notebook runs once, with its solutions appended; the notebooks run in the background, two
    at a time, from the start of the session (``notebook_runner``; see conftest.py). A notebook whose
    data a Debian package installs runs on the shipped prose where that package is missing: its
    checks hold there too, and its saved outputs (the Debian data's) are compared only where it is
    installed (skipped otherwise, with the reason, after its checks ran)."""
    missing = notebook_runner.missing_data(name)
    if missing:
        pytest.skip(missing)
    fresh = code_cells(notebook_runner.result(name))
    assert ran_to_the_end(fresh)
    fallback = notebook_runner.missing_system_data(name)
    if fallback:
        assert "the shipped WordNet prose instead" in "".join(o.get("text", "") for o in fresh[1].outputs)
        pytest.skip(fallback)
    assert_saved_outputs_match(name, fresh)


def assert_saved_outputs_match(name, fresh_cells):
    """The saved outputs are what the notebook prints now: the fresh run's text equals them, cell
    for cell, up to timings, temporary folders, progress bars and float noise
    (``helpers/notebook_outputs``: 0.005 plus 1%)."""
    found = notebook_outputs.differences(code_cells(read(name)), fresh_cells)
    assert not found, (f"{name}: the saved outputs differ from this run's (refresh them: README's "
                       f"PYTERRIER_LONGDOC_SAVE_TUTORIALS=1):\n" + "\n".join(found[:5]))


# (model, group) pairs whose verdict each asserts (every seed)
READS_ASSERTED = {"01_quickstart": 4, "03_training": 8, "08_parade_lab": 5}


@pytest.mark.parametrize("name", notebook_runner.READ_THE_QUERY)
def test_notebook_prints_and_asserts_that_its_models_read_the_query(name):
    """The models are checked with query controls (the same candidates scored with another query's
    text and with a constant query), per query group, and the verdict is asserted; the saved run
    shows the controls and a "reads the query: True" for every model and group it asserts."""
    cells = code_cells(read(name))
    sources = "\n".join(cell.source for cell in cells)
    assert "query_controls(" in sources and re.search(r"assert .*verdict|assert reads_the_query", sources)
    shown = output_text(tagged(cells, "query-controls"))
    assert all(word in shown for word in ("real query", "another query's text", "constant query", "random order"))
    verdicts = re.findall(r"reads the query: (True|False)", "\n".join(output_text(cell) for cell in cells))
    assert verdicts.count("True") >= READS_ASSERTED[name], verdicts


@pytest.mark.parametrize("name", notebook_runner.READ_THE_QUERY)
def test_no_system_the_notebook_compares_is_at_the_ceiling(name):
    """RR at 0.95 or more leaves a test no room: the saved run's highest RR of a compared system, in
    any query group, is below it (the notebook asserts it as well)."""
    text = "\n".join(output_text(cell) for cell in code_cells(read(name)))
    [highest] = re.findall(r"highest RR of a compared system in a query group: ([0-9.]+)", text)
    assert float(highest) < 0.95


def cell_with(source, *outputs):
    cell = nbformat.v4.new_code_cell(source)
    cell.outputs = [nbformat.v4.new_output("stream", name=name, text=text) for name, text in outputs]
    return cell


def test_saved_outputs_are_compared_up_to_timings_folders_progress_bars_and_float_noise():
    saved = [cell_with("print(table)", ("stdout", "MaxP RR 0.652 p 0.0031 (50 queries)\n")),
             cell_with("run()", ("stderr", "UntrainedHeadWarning: .../longdoc-training-cf_mwzbu/minilm: new\n"
                                           "passaging:  81%|████  | 323/400 [00:00<00:00, 3226.93it/s]\n")),
             cell_with("print(time.perf_counter() - began)", ("stdout", "BM25 0 s, MaxP 277 s\n"))]
    fresh = [cell_with("print(table)", ("stdout", "MaxP RR 0.654 p 0.0030 (50 queries)\n")),
             cell_with("run()", ("stderr", "UntrainedHeadWarning: .../longdoc-training-x81k_q0a/minilm: new\n")),
             cell_with("print(time.perf_counter() - began)", ("stdout", "BM25 1 s, MaxP 301 s\n"))]
    assert notebook_outputs.differences(saved, fresh) == []
    moved = [cell_with("print(table)", ("stdout", "MaxP RR 0.672 p 0.0030 (50 queries)\n")), *fresh[1:]]
    assert "numbers beyond the tolerance" in notebook_outputs.differences(saved, moved)[0]
    counted = [cell_with("print(table)", ("stdout", "MaxP RR 0.652 p 0.0031 (49 queries)\n")), *fresh[1:]]
    assert "(50.0, 49.0)" in notebook_outputs.differences(saved, counted)[0]
    reworded = [cell_with("print(table)", ("stdout", "MaxP rr 0.652 p 0.0031 (50 queries)\n")), *fresh[1:]]
    assert "the text differs" in notebook_outputs.differences(saved, reworded)[0]
    warned = [fresh[0], cell_with("run()", ("stderr", "UserWarning: .../longdoc-training-x81k_q0a/minilm: new\n")),
              fresh[2]]
    assert "code cell 2 ('run()'), stderr: the text differs" in notebook_outputs.differences(saved, warned)[0]
    assert notebook_outputs.differences(saved, fresh[:2]) == ["3 code cells saved, 2 run"]
    # a model's bar (verbose=None: once a call has run a few seconds), redrawn in place between two lines of a
    # fresh run only, leaves no blank line behind
    quiet = [cell_with("score()", ("stderr", "warning: one\nwarning: two\n"))]
    barred = [cell_with("score()", ("stderr", "warning: one\n\rMaxP:   0%|  | 0/3 [00:00<?, ?doc/s]"
                                              "\rMaxP: 100%|##| 3/3 [00:03<00:00,  1.00doc/s]\nwarning: two\n"))]
    assert notebook_outputs.differences(quiet, barred) == []


def test_a_cell_tagged_varies_by_cpu_compares_its_text_not_its_numbers():
    """A trained model's numbers move with another CPU's rounding: the text of its cell is compared
    (with runs of spaces collapsed: columns widen with their numbers), its numbers are not."""
    def trained(text):
        cell = cell_with("print(table)", ("stdout", text))
        cell.metadata["tags"] = [notebook_outputs.VARIES_BY_CPU]
        return cell

    saved = [trained("ParadeAttn  far  real query  0.896  p 0.527 reads the query: True\n")]
    other_cpu = [trained("ParadeAttn  far  real query   0.927  p 0.2 reads the query: True\n")]
    assert notebook_outputs.differences(saved, other_cpu) == []
    untagged = [cell_with("print(table)", ("stdout", cell.outputs[0].text)) for cell in saved + other_cpu]
    assert notebook_outputs.differences(untagged[:1], untagged[1:])  # without the tag: compared as ever
    failed = [trained("ParadeAttn  far  real query  0.927  p 0.2 reads the query: False\n")]
    assert "the text differs" in notebook_outputs.differences(saved, failed)[0]


ONE_FAMILY = ["01_quickstart", "03_training", "04_positional_bias", "05_comparing_models", "07_biencoder_zero_shot",
              "08_parade_lab"]


@pytest.mark.parametrize("name", ONE_FAMILY)
def test_notebook_corrects_every_test_it_draws_as_one_family(name):
    """Every test the notebook draws (its experiment's, its own paired tests, its query controls')
    is corrected by Holm as one family (``_stats.one_family``), and the controls' verdicts read the
    family's corrected p-values; the saved run says how many tests the family holds."""
    sources = "\n".join(cell.source for cell in code_cells(read(name)))
    assert "_stats.one_family(" in sources and 'correction="holm"' not in sources
    assert re.search(r"one family: \d+ tests \(\d+ of them the query controls'\)", all_output_text(name))


# an install line for PyPI, where the package is not (installing from the repository is fine)
PYPI_INSTALL = re.compile(r'pip install (?:-q )?"?pyterrier-longdoc(?:\[[\w,]+\])?"?(?=[\s`]|$)(?! @)')


@pytest.mark.parametrize("name", EXECUTED)
def test_no_install_line_names_pypi(name):
    text = "\n".join(cell.source for cell in read(name).cells) + (TUTORIALS / "README.md").read_text()
    assert not PYPI_INSTALL.search(text), PYPI_INSTALL.search(text).group(0)


def test_a_notebook_whose_debian_data_is_missing_runs_on_the_shipped_prose_and_names_the_package(tmp_path,
                                                                                                 monkeypatch):
    """Without FOLDOC, notebook 7 still runs (on the shipped WordNet prose, checking the same
    conclusions); only the comparison with its saved outputs, which are FOLDOC's, is left out."""
    from pyterrier_longdoc.data import dictionaries

    class Pool:
        def submit(self, function, name):
            submitted.append(name)

    submitted = []
    monkeypatch.setattr(dictionaries, "DICTD", str(tmp_path))  # no dictionary here
    monkeypatch.setattr(notebook_runner, "_pool", Pool())
    monkeypatch.setattr(notebook_runner, "_runs", {})
    assert notebook_runner.missing_data("07_biencoder_zero_shot") is None
    assert "apt-get install dict-foldoc" in notebook_runner.missing_system_data("07_biencoder_zero_shot")
    assert notebook_runner.missing_system_data("02_chunking") is None
    notebook_runner.start(["07_biencoder_zero_shot", "02_chunking"])
    assert submitted == ["07_biencoder_zero_shot", "02_chunking"]
    (tmp_path / "foldoc.dict.dz").write_bytes(b"")
    assert notebook_runner.missing_system_data("07_biencoder_zero_shot") is None
    setup = code_cells(read("07_biencoder_zero_shot"))[1].source  # the fallback, in the notebook itself
    assert 'dictd_path("foldoc")' in setup and "prose_task(" in setup


def fake_demo_output(output, *, quick=False, models=("FirstP", "MaxP", "ParadeAttn")):
    for name in models:
        (output / "models" / name).mkdir(parents=True)
        (output / "models" / name / "config.json").write_text("{}")
    (output / "results.json").write_text(json.dumps({"quick": quick}))


def test_notebooks_1_and_8_need_the_demos_output_and_name_the_command(tmp_path, monkeypatch):
    """Notebook 1 loads the models README's first command saved, notebook 8 reuses its passage stage: without a
    full run's models neither is started (in CI, which runs that command first, a skip fails); a quick run's or a
    partial folder is not one."""
    monkeypatch.setattr(notebook_runner, "ROOT", tmp_path)
    assert "pyterrier-longdoc demo" in notebook_runner.missing_data("01_quickstart")
    assert "pyterrier-longdoc demo" in notebook_runner.missing_data("08_parade_lab")
    fake_demo_output(tmp_path / "demo-output", quick=True)
    assert notebook_runner.missing_data("01_quickstart") is not None
    shutil.rmtree(tmp_path / "demo-output")
    fake_demo_output(tmp_path / "demo-output", models=("FirstP", "ParadeAttn"))  # MaxP missing
    assert notebook_runner.missing_data("01_quickstart") is not None
    (tmp_path / "demo-output" / "models" / "MaxP").mkdir()
    (tmp_path / "demo-output" / "models" / "MaxP" / "config.json").write_text("{}")
    assert notebook_runner.missing_data("01_quickstart") is None
    assert notebook_runner.missing_data("02_chunking") is None


def test_demo_models_runs_the_demo_where_its_models_are_missing(tmp_path, monkeypatch):
    """Where README's first command has not run, the notebook runs it (as README writes it) instead of
    failing; where its models are there, they are used as they are."""
    import subprocess

    module = tutorial_module("_warm_start")
    commands = []

    def fake_run(command, **options):
        commands.append(command[1:])
        fake_demo_output(Path(command[-1]))

    monkeypatch.setattr(subprocess, "run", fake_run)
    output = tmp_path / "demo-output"
    assert module.demo_models(output) == output / "models" and (output / "models" / "ParadeAttn").is_dir()
    assert commands == [["-m", "pyterrier_longdoc.cli", "demo", "--output", str(output)]]
    assert module.demo_models(output) == output / "models" and len(commands) == 1


def test_warm_start_is_trained_once_and_keyed_by_its_settings(tmp_path, monkeypatch):
    """A second call loads the cached folder; other settings (precision, layers, seed) train
    another one."""
    module = tutorial_module("_warm_start")
    trained = []

    def fake_passage_stage(backbone, train, directory, dtype, seed=42):
        trained.append((dtype, seed))
        directory.mkdir(parents=True)
        return str(directory)

    monkeypatch.setenv("PYTERRIER_LONGDOC_TUTORIALS_CACHE", str(tmp_path))
    monkeypatch.setattr(module, "passage_stage", fake_passage_stage)
    monkeypatch.setattr(module, "packaged_minilm", lambda layers, directory: str(directory))
    first = module.warm_start()
    assert module.warm_start() == first and trained == [("fp32", 42)]
    assert module.warm_start(precision="bf16") != first
    assert module.warm_start(seed=1) != first
    assert trained == [("fp32", 42), ("bf16", 42), ("fp32", 1)]
    monkeypatch.setenv("PYTERRIER_LONGDOC_TUTORIALS_DTYPE", "fp16")
    with pytest.raises(ValueError, match="fp32 or bf16"):
        module.warm_start()


def test_warm_start_needs_no_fcntl_and_two_processes_train_it_once(tmp_path, monkeypatch):
    """fcntl is POSIX-only (Windows has none): the warm start's lock is filelock's, which still keeps
    two callers from training it at once."""
    import threading
    import time

    monkeypatch.setitem(sys.modules, "fcntl", None)  # `import fcntl` raises ImportError, as on Windows
    monkeypatch.delitem(sys.modules, "_warm_start", raising=False)
    module = tutorial_module("_warm_start")
    trained = []

    def slow_passage_stage(backbone, train, directory, dtype, seed=42):
        trained.append(seed)
        time.sleep(0.5)  # the other caller arrives while this one trains
        directory.mkdir(parents=True)
        return str(directory)

    monkeypatch.setenv("PYTERRIER_LONGDOC_TUTORIALS_CACHE", str(tmp_path))
    monkeypatch.setattr(module, "passage_stage", slow_passage_stage)
    monkeypatch.setattr(module, "packaged_minilm", lambda layers, directory: str(directory))
    folders = []
    callers = [threading.Thread(target=lambda: folders.append(module.warm_start())) for _ in range(2)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join()
    assert trained == [42] and len(set(folders)) == 1 and len(folders) == 2


URL = "https://example.org/pyterrier-longdoc.git"  # what a user sets REPOSITORY to


def colab_block(name, repository: str | None = None) -> ast.Module:
    """The first code cell's statements up to and including its ``if "google.colab" in sys.modules`` block,
    with REPOSITORY set to ``repository`` as a user sets it (the placeholder when None)."""
    source = code_cells(read(name))[0].source
    if repository is not None:
        source = source.replace('REPOSITORY = "<this repository>"', f"REPOSITORY = {repository!r}", 1)
    tree = ast.parse(source)
    end = next(i for i, node in enumerate(tree.body)
               if isinstance(node, ast.If) and "google.colab" in ast.unparse(node.test))
    return ast.Module(body=tree.body[:end + 1], type_ignores=[])


CLONE = "/content/pyterrier-longdoc"


def on_colab(monkeypatch, first_run: bool) -> None:
    """Colab as the first cell sees it: before the install (no clone, no library) or after the restart."""
    import os
    import types

    isdir, exists, find_spec = os.path.isdir, os.path.exists, importlib.util.find_spec
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    monkeypatch.setattr(os.path, "isdir", lambda path: not first_run if path == CLONE else isdir(path))
    monkeypatch.setattr(os.path, "exists", lambda path: not first_run if "/dictd/" in path else exists(path))
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda module: None if first_run and module == "pyterrier_longdoc" else find_spec(module))


@pytest.mark.parametrize("name", EXECUTED)
@pytest.mark.parametrize("first_run", [True, False], ids=["first run", "after the restart"])
def test_first_cell_installs_the_library_on_colab_then_restarts(name, first_run, monkeypatch, capsys):
    """On Colab the first code cell clones the repository named by REPOSITORY (the notebooks' helper
    modules live there), installs the library with its [demo] extra and
    restarts the runtime; after the restart it only moves into the clone's tutorials folder.
    Elsewhere it does nothing."""
    import os
    import subprocess

    calls = []
    monkeypatch.setattr(subprocess, "run", lambda command, check: calls.append(command))
    monkeypatch.setattr(os, "chdir", lambda path: calls.append(["cd", path]))
    monkeypatch.setattr(os, "kill", lambda pid, signal: calls.append(["kill", signal]))
    exec(compile(colab_block(name), name, "exec"), {})  # not on Colab: nothing happens, placeholder or not
    assert calls == []

    on_colab(monkeypatch, first_run)
    namespace = {}
    exec(compile(colab_block(name, URL), name, "exec"), namespace)
    assert namespace["REPOSITORY"] == URL
    pip = [sys.executable, "-m", "pip", "install", "-q"]
    moved = ["cd", f"{CLONE}/tutorials"]
    foldoc = ([["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "dict-foldoc"]]
              if name == "07_biencoder_zero_shot" else [])
    expected = [["git", "clone", "-q", "--depth", "1", URL, CLONE], moved, *foldoc, pip + [f"{CLONE}[demo]"],
                ["kill", 9]]
    assert calls == (expected if first_run else [moved])
    assert ("the runtime restarts now" in capsys.readouterr().out) == first_run


@pytest.mark.parametrize("name", EXECUTED)
def test_first_cell_on_colab_names_the_unset_repository(name, monkeypatch):
    """The project records no public URL: on Colab, a first cell whose REPOSITORY is still the
    placeholder stops with an error naming the variable, before cloning or installing anything;
    README's Install says where to set it."""
    import subprocess

    calls = []
    monkeypatch.setattr(subprocess, "run", lambda command, check: calls.append(command))
    on_colab(monkeypatch, first_run=True)
    with pytest.raises(ValueError, match="REPOSITORY, in this cell: set it to the git URL"):
        exec(compile(colab_block(name), name, "exec"), {})
    assert calls == []
    assert "REPOSITORY" in README and "git clone <this repository>" in README


def test_queries_needed_and_intervals():
    stats = tutorial_module("_stats")
    assert stats.queries_needed(0.1, 0.5) == 197  # ((1.96 + 0.84) * 0.5 / 0.1)^2 = 196.2
    assert stats.queries_needed(0.05, 0.5) > 4 * stats.queries_needed(0.1, 0.5) - 4
    mean, low, high = stats.interval([0.0, 1.0] * 10)
    assert mean == 0.5 and low < 0.5 < high and high - 0.5 == pytest.approx(0.5 - low)
    near_ceiling = [1.0] * 9 + [0.25]  # RR piled at 1: the t-interval runs past the measure's range
    assert stats.interval(near_ceiling)[2] > 1
    mean, low, high = stats.measure_interval(near_ceiling)
    assert (mean, low) == stats.interval(near_ceiling)[:2] and high == 1.0


def test_one_family_corrects_the_tests_and_the_controls_together():
    """``_stats.one_family``: Holm over the notebook's tests and every control's p-value at once; the
    controls' ``p-value corrected`` becomes the family's, so a verdict that held within its own table
    (two tests) can fall once the family is larger."""
    import pandas as pd

    from pyterrier_longdoc.evaluation import reads_the_query

    stats = tutorial_module("_stats")
    controls = pd.DataFrame({"group": "near", "ranking": ["real query", "another query's text", "constant query",
                                                          "random order"],
                             "queries": 50, "RR": [0.6, 0.47, 0.44, 0.46], "difference": [0.0, -0.13, -0.16, -0.14],
                             "p-value": [float("nan"), 0.01, 0.004, 0.006],
                             "p-value corrected": [float("nan"), 0.02, 0.012, float("nan")]})
    assert reads_the_query(controls)  # within its own table
    tests = pd.DataFrame({"group": "far", "test": [f"t{i}" for i in range(10)], "p-value": [1e-6] * 9 + [0.5]})
    family, corrected = stats.one_family(tests, {"MaxP": controls})
    # 13 tests (the random order's is one of the controls'): the smallest times 13, then 4, 3, 2 and 1
    assert list(family["p-value (Holm)"].round(6)) == [1.3e-5] * 9 + [0.5]
    assert list(corrected["MaxP"]["p-value corrected"].round(6)[1:]) == [0.02, 0.016, 0.018]
    assert not reads_the_query(corrected["MaxP"].assign(**{"p-value corrected": [float("nan"), 0.06, 0.012, 0.04]}))
    assert controls["p-value corrected"].iloc[1] == 0.02  # the caller's table is left as it was


# a folder of some machine: what saved outputs must not show (they are read on every machine)
LOCAL_FOLDER = re.compile(r"(?<![\w.])/(?:tmp|work|root|home|Users|private|var/folders)/")


@pytest.mark.parametrize("name", EXECUTED)
def test_saved_outputs_name_no_local_folder(name):
    leaks = [line for cell in code_cells(read(name)) for line in output_text(cell).splitlines()
             if LOCAL_FOLDER.search(line)]
    assert not leaks, leaks[:3]


def test_warnings_print_short_paths():
    display = tutorial_module("_display")
    line = display.short_paths("MaxP over /work/x/.venv/lib/site-packages/minilm/model: its head is new")
    assert line == "MaxP over .../minilm/model: its head is new" and not LOCAL_FOLDER.search(line)
    assert display.short_paths("RR 0.5/1.0 and a/b/c") == "RR 0.5/1.0 and a/b/c"  # not folders


def test_warm_start_report_says_how_it_was_trained(tmp_path):
    folder = tmp_path / "warm-start-x" / "cross-encoder"
    folder.mkdir(parents=True)
    (folder / "training_log.json").write_text('{"steps": 40, "loss_first": 1.0, "loss_last": 0.67}')
    (folder.parent / "settings.json").write_text('{"seed": 42, "trained_in_seconds": 22}')
    line = tutorial_module("_warm_start").report(str(folder))
    assert "40 passage-training steps" in line and "1.00 -> 0.67" in line and "in 22 s" in line


@pytest.mark.parametrize("name", EXECUTED)
def test_saved_outputs_come_from_one_full_run(name):
    assert_one_full_run(code_cells(read(name)))


def assert_one_full_run(cells):
    """Saved outputs of one run, top to bottom, without an error."""
    assert [cell.execution_count for cell in cells] == list(range(1, len(cells) + 1)), "run top to bottom, once"
    for cell in cells:
        assert all(output["output_type"] != "error" for output in cell.outputs), cell.source[:60]
    assert ran_to_the_end(cells)


@pytest.mark.parametrize("name", EXECUTED)
def test_notebook_states_its_run_time_and_links_its_solutions(name):
    notebook = read(name)
    nbformat.validate(notebook)
    text = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "markdown")
    assert re.search(r"\*\*.*[Rr]un time", notebook.cells[0].source), "the first cell states the run time"
    assert "**Learning objectives.**" in notebook.cells[0].source, "the first cell states the learning objectives"
    link = f"solutions/{name}_solutions.py"
    assert link in text and (TUTORIALS / link).exists()
    exercises = re.findall(r"^(\d+)\. ", text.split("## Exercises", 1)[1], flags=re.M)
    assert exercises and len(solution_cells(name)) >= len(exercises)


@pytest.mark.parametrize("name", EXECUTED)
def test_code_uses_names_the_library_has(name):
    """Every ``from pyterrier_longdoc... import x`` in the notebook and its solutions resolves."""
    sources = [cell.source for cell in code_cells(read(name))] + solution_cells(name)
    for source in sources:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pyterrier_longdoc"):
                module = importlib.import_module(node.module)
                for alias in node.names:
                    assert hasattr(module, alias.name), f"{node.module}.{alias.name} in {name}"


def output_text(cell) -> str:
    """What a code cell printed or displayed, as plain text."""
    parts = []
    for output in cell.outputs:
        parts.append(output.get("text", ""))
        parts.append(output.get("data", {}).get("text/plain", ""))
    return "\n".join(parts)


def tagged(cells, tag):
    [cell] = [cell for cell in cells if tag in cell.metadata.get("tags", [])]
    return cell


def all_output_text(name) -> str:
    return "\n".join(output_text(cell) for cell in code_cells(read(name)))


@pytest.mark.parametrize("name", ["04_positional_bias", "05_comparing_models", "07_biencoder_zero_shot"])
def test_notebook_prints_and_asserts_its_query_controls(name):
    """The models compared read the query: the notebook prints the controls (another query's text, a
    constant query, a random order) and asserts the verdict, so a run where they do not hold fails."""
    sources = "\n".join(cell.source for cell in code_cells(read(name)))
    assert "query_controls(" in sources and "reads_the_query(" in sources
    # the verdict asserted, whichever way it goes (notebook 5: MaxP's reading of near queries is not shown)
    assert re.search(r"assert all\(\w*verdicts\.values\(\)\)|assert (not )?reads_the_query\(|assert (not )?verdict", sources)
    shown = all_output_text(name)
    assert all(ranking in shown for ranking in ("real query", "another query's text", "constant query", "random order"))


def test_comparing_models_checks_selection_against_the_start_and_the_ceiling():
    """Notebook 5 asserts that fine-tuning kept no model below its start (validation-based selection,
    and no significant loss on the test queries) and that no model sits at the ceiling."""
    sources = "\n".join(cell.source for cell in code_cells(read("05_comparing_models")))
    assert 'assert (chosen["best"] >= chosen["start"]).all()' in sources
    assert "never worse" in sources and "< CEILING" in sources
    assert "queries needed (near)" in all_output_text("05_comparing_models")


def test_positional_bias_notebook_pools_a_near_biased_benchmark_and_tests_far_relevant():
    """Notebook 4 shows its title's claim with a benchmark weighted as MS MARCO's positions, and its
    FarRelevant table has intervals and paired tests (against FirstP, and far against near), on hard
    candidates, with no comparison drawn at the ceiling and MaxP below it in every group."""
    shown = all_output_text("04_positional_bias")
    for words in ("near-biased benchmark", "gain over FirstP", "95% low", "p against FirstP (Holm)", "far - near",
                  "p (Holm)"):
        assert words in shown, words
    markdown = "\n".join(cell.source for cell in read("04_positional_bias").cells if cell.cell_type == "markdown")
    assert "128 tokens" in markdown and "notebook 7 keeps" in markdown  # the 512-token confound, explained
    sources = "\n".join(cell.source for cell in code_cells(read("04_positional_bias")))
    # no comparison at the ceiling: the models compared are asserted below it, the one above it is not compared
    assert "CEILING = 0.95" in sources and sources.count("< CEILING") >= 3
    [highest] = re.findall(r"highest RR of a compared system in a query group: ([0-9.]+)", shown)
    assert float(highest) < 0.95
    assert re.search(r"its kernel used \d+ CPU seconds", shown)  # the run's cost, beside its time
    assert "retriever=" in sources  # FarRelevant's candidates: BM25's hard negatives, not random documents
    # the headline MaxP (100-word windows) has room in every group: tested against FirstP on section 3's near
    # and far queries and in both FarRelevant variants
    assert len(re.findall(r"FarRelevant (?:near|far) +MaxP - FirstP", shown)) == 2
    assert len(re.findall(r"^\d+ +(?:near|far) +MaxP - FirstP", shown, flags=re.M)) == 2
    assert 'table.loc[("far", "MaxP"), "p against FirstP (Holm)"] < 0.05' in sources
    assert 'corrected["near", "MaxP - FirstP"] < 0.05' in sources


@pytest.mark.parametrize("name", ["04_positional_bias", "08_parade_lab"])
def test_notebook_teaches_explain_with_a_control(name):
    """Where the model looked: ``explain`` on a window-based model, set against a control (notebook 4:
    a window picked at random; notebook 8's exercise: the near documents, where "always the last
    window" holds no answer)."""
    sources = "\n".join(cell.source for cell in code_cells(read(name)))
    assert ".explain(" in sources
    if name == "04_positional_bias":
        assert "a random window holds it" in all_output_text(name) and "best window holds the answer" in sources
    else:
        solution = solution_cells(name)[0]
        assert ".explain(" in solution and 'shares.loc["near", "holds the answer"] > shares.loc["near", "is the last' \
            in solution


def test_parade_lab_states_no_trained_models_number():
    """Another CPU's rounding moves what training gives: the lab's text states none of its numbers (three
    decimals, as an RR or a p-value prints), and the cells that print them are tagged varies-by-cpu."""
    notebook = read("08_parade_lab")
    text = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "markdown")
    assert not re.findall(r"\b\d\.\d{3}\b", text), re.findall(r"\b\d\.\d{3}\b", text)
    trained = [cell for cell in code_cells(notebook) if notebook_outputs.VARIES_BY_CPU in cell.metadata.get("tags", [])]
    assert any("train_long_document_ranker(" in cell.source for cell in trained)
    assert any("pt.Experiment(" in cell.source for cell in trained)

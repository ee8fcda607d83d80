"""The tutorials: notebooks 1-5 run top to bottom (then their exercises' solutions, in the same
kernel), their saved outputs come from such a run, and notebook 6 uses the real API."""
import ast
import importlib
import re
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")

ROOT = Path(__file__).resolve().parents[1]
TUTORIALS = ROOT / "tutorials"
EXECUTED = ["01_quickstart", "02_chunking", "03_training", "04_positional_bias", "05_comparing_models"]
ALL = EXECUTED + ["06_real_collections"]


def read(name):
    return nbformat.read(TUTORIALS / f"{name}.ipynb", as_version=4)


def solution_cells(name) -> list[str]:
    """The solution file's cells: code between ``# %%`` lines."""
    text = (TUTORIALS / "solutions" / f"{name}_solutions.py").read_text()
    return [cell.strip() for cell in re.split(r"^# %%.*$", text, flags=re.M)[1:] if cell.strip()]


def code_cells(notebook):
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


def ran_to_the_end(cells) -> bool:
    """The notebook's last cell printed its run time: every cell before it ran."""
    return "This notebook ran in" in cells[-1].outputs[0]["text"]


@pytest.mark.parametrize("name", EXECUTED)
def test_notebook_and_solutions_run(name, tmp_path):
    """A failing cell fails the test (nbclient raises CellExecutionError, naming the cell)."""
    from nbclient import NotebookClient

    notebook = read(name)
    cells = code_cells(notebook)
    notebook.cells += [nbformat.v4.new_code_cell(source) for source in solution_cells(name)]
    client = NotebookClient(notebook, timeout=1800, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    assert ran_to_the_end(cells)


@pytest.mark.parametrize("name", EXECUTED)
def test_saved_outputs_come_from_one_full_run(name):
    cells = code_cells(read(name))
    assert [cell.execution_count for cell in cells] == list(range(1, len(cells) + 1)), "run top to bottom, once"
    for cell in cells:
        assert all(output["output_type"] != "error" for output in cell.outputs), cell.source[:60]
    assert ran_to_the_end(cells)


@pytest.mark.parametrize("name", ALL)
def test_notebook_states_its_run_time_and_links_its_solutions(name):
    notebook = read(name)
    nbformat.validate(notebook)
    text = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "markdown")
    assert re.search(r"\*\*.*[Rr]un time", notebook.cells[0].source), "the first cell states the run time"
    link = f"solutions/{name}_solutions.py"
    assert link in text and (TUTORIALS / link).exists()
    exercises = re.findall(r"^(\d+)\. ", text.split("## Exercises", 1)[1], flags=re.M)
    assert exercises and len(solution_cells(name)) >= len(exercises)


@pytest.mark.parametrize("name", ALL)
def test_code_uses_names_the_library_has(name):
    """Every ``from pyterrier_longdoc... import x`` in the notebook and its solutions resolves
    (notebook 6 is not executed here, so this is its check against the API)."""
    sources = [cell.source for cell in code_cells(read(name))] + solution_cells(name)
    for source in sources:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pyterrier_longdoc"):
                module = importlib.import_module(node.module)
                for alias in node.names:
                    assert hasattr(module, alias.name), f"{node.module}.{alias.name} in {name}"


def test_readme_links_every_tutorial():
    readme = (ROOT / "README.md").read_text()
    for name in ALL:
        assert f"tutorials/{name}.ipynb" in readme, name

"""The papers' rows (pyterrier_longdoc.reproduce): every row builds its model and prints its plan,
and one row of each kind runs end to end, offline, on small ir_datasets stand-ins with a tiny
model: MS MARCO training, the TREC DL and dev test sets, Robust04's five folds, FarRelevant."""
import dataclasses
import json

import pytest
from helpers.tiny_bert import write_tiny_bert
from helpers.irds_standin import register_paper_standins
from helpers.llm_backbones import write_tiny_lm

from pyterrier_longdoc.cli import main
from pyterrier_longdoc.reproduce import PAPERS, ROWS, Sources, find_rows, gpu_hours, plan, run_row, with_recipe
from pyterrier_longdoc.reproduce.registry import NOT_FOUND

# models built over a plain encoder (the tiny random BERT) get a new head: expected here, not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::pyterrier_longdoc.UntrainedHeadWarning")

ROW_IDS = [f"{r.paper.key}-{r.table}-{r.name}" for r in ROWS]


@pytest.fixture(scope="module")
def standins(tmp_path_factory):
    return register_paper_standins(tmp_path_factory.mktemp("standins"))


@pytest.fixture(scope="module")
def backbones(tmp_path_factory):
    folder = tmp_path_factory.mktemp("backbones")
    return {"bert": str(write_tiny_bert(folder / "bert")), "llm": str(write_tiny_lm(folder / "llm"))}


def _backbone(row, backbones) -> str:
    return backbones["llm" if row.model.startswith("llm_") else "bert"]


def _local(row, backbones) -> dict:
    """PARADE PRETR's aggregator layers come from the hub by default: a local encoder here."""
    return {"aggregator_model": backbones["bert"]} if "pretr" in row.model or row.model.endswith("_q") else {}


def test_the_registry_covers_the_three_tables_with_a_source_for_every_value():
    tables = {(r.paper.key, r.table) for r in ROWS}
    assert tables == {("boytsov2022", 4), ("positional-bias", 1), ("positional-bias", 4)}
    assert {c.column.name for r in find_rows("positional-bias", 1) for c in r.cells} >= {
        "msmarco-dev", "trec-dl-2019", "trec-dl-2020", "trec-dl-2021", "robust04-title", "robust04-desc"}
    for row in ROWS:
        for cell in row.cells:  # a published value has its source; a missing one says so
            assert (cell.published is None and cell.source == NOT_FOUND) or (cell.published and cell.source)
    names = [(r.paper.key, r.table, r.name) for r in ROWS]
    assert len(names) == len(set(names))


def test_unknown_papers_tables_and_rows_are_named():
    with pytest.raises(ValueError, match="papers: boytsov2022, positional-bias"):
        find_rows("boytsov2023")
    with pytest.raises(ValueError, match="tables: 1, 4"):
        find_rows("positional-bias", 2)
    with pytest.raises(ValueError, match="no row 'maxq'.*maxp"):
        find_rows("boytsov2022", 4, "maxq")


@pytest.mark.parametrize("row", ROWS, ids=ROW_IDS)
def test_every_row_builds_its_model_and_prints_its_plan(row, backbones, capsys):
    from pyterrier_longdoc._registry import model_class

    model = model_class(row.model)(_backbone(row, backbones), **row.model_settings, **_local(row, backbones))
    assert model.name == row.model and all(model.settings[k] == v for k, v in row.settings if k in model.settings)
    assert main(["reproduce", row.paper.key, "--table", str(row.table), "--row", row.name, "--plan"]) == 0
    printed = capsys.readouterr().out
    for cell in row.cells:
        assert cell.column.irds_ids[0] in printed and cell.column.metric in printed
    assert "GPU-hours" in printed and "disk: about" in printed and row.command in printed
    assert gpu_hours(row)["total"] > 0


def test_a_whole_table_plans_in_one_command(capsys):
    assert main(["reproduce", "boytsov2022", "--plan"]) == 0
    assert capsys.readouterr().out.count("GPU-hours") == len(find_rows("boytsov2022"))


def _check_results(folder, row):
    results = json.loads((folder / "results.json").read_text())
    assert [c["column"] for c in results["columns"]] == [c.name for c in row.columns]
    for column in results["columns"]:
        assert column["published"] is None and column["source"] == NOT_FOUND
        assert set(column["measured"]) == {"0"} and 0 <= column["mean"] <= 1
    assert results["gpus"] == 0 and results["gpu_hours"] == 0 and not results["comparable"]
    table = (folder / "results.md").read_text()
    assert "| published | seed 0 | mean |" in table and "Not comparable" in table
    return results


@pytest.mark.filterwarnings("ignore::pyterrier_longdoc.training.selection.ChanceLevelWarning")  # a toy fit of a few steps
def test_a_row_runs_end_to_end_from_the_command_line(standins, backbones, tmp_path, capsys):
    """MS MARCO training, dev and TREC DL, and Robust04's folds (fine-tuned per fold)."""
    row = find_rows("boytsov2022", 4, "firstp")[0]
    argv = ["reproduce", "boytsov2022", "--table", "4", "--row", "firstp", "--output", str(tmp_path),
            "--backbone", backbones["bert"], "--seeds", "0", "--passage-steps", "2", "--max-queries", "8",
            "--dataset", *[f"{k}={v}" for k, v in standins.items()]]
    assert main(argv) == 0
    folder = tmp_path / "boytsov2022-table4-firstp"
    _check_results(folder, row)
    assert f"wrote {folder / 'results.md'}" in capsys.readouterr().out


# (paper, table, row, how many of its columns): Robust04's folds run in the command-line test; the
# other families run their MS MARCO or FarRelevant columns
@pytest.mark.filterwarnings("ignore::pyterrier_longdoc.CroppingWarning")  # long toy documents
@pytest.mark.parametrize("paper, table, name, columns", [
    ("boytsov2022", 4, "parade-attn", 3), ("positional-bias", 1, "cedr-knrm", 4),
    ("positional-bias", 1, "parade-transf-pretr-lateir", 1), ("positional-bias", 4, "longformer", None),
    ("positional-bias", 4, "tinyllama-longp", 1)])
def test_one_row_of_each_model_family_runs_end_to_end(paper, table, name, columns, standins, backbones, tmp_path):
    row = with_recipe(find_rows(paper, table, name)[0], seeds=(0,))
    row = dataclasses.replace(row, cells=row.cells[:columns])
    sources = Sources(tmp_path, standins, max_queries=6)
    run_row(row, tmp_path, sources, backbone=_backbone(row, backbones), passage_steps=2,
            model_options=_local(row, backbones), log=lambda _: None)
    assert _check_results(tmp_path, row)["row"] == name


def test_a_run_file_replaces_bm25_and_a_bad_one_is_refused(standins, backbones, tmp_path):
    import pyterrier as pt

    row = with_recipe(find_rows("boytsov2022", 4, "maxp")[0], seeds=(0,))
    sources = Sources(tmp_path, standins, max_queries=6)
    train = sources.collection("msmarco-document/train", "msmarco-document/train")
    run = sources.bm25(train.irds_id, train.dataset, 3)(train.topics)
    pt.io.write_results(run, str(tmp_path / "bm25.run"))
    with_run = Sources(tmp_path, standins, {"msmarco-dev": str(tmp_path / "bm25.run")}, max_queries=6)
    dev = with_run.collection("msmarco-document/dev", "msmarco-document/dev")
    candidates = with_run.candidates(dev, "msmarco-dev", 2)
    assert candidates.groupby("qid").size().max() == 2 and set(candidates["rank"]) == {0, 1}
    assert main(["reproduce", "boytsov2022", "--row", "maxp", "--run", "msmarco-dev=missing.run"]) == 2
    assert main(["reproduce", "boytsov2022", "--row", "maxp", "--dataset", "no-equals-sign"]) == 2
    assert row.name == "maxp"


def test_load_collection_reads_a_named_collection_from_another_id(standins):
    from pyterrier_longdoc.data.datasets import load_collection

    loaded = load_collection("robust04-desc", irds_id=standins["disks45/nocr/trec-robust-2004"])
    assert loaded.irds_id == standins["disks45/nocr/trec-robust-2004"] and len(loaded.topics) == 10
    with pytest.raises(ValueError, match="irds_id= gives another source"):
        load_collection("irds:x", irds_id="y")


def test_papers_have_citations():
    assert all(p.citation and p.url.startswith("https://arxiv.org/") for p in PAPERS.values())
    assert "GPU-hours" in plan(ROWS[0])

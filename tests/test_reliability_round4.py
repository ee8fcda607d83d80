"""Issue 44: the last silent paths, and drop-in behaviour where users switch from
sentence-transformers (CrossEncoder), PyTerrier (GridSearch, artifacts) and rank_llm."""
import warnings

import pytest

import pyterrier_longdoc as pl
from pyterrier_longdoc.cli import build_parser, main
from pyterrier_longdoc.training.arguments import TrainingArguments
from pyterrier_longdoc.training.selection import Selection, TrainingBelowStartWarning


# --- item 11: an unknown valid_metric fails where it is given ---

@pytest.mark.parametrize("given", [dict(valid_metric="NDCG10"), dict(valid_metric=10)])
def test_an_unknown_valid_metric_fails_without_validation_data(given):
    with pytest.raises(ValueError, match=r"valid_metric .* is not an ir_measures measure"):
        TrainingArguments(**given)


# --- item 12: the advice of TrainingBelowStartWarning follows the run's lr ---

def below_start_warning(lr):
    selection = Selection("RR@10", patience=None)
    model = __import__("torch").nn.Linear(1, 1)
    selection.record(0.9, 0, model)
    selection.record(0.5, 1, model)
    with pytest.warns(TrainingBelowStartWarning) as caught:
        selection.warn_if_below_start(restored=True, lr=lr)
    return str(caught[0].message)


def test_below_start_advises_a_lower_lr_only_above_the_papers_range():
    in_range = below_start_warning(2e-5)  # the recipe's rate
    assert "A lower lr" not in in_range and "already in the papers' range" in in_range and "2e-05" in in_range
    assert "A lower lr" in below_start_warning(1e-4) and "this run used 0.0001" in below_start_warning(1e-4)


# --- item 17: the command line takes whole option names and points to the right one ---

def test_cli_refuses_an_abbreviated_option(capsys):
    with pytest.raises(SystemExit):  # not read as --model x
        build_parser().parse_args(["rerank", "--mod", "x", "--topics", "t", "--output", "o"])
    assert "required: --model" in capsys.readouterr().err


def test_cli_model_name_without_backbone_says_to_add_it(trec_files, tmp_path, capsys):
    assert main(["rerank", "--model", "maxp", "--topics", trec_files["topics"], "--run", trec_files["run"],
                 "--docs", trec_files["docs"], "--output", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "--model maxp: no such directory; 'maxp' is a model name" in err and "add --backbone DIR" in err


def test_cli_fit_option_typo_points_to_the_option(trec_files, tiny_bert, tmp_path, capsys):
    assert main(["train", "--model", "maxp", "--backbone", tiny_bert, "--topics", trec_files["topics"],
                 "--run", trec_files["run"], "--docs", trec_files["docs"], "--qrels", trec_files["qrels"],
                 "--output", str(tmp_path / "m"), "--fit", "epoch=1"]) == 2
    assert "unknown name 'epoch' (did you mean --epochs?)" in capsys.readouterr().err


def test_fit_options_typo_points_to_the_option(tiny_bert):
    with pytest.raises(TypeError, match=r"unknown fit option 'epoch' \(did you mean 'epochs'\?\)"):
        pl.MaxP(tiny_bert, fit_options={"epoch": 1}, window=12, stride=6, max_length=48, max_query_tokens=8)

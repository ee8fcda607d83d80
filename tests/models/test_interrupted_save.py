"""Saving over a saved model is atomic: a save that fails or is killed at any point leaves the old
model or the complete new one loadable at the path, never neither and never a mix (the old
config.json with the new weights), and the folder's other entries survive a save."""
import shutil

import numpy as np
import pytest

import pyterrier_longdoc as pl
from pyterrier_longdoc import _card
from pyterrier_longdoc.engine import config as _config, files as _files, weights as _weights

pytestmark = pytest.mark.filterwarnings("ignore::pyterrier_longdoc.UntrainedHeadWarning")

QUERIES, TEXTS = ["alpha beta", "gamma"], ["alpha beta gamma delta " * 6, "delta epsilon gamma " * 5]
SETTINGS = {"window": 12, "stride": 6, "max_length": 48, "max_query_tokens": 8}


class Killed(BaseException):
    """What a kill -9 leaves: no handler runs (the cleanup is switched off in the test)."""


@pytest.fixture()
def old_and_new(tiny_bert, tmp_path):
    old, new = pl.MaxP(tiny_bert, seed=0, **SETTINGS), pl.MaxP(tiny_bert, seed=1, **SETTINGS)
    old.save_pretrained(tmp_path / "model")
    scores = old.score_texts(QUERIES, TEXTS), new.score_texts(QUERIES, TEXTS)
    assert not np.allclose(*scores)
    return new, tmp_path / "model", scores


def loaded_scores(path, **options):
    return pl.LongDocReranker.from_pretrained(path, **options).score_texts(QUERIES, TEXTS)


def test_a_save_that_fails_while_writing_the_weights_leaves_the_old_model(old_and_new, monkeypatch):
    new, path, (old_scores, _) = old_and_new

    def failing_writer(model, file):
        file.write_bytes(b"half a file")
        raise OSError("disk full")

    monkeypatch.setattr(_weights, "save_weights", failing_writer)
    with pytest.raises(OSError, match="disk full"):
        new.save_pretrained(path)
    np.testing.assert_allclose(loaded_scores(path), old_scores, atol=1e-6)
    np.testing.assert_allclose(loaded_scores(path, verify_weights=False), old_scores, atol=1e-6)
    assert [p.name for p in path.parent.iterdir()] == ["model"]  # nothing left beside it


@pytest.mark.parametrize("step", ["tokenizer", "weights", "config", "card", "swap"])
def test_a_kill_at_any_step_leaves_the_old_model_loadable(old_and_new, monkeypatch, step):
    new, path, (old_scores, new_scores) = old_and_new
    monkeypatch.setattr(shutil, "rmtree", lambda *args, **kwargs: None)  # a killed process cleans nothing

    def kill(*args, **kwargs):
        raise Killed

    target = {"tokenizer": (_weights, "save_tokenizer"), "weights": (_weights, "save_weights"),
              "config": (_config.ModelConfig, "write"), "card": (_card, "model_card"),
              "swap": (_files, "_exchange")}[step]
    monkeypatch.setattr(*target, kill)
    with pytest.raises(Killed):
        new.save_pretrained(path)
    np.testing.assert_allclose(loaded_scores(path), old_scores, atol=1e-6)
    np.testing.assert_allclose(loaded_scores(path, verify_weights=False), old_scores, atol=1e-6)


@pytest.mark.parametrize("exchange", ["renameat2", "two renames"])
def test_a_completed_save_replaces_the_model_and_keeps_the_folders_other_entries(old_and_new, monkeypatch, exchange):
    new, path, (_, new_scores) = old_and_new
    if exchange == "two renames":
        monkeypatch.setattr(_files, "_renameat2", None)
    elif _files._renameat2 is None:
        pytest.skip("renameat2 is Linux's")
    (path / "passage-stage").mkdir()
    (path / "passage-stage" / "config.json").write_text("{}")
    (path / "notes.txt").write_text("mine")
    new.save_pretrained(path)
    np.testing.assert_allclose(loaded_scores(path), new_scores, atol=1e-6)
    assert (path / "passage-stage" / "config.json").read_text() == "{}" and (path / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in path.parent.iterdir()) == ["model"]


def test_saving_onto_a_file_names_it(tiny_bert, tmp_path):
    (tmp_path / "model").write_text("not a folder")
    with pytest.raises(NotADirectoryError, match="model is a file"):
        pl.MaxP(tiny_bert, seed=0, **SETTINGS).save_pretrained(tmp_path / "model")

"""Saving over a saved model is atomic: a save that fails or is killed at any point leaves the old
model or the complete new one loadable at the path, never neither and never a mix (the old
config.json with the new weights), and the folder's other entries survive a save."""
import errno
import os
import shutil
import signal
import stat

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


# --- a full disk: an OSError naming the folder, the old model kept ---

def full_disk_in_safetensors(*args, **kwargs):
    from safetensors import SafetensorError

    raise SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)")  # its words


def full_disk_in_python(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")  # a write's error names no file


@pytest.mark.parametrize("writer", [full_disk_in_safetensors, full_disk_in_python], ids=["safetensors", "python"])
def test_a_full_disk_is_an_os_error_naming_the_folder_and_the_old_model_stays(old_and_new, monkeypatch, writer):
    import safetensors.torch

    new, path, (old_scores, _) = old_and_new
    if writer is full_disk_in_safetensors:
        monkeypatch.setattr(safetensors.torch, "save_file", writer)
    else:
        monkeypatch.setattr(_weights, "save_tokenizer", writer)
    with pytest.raises(OSError, match="No space left on device.*the folder is as it was") as caught:
        new.save_pretrained(path)
    assert caught.value.errno == errno.ENOSPC and caught.value.filename == str(path)
    np.testing.assert_allclose(loaded_scores(path), old_scores, atol=1e-6)
    assert [p.name for p in path.parent.iterdir()] == ["model"]


# --- folders left by killed saves ---

def saving_folders(path):
    return sorted(p.name for p in path.parent.iterdir() if p.name.startswith(".saving-"))


def with_extras(path):
    (path / "passage-stage").mkdir()
    (path / "passage-stage" / "config.json").write_text("{}")
    (path / "notes.txt").write_text("mine")


def has_extras(path):
    return (path / "passage-stage" / "config.json").read_text() == "{}" and (path / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("kill", ["while writing", "just after the swap"])
def test_the_next_save_clears_what_killed_saves_left_and_the_old_folders_other_entries_survive(old_and_new, monkeypatch,
                                                                                               kill):
    new, path, (old_scores, new_scores) = old_and_new
    with_extras(path)
    exchange = _files._exchange

    def killed(*args, **kwargs):
        if kill == "just after the swap":
            exchange(*args, **kwargs)
        raise Killed

    with monkeypatch.context() as killing:
        killing.setattr(shutil, "rmtree", lambda *args, **kwargs: None)  # a killed process cleans nothing
        killing.setattr(*((_weights, "save_weights") if kill == "while writing" else (_files, "_exchange")), killed)
        for _ in range(3):
            with pytest.raises(Killed):
                new.save_pretrained(path)
    assert len(saving_folders(path)) == 3
    assert has_extras(path)  # also when the kill came after the swap, with the old folder beside it
    np.testing.assert_allclose(loaded_scores(path), new_scores if kill == "just after the swap" else old_scores,
                               atol=1e-6)
    new.save_pretrained(path)
    assert saving_folders(path) == [] and has_extras(path)
    np.testing.assert_allclose(loaded_scores(path), new_scores, atol=1e-6)


def test_a_killed_saves_folder_holding_what_the_model_lacks_is_kept_and_named(old_and_new):
    # what a version that moved the old folder's other entries after the swap left when killed between the two
    new, path, _ = old_and_new
    left = path.parent / ".saving-model-ab12cd34"
    shutil.copytree(path, left)
    (left / "notes.txt").write_text("mine")
    with pytest.warns(UserWarning, match=rf"{left} was left by a save of {path} that was killed; it holds notes.txt"):
        new.save_pretrained(path)
    assert (left / "notes.txt").read_text() == "mine"


def test_the_old_folder_parked_by_a_save_killed_between_two_renames_is_put_back(old_and_new, monkeypatch):
    new, path, (old_scores, new_scores) = old_and_new
    with_extras(path)
    parked = path.parent / ".saving-model-old-ab12cd34"
    path.rename(parked)  # where the fallback's first rename leaves it
    with pytest.warns(UserWarning, match="its previous folder, parked as .saving-model-old-ab12cd34, is back"):
        new.save_pretrained(path)
    assert saving_folders(path) == [] and has_extras(path)
    np.testing.assert_allclose(loaded_scores(path), new_scores, atol=1e-6)


def test_a_save_in_progress_is_not_taken_for_a_killed_one(old_and_new):
    new, path, _ = old_and_new
    writing, lock = _files._locked_new_folder(path.parent, ".saving-model-", None)  # another save, still writing
    try:
        new.save_pretrained(path)
        assert writing.is_dir()
    finally:
        os.close(lock)
    new.save_pretrained(path)
    assert saving_folders(path) == []


# --- races, links, permissions ---

def test_the_loser_of_two_saves_racing_to_create_a_folder_says_another_save_finished_first(tiny_bert, tmp_path,
                                                                                          monkeypatch):
    first, second = pl.MaxP(tiny_bert, seed=0, **SETTINGS), pl.MaxP(tiny_bert, seed=1, **SETTINGS)
    path = tmp_path / "model"
    create = _files._create

    def racing_create(new, target):  # both saves found no folder; the second finishes while the first renames
        monkeypatch.setattr(_files, "_create", create)
        second.save_pretrained(path)
        create(new, target)

    monkeypatch.setattr(_files, "_create", racing_create)
    with pytest.raises(FileExistsError, match="another save created .*model while this one was writing it, and "
                                              "finished first: this save was not kept"):
        first.save_pretrained(path)
    np.testing.assert_allclose(loaded_scores(path), second.score_texts(QUERIES, TEXTS), atol=1e-6)
    assert saving_folders(path) == []


def test_saving_onto_a_link_saves_into_its_target_and_keeps_the_link(old_and_new):
    new, v1, (_, new_scores) = old_and_new
    with_extras(v1)
    current = v1.parent / "current"
    current.symlink_to(v1.name)
    new.save_pretrained(current)
    assert current.is_symlink() and os.readlink(current) == "model"
    np.testing.assert_allclose(loaded_scores(v1), new_scores, atol=1e-6)
    assert has_extras(v1) and sorted(p.name for p in v1.parent.iterdir()) == ["current", "model"]


def test_a_saved_folder_keeps_its_permissions_or_takes_the_umasks(tiny_bert, tmp_path):
    model = pl.MaxP(tiny_bert, seed=0, **SETTINGS)
    umask = os.umask(0o022)
    try:
        model.save_pretrained(tmp_path / "new")
        assert stat.S_IMODE((tmp_path / "new").stat().st_mode) == 0o755  # mkdtemp's 0700 shut other users out
        (tmp_path / "new").chmod(0o750)
        model.save_pretrained(tmp_path / "new")
        assert stat.S_IMODE((tmp_path / "new").stat().st_mode) == 0o750
    finally:
        os.umask(umask)


def test_the_old_folders_other_entries_are_copied_where_the_file_system_has_no_hard_links(old_and_new, monkeypatch):
    new, path, _ = old_and_new
    with_extras(path)

    def no_hard_links(*args, **kwargs):
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_hard_links)
    new.save_pretrained(path)
    assert has_extras(path) and saving_folders(path) == []


@pytest.mark.skipif(not hasattr(os, "fork") or _files.fcntl is None, reason="a forked process to kill; flock")
def test_a_process_killed_just_after_the_swap_leaves_a_folder_that_the_next_save_removes(old_and_new):
    new, path, (_, new_scores) = old_and_new
    with_extras(path)
    child = os.fork()
    if child == 0:  # the process that is killed, holding its lock as a real save does
        try:
            exchange = _files._exchange

            def exchange_then_die(*args):
                exchange(*args)
                os.kill(os.getpid(), signal.SIGKILL)

            _files._exchange = exchange_then_die
            new.save_pretrained(path)
        finally:
            os._exit(1)
    _, status = os.waitpid(child, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    assert len(saving_folders(path)) == 1 and has_extras(path)
    np.testing.assert_allclose(loaded_scores(path), new_scores, atol=1e-6)
    new.save_pretrained(path)
    assert saving_folders(path) == [] and has_extras(path)

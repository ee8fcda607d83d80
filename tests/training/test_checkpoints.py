"""Checkpoints of fit (checkpoint_dir): a checkpoint belongs to its training data, a damaged one
(a truncated file, changed bytes found by their checksums, an invalid RNG state) falls back to the
previous one, fit says that it resumed or that the run was complete, and a checkpoint folder loads
as a PyTerrier artifact."""
import copy
import errno
import json
import os
import shutil
import stat
import struct
import warnings

import numpy as np
import pyterrier as pt
import pytest
import torch

import pyterrier_longdoc as pl
from pyterrier_longdoc.training.checkpoints import checkpoints

from helpers.cross_encoders import PAIRS
from helpers.toy_training import FAST, Interrupt, new_model, refused_fit, resumes_past_damage, run_to_step, toy_task

# models built over a plain encoder (the tiny random BERT) get a new head: expected here, not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::pyterrier_longdoc.UntrainedHeadWarning")


@pytest.fixture()
def data():
    return toy_task(n_queries=3)


# --- a checkpoint belongs to its training data ---

@pytest.mark.parametrize("change", ["topics", "qrels", "candidates", "texts"])
def test_resuming_with_other_training_data_is_refused(tiny_bert, data, tmp_path, change):
    topics, qrels, candidates = data
    new_model(tiny_bert).fit(topics, qrels, candidates, checkpoint_dir=tmp_path, **FAST)
    other = {"topics": ("topics", topics.assign(query=topics["query"] + " please")),
             "qrels": ("qrels", qrels.assign(label=qrels["label"] * 2)),
             "candidates": ("candidates", candidates.assign(rank=candidates["rank"][::-1].to_numpy())),
             "texts": ("candidates", candidates.assign(text=candidates["text"] + " more"))}
    frames = {"topics": topics, "qrels": qrels, "candidates": candidates}
    frames[other[change][0]] = other[change][1]
    with pytest.raises(ValueError, match=rf"written for other training data \(the {change} differ\).*restart=True"):
        refused_fit(tiny_bert, **frames, checkpoint_dir=tmp_path)
    # the same rows in another order are the same data
    shuffled = candidates.sample(frac=1, random_state=0)
    with pytest.warns(pl.LongDocWarning, match=r"step-000001: this run was already complete \(1 steps\)") as said:
        assert len(new_model(tiny_bert).fit(topics, qrels, shuffled, checkpoint_dir=tmp_path, **FAST)) == 1
    assert {w.filename for w in said if "already complete" in str(w.message)} == {__file__}  # the caller's line


def test_restart_discards_the_checkpoints_and_trains_from_the_first_step(tiny_bert, data, tmp_path):
    topics, qrels, candidates = data
    new_model(tiny_bert).fit(topics, qrels, candidates, checkpoint_dir=tmp_path, **FAST, epochs=3)
    steps = []
    history = new_model(tiny_bert).fit(topics, qrels.assign(label=qrels["label"] * 2), candidates,
                                       checkpoint_dir=tmp_path, restart=True, **FAST,
                                       callback=lambda row: steps.append(row["step"]))
    assert steps == [1] and len(history) == 1
    assert [p.name for p in checkpoints(tmp_path)] == ["step-000001"]


# --- damaged checkpoints ---


@pytest.mark.parametrize("damage", ["training_state.safetensors", "trainer_state.json", "model.safetensors"])
def test_a_damaged_checkpoint_falls_back_to_the_previous_one(tiny_bert, data, tmp_path, damage):
    def half_written(folder):
        broken = folder / damage
        broken.write_bytes(broken.read_bytes()[: len(broken.read_bytes()) // 2])

    resumes_past_damage(tiny_bert, data, tmp_path, half_written, damage)


def test_no_valid_checkpoint_names_every_file(tiny_bert, data, tmp_path):
    with pytest.raises(Interrupt):
        run_to_step(tiny_bert, data, tmp_path, 6, stop_at=3)
    for path in checkpoints(tmp_path):
        (path / "trainer_state.json").write_text('{"step": 3, "hist')
    with pytest.raises(ValueError, match=r"no valid checkpoint in .*step-000002/trainer_state.json is unreadable.*"
                                         r"step-000001/trainer_state.json is unreadable"):
        run_to_step(tiny_bert, data, tmp_path, 6)


def test_leftovers_of_a_killed_write_are_removed_and_the_limit_is_kept(tiny_bert, data, tmp_path):
    leftovers = [tmp_path / ".tmp-abc123", tmp_path / ".saving-.tmp-abc123-ab12cd34"]  # the model's save inside it
    for leftover in leftovers:
        leftover.mkdir(parents=True)
        (leftover / "model.safetensors").write_bytes(b"half")
    umask = os.umask(0o022)
    try:
        run_to_step(tiny_bert, data, tmp_path, 6, save_total_limit=3)
    finally:
        os.umask(umask)
    assert not any(leftover.exists() for leftover in leftovers)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pt_meta.json", "step-000004", "step-000005", "step-000006"]
    assert stat.S_IMODE((tmp_path / "step-000006").stat().st_mode) == 0o755  # the umask's: other users read it


def test_a_full_disk_while_checkpointing_is_an_os_error_naming_the_checkpoint(window_model, tmp_path, monkeypatch):
    from safetensors import SafetensorError

    from pyterrier_longdoc.training import checkpoints as _checkpoints

    optimizer = torch.optim.AdamW(window_model.model.parameters())
    _checkpoints.save_checkpoint(tmp_path, 1, window_model, optimizer, {})

    def full_disk(*args, **kwargs):
        raise SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)")

    monkeypatch.setattr(_checkpoints, "save_file", full_disk)
    with pytest.raises(OSError, match="No space left on device.*earlier checkpoints are as they were") as caught:
        _checkpoints.save_checkpoint(tmp_path, 2, window_model, optimizer, {})
    assert caught.value.errno == errno.ENOSPC and caught.value.filename == str(tmp_path / "step-000002")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pt_meta.json", "step-000001"]


def test_a_truncated_plain_encoder_names_the_file(tiny_bert, tmp_path):
    encoder = tmp_path / "encoder"
    shutil.copytree(tiny_bert, encoder)
    weights = encoder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-100])
    with pytest.raises(ValueError, match=rf"{weights} is corrupt or truncated .*tensors need \d+ bytes"):
        pl.MaxP(encoder)
    weights.write_bytes(b"\x05\x00")
    with pytest.raises(ValueError, match=rf"{weights} is corrupt or truncated .*shorter than a safetensors header"):
        pl.MaxP(encoder)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", pl.UntrainedHeadWarning)
        pl.MaxP(tiny_bert)  # an intact one loads as before


# --- changed bytes: found by their checksums ---

def zero_tensor_bytes(file):
    """Zeroes the tensors of a safetensors file: same size, readable header."""
    data = bytearray(file.read_bytes())
    start = 8 + struct.unpack("<Q", data[:8])[0]
    data[start:] = bytes(len(data) - start)
    file.write_bytes(bytes(data))


def zero_rng_state(file, folder):
    """Zeroes the RNG state, and drops the checksums as a checkpoint of an older version has none."""
    from safetensors.torch import load_file, save_file

    tensors = load_file(file)
    tensors["rng.torch"] = torch.zeros_like(tensors["rng.torch"])
    save_file(tensors, str(file))
    state_file = folder / "trainer_state.json"
    state_file.write_text(json.dumps({k: v for k, v in json.loads(state_file.read_text()).items()
                                      if k != "checksums"}))


@pytest.mark.parametrize("damage", ["model.safetensors", "training_state.safetensors", "rng"])
def test_changed_bytes_in_a_checkpoint_fall_back_to_the_previous_one(tiny_bert, tmp_path, damage):
    if damage == "rng":
        def change(folder):
            zero_rng_state(folder / "training_state.safetensors", folder)
        expected = r"training_state.safetensors holds an invalid RNG state"
    else:
        def change(folder):
            zero_tensor_bytes(folder / damage)
        expected = rf"{damage} is damaged: its SHA-256 is not the one it was written with"
    resumes_past_damage(tiny_bert, toy_task(n_queries=3), tmp_path, change, expected)


def test_fit_says_that_it_resumed_or_that_the_run_was_complete(tiny_bert, tmp_path):
    data = toy_task(n_queries=3)
    with pytest.raises(Interrupt):
        run_to_step(tiny_bert, data, tmp_path, 6, stop_at=4)
    with pytest.warns(UserWarning, match=r"step-000004: resumed at step 4 of 6"):
        run_to_step(tiny_bert, data, tmp_path, 6)
    with pytest.warns(UserWarning, match=r"step-000006: this run was already complete \(6 steps\)"):
        history = run_to_step(tiny_bert, data, tmp_path, 6)
    assert len(history) == 6 and [p.name for p in checkpoints(tmp_path)] == ["step-000005", "step-000006"]


# --- a checkpoint folder is a PyTerrier artifact ---

def test_a_checkpoint_folder_loads_as_a_pyterrier_artifact(window_model, tmp_path):
    topics, qrels, candidates = toy_task(n_queries=2)
    model = copy.deepcopy(window_model)
    model.fit(topics, qrels, candidates, **FAST, checkpoint_dir=tmp_path / "run")
    loaded = pt.Artifact.load(str(tmp_path / "run"))
    assert isinstance(loaded, pl.MaxP)
    np.testing.assert_allclose(loaded.predict(PAIRS), model.predict(PAIRS), atol=1e-6)

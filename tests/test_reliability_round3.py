"""Issue 23: the last silent failures. Duplicate qrels follow one rule, damaged checkpoints are found
by their checksums, versions are read strictly and reported once, new parameters are named and
seeded, and the usual mistakes get messages that say what to do."""
import json
import os
import struct
import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from cross_encoders import write_cross_encoder
from helpers import FAST, SEGMENT_SETTINGS, Interrupt, make_data, new_model, resumes_past_damage, run_to_step, toy_task

import pyterrier_longdoc as pl
from pyterrier_longdoc.training.arguments import fit_option_defaults
from pyterrier_longdoc.training.best import fit_best
from pyterrier_longdoc.training.checkpoints import checkpoints
from pyterrier_longdoc.training.sampling import training_data

DOCS = ["the castle by the river is red " * 3, "a dog in the house", "music song answer"]


# --- item 2: duplicate qrels ---

def pools(qrels):
    topics, _, candidates = toy_task(n_queries=2)
    data = training_data(topics, qrels, candidates, top_k=10, text=None, text_field="text", context="test")
    return data.pools, data.qrels


def test_a_pair_listed_twice_counts_once():
    _, qrels, _ = toy_task(n_queries=2)
    twice = pd.concat([qrels, qrels[qrels["label"] > 0]], ignore_index=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same label twice: nothing to say
        deduplicated, kept = pools(twice)
    assert deduplicated == pools(qrels)[0]
    assert deduplicated["q0"][0] == ["q0-d2"]  # one positive, sampled as often as before
    assert len(kept) == len(qrels)


def test_conflicting_labels_keep_the_largest_with_a_warning_naming_the_pairs():
    _, qrels, _ = toy_task(n_queries=2)
    conflicting = pd.concat([qrels, qrels[qrels["label"] > 0].assign(label=0)], ignore_index=True)
    with pytest.warns(UserWarning, match=r"qrels: 2 \(qid, docno\) pairs are judged more than once with different "
                                         r"labels \(e\.g\. qid='q0' docno='q0-d2' labels \[1, 0\].*largest"):
        deduplicated, kept = pools(conflicting)
    assert deduplicated == pools(qrels)[0]
    assert kept.sort_values(["qid", "docno"]).reset_index(drop=True).equals(
        qrels.sort_values(["qid", "docno"]).reset_index(drop=True))


def test_fit_best_follows_the_same_rule(tiny_bert):
    topics, qrels, candidates = make_data()
    positives = qrels[qrels["label"] > 0]
    runs = {}
    for name, given in [("plain", qrels), ("twice", pd.concat([qrels, positives])),
                        ("conflicting", pd.concat([qrels, positives.assign(label=0)]))]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = fit_best(lambda: pl.MaxP(tiny_bert, **SEGMENT_SETTINGS), topics, given, candidates, iterations=1,
                              queries_per_step=3, queries_per_forward=3, seed=1)
        assert not [w for w in caught if "skipped" in str(w.message)], name
        runs[name] = result.iterations["segments"].tolist()
    assert runs["twice"] == runs["conflicting"] == runs["plain"]


# --- item 3: damaged checkpoints ---

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


# --- item 4: LongDoc's memory does not grow with document length x passages ---

def test_longdoc_peak_memory_over_two_million_character_documents():
    """Peak RSS in a fresh process (benchmarks/longdoc_memory.py, row 11's measurement): the
    bound is linear in the text; repeating each document per passage (3,808 passages) took 3.6 GB."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).parent.parent / "benchmarks" / "longdoc_memory.py"
    result = subprocess.run([sys.executable, str(script), "--child", "2", "--chars", "1000000"], capture_output=True,
                            text=True, timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert result.returncode == 0, result.stderr[-2000:]
    measured = json.loads(result.stdout.strip().splitlines()[-1])
    assert measured["passages"] > 3000
    assert measured["growth_mb"] <= 8 * 2 + 64, measured


# --- item 5: version strings ---

@pytest.fixture(scope="module")
def saved(tiny_bert, tmp_path_factory):
    folder = tmp_path_factory.mktemp("saved")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pl.UntrainedHeadWarning)
        pl.MaxP(tiny_bert, window=12, stride=6).save_pretrained(folder)
    return folder


def with_version(folder, tmp_path, version):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    config = json.loads((copy / "config.json").read_text())
    config["pyterrier_longdoc"]["version"] = version
    (copy / "config.json").write_text(json.dumps(config))
    return copy


def version_warnings(load):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load()
    return [str(w.message) for w in caught if "pyterrier_longdoc" in str(w.message)]


@pytest.mark.parametrize("version", ["garbage", "", None, 1.0])
def test_an_unknown_version_is_said_once(saved, tmp_path, version):
    folder = with_version(saved, tmp_path, version)
    for load in (lambda: pl.MaxP(folder), lambda: pl.LongDocReranker.from_pretrained(folder)):
        said = version_warnings(load)
        assert len(said) == 1 and f"version {version!r}, which is not a version number" in said[0]


@pytest.mark.parametrize("version", ["9.0.0", "v1.0.0", "V9"])
def test_a_newer_version_is_said_once(saved, tmp_path, version):
    folder = with_version(saved, tmp_path, version)
    for load in (lambda: pl.MaxP(folder), lambda: pl.LongDocReranker.from_pretrained(folder)):
        said = version_warnings(load)
        assert len(said) == 1 and f"saved by pyterrier_longdoc {version}, newer than" in said[0]
    assert version_warnings(lambda: pl.MaxP(with_version(saved, tmp_path / "old", "0.1.0"))) == []


# --- item 7: new parameters are named, and seeded ---

@pytest.fixture(scope="module")
def cross_encoder(tmp_path_factory):
    return str(write_cross_encoder(tmp_path_factory.mktemp("ce"), "bert"))


def test_parade_attn_over_a_cross_encoder_names_its_new_attention_vector(cross_encoder):
    with pytest.warns(pl.UntrainedHeadWarning, match=r"ParadeAttn over .*head is kept, but its new parameters "
                                                     r"\(query_vector\) are drawn at random.*seed="):
        pl.ParadeAttn(cross_encoder)
    with warnings.catch_warnings():
        warnings.simplefilter("error", pl.UntrainedHeadWarning)  # nothing new: nothing to say
        for cls in (pl.MaxP, pl.ParadeAvg, pl.AvgP):
            cls(cross_encoder)


@pytest.mark.parametrize("cls, names", [(pl.CedrKnrm, r"mus, sigmas, combine.weight, combine.bias"),
                                         (pl.ParadeTransformer, r"cls_vector, .*\(\d+ in all\)")])
def test_models_with_a_new_head_name_its_parameters(cross_encoder, cls, names):
    with pytest.warns(pl.UntrainedHeadWarning, match=rf"its {cls.__name__} head is new \({names}: initialised here"):
        cls(cross_encoder)


def test_a_plain_encoder_names_the_new_head(tiny_bert):
    with pytest.warns(pl.UntrainedHeadWarning, match=r"its head is new \(query_vector, head\.classifier\.weight, "):
        pl.ParadeAttn(tiny_bert)


def test_construction_is_reproducible_under_a_seed(cross_encoder):
    def scores(**seed):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pl.UntrainedHeadWarning)
            model = pl.ParadeAttn(cross_encoder, window=12, stride=6, **seed)
        return model.score_texts(["castle river"] * 3, DOCS)

    torch.manual_seed(123)
    state = torch.get_rng_state()
    first = scores(seed=7)
    assert torch.equal(torch.get_rng_state(), state)  # the global random state is left alone
    np.testing.assert_array_equal(scores(seed=7), first)
    assert not np.allclose(scores(seed=8), first)
    torch.manual_seed(5)
    global_seed = scores()
    torch.manual_seed(5)
    np.testing.assert_array_equal(scores(), global_seed)  # torch's own seed is honoured too
    with pytest.raises(TypeError, match="seed must be an integer"):
        pl.ParadeAttn(cross_encoder, seed="7")


# --- item 8: the usual mistakes ---

def test_unknown_fit_options_are_refused_when_the_model_is_built(tiny_bert):
    with pytest.raises(TypeError, match=r"fit_options: unknown fit option 'epoch' \(did you mean 'epochs'\?\); "
                                         r"valid options: epochs, loss, "):
        pl.MaxP(tiny_bert, fit_options={"epoch": 1})
    assert {"epochs", "lr", "checkpoint_dir", "text", "valid_metric"} <= set(fit_option_defaults())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pl.UntrainedHeadWarning)
        assert pl.MaxP(tiny_bert, fit_options={"epochs": 2, "text": {}}).fit_options == {"epochs": 2, "text": {}}


def test_missing_positives_say_how_to_give_text_inside_a_pipeline(tiny_bert):
    topics, qrels, candidates = toy_task(n_queries=2)
    without = candidates[candidates["docno"] != "q0-d2"]
    model = new_model(tiny_bert)
    with pytest.raises(ValueError, match=r"no 'text' for documents \['q0-d2'\].*inside a pipeline.*"
                                         r"fit_options=\{'text': \.\.\.\}"):
        model.fit(topics, qrels, without, **FAST)


def test_skipped_training_queries_are_named(tiny_bert):
    topics, qrels, candidates = toy_task(n_queries=4)
    qrels = qrels[qrels["qid"] != "q1"]
    candidates = candidates[(candidates["qid"] != "q3") | (candidates["docno"] == "q3-d2")]
    with pytest.warns(UserWarning, match=r"2 of 4 training queries were skipped: 1 without a judged-relevant "
                                         r"document \(e\.g\. 'q1'\); 1 without a negative among their candidates "
                                         r"\(e\.g\. 'q3'\)"):
        training_data(topics, qrels, candidates, top_k=10, text=None, text_field="text", context="test")


def test_an_uncached_hub_id_offline_says_so(monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "treating it as a plain encoder"
        with pytest.raises(FileNotFoundError, match=r"nobody/no-such-model: no such directory, and not in the "
                                                    r"HuggingFace cache \(HF_HUB_OFFLINE is set\)"):
            pl.MaxP("nobody/no-such-model")


# --- item 6: CLI input ---

def cli_error(argv, capsys) -> str:
    from pyterrier_longdoc.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err.splitlines()[-1]


def train_argv(files, tiny_bert, tmp_path, *extra):
    return ["train", "--model", "maxp", "--backbone", tiny_bert, "--topics", files["topics"], "--run", files["run"],
            "--docs", files["docs"], "--qrels", files["qrels"], "--output", str(tmp_path / "model"), *extra]


def test_a_trec_topic_without_title_is_named_by_line(trec_files, tiny_bert, tmp_path, capsys):
    topics = tmp_path / "topics.trec"
    topics.write_text("<top>\n<num> Number: q1\n<title> what cat\n</top>\n\n"
                      "<top>\n<num> Number: q2\n<desc> Description:\nonly a description\n</top>\n")
    argv = train_argv({**trec_files, "topics": str(topics)}, tiny_bert, tmp_path)
    assert cli_error(argv, capsys) == f"error: {topics}:7: topic 'q2' has no <title>, so no query"


@pytest.mark.parametrize("value, shown", [("null", "null"), ("42", "42"), ('["castle"]', '["castle"]')])
def test_a_json_text_that_is_not_a_string_is_named_by_line(trec_files, tiny_bert, tmp_path, capsys, value, shown):
    docs = tmp_path / "docs.jsonl"
    lines = [json.dumps({"docno": f"{q}-d{j}", "text": "castle house"}) for q in ("q1", "q2") for j in range(3)]
    lines[1] = f'{{"docno": "q1-d1", "text": {value}}}'
    docs.write_text("\n".join(lines) + "\n")
    argv = train_argv({**trec_files, "docs": str(docs)}, tiny_bert, tmp_path)
    assert cli_error(argv, capsys) == f"error: {docs}:2: the 'text' of docno 'q1-d1' is {shown}, not a string"


@pytest.mark.parametrize("extra, message", [
    (["--set", "windw=150"], r"--set windw=\.\.\.: unknown name 'windw' \(did you mean 'window'\?\); "
                              r"valid names: window, stride, .*, max_length"),
    (["--fit", "lrr=1e-4"], r"--fit lrr=\.\.\.: unknown name 'lrr' \(did you mean 'lr'\?\); "
                             r"valid names: loss, negatives, lr, "),
    (["--fit", "epochs=2"], r"--fit epochs=\.\.\.: give it as --epochs$"),
    (["--fit", "lr=fast"], r"--fit lr=fast: expected a number, such as its default 1e-05$"),
    (["--set", "window=wide"], r"--set window=wide: expected a number, such as its default 150$"),
])
def test_unknown_or_clashing_cli_names_are_one_line(trec_files, tiny_bert, tmp_path, capsys, extra, message):
    import re

    assert re.match(r"error: " + message.removeprefix("error: "), cli_error(
        train_argv(trec_files, tiny_bert, tmp_path, *extra), capsys))

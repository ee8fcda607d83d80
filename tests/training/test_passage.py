"""The passage stage: sentence-transformers' CrossEncoder training, from triples or PyTerrier frames."""
import dataclasses
from pathlib import Path

import pandas as pd
import pytest
import torch

pytest.importorskip("sentence_transformers")
pytest.importorskip("datasets")

from helpers.passage_task import pairwise_accuracy, toy_triples  # noqa: E402

from pyterrier_longdoc.training import PassageArguments  # noqa: E402
from pyterrier_longdoc.training.passage import passage_triples, train_passage_ranker  # noqa: E402


def test_trained_folder_loads_in_sentence_transformers_and_learned_the_task(tiny_bert, tmp_path):
    from sentence_transformers import CrossEncoder

    held_out = toy_triples(64, seed=1)
    path = train_passage_ranker(tiny_bert, toy_triples(160, seed=0), tmp_path / "ranker", epochs=4, lr=1e-2,
                                triples_per_step=16, seed=0, dtype="fp32")
    assert path == str(tmp_path / "ranker")
    assert not (tmp_path / "ranker" / "trainer").exists()  # the trainer's scratch folder is gone
    trained = CrossEncoder(path)
    assert trained.num_labels == 1
    untrained = CrossEncoder(tiny_bert, num_labels=1)
    assert pairwise_accuracy(untrained, held_out) < 0.8  # the toy task is not solved from the start
    assert pairwise_accuracy(trained, held_out) >= 0.95


def test_frames_give_hard_negatives_from_the_candidates():
    topics = pd.DataFrame({"qid": ["1", "2"], "query": ["what is cat", "what is dog"]})
    qrels = pd.DataFrame({"qid": ["1", "2", "2"], "docno": ["p1", "p2", "p3"], "label": [1, 1, 0]})
    passages = pd.DataFrame({"docno": [f"p{i}" for i in range(1, 8)], "text": [f"text {i}" for i in range(1, 8)]})
    candidates = pd.DataFrame({"qid": ["1"] * 4 + ["2"] * 2, "docno": ["p1", "p4", "p5", "p6", "p3", "p2"],
                               "rank": [0, 1, 2, 3, 0, 1]})
    triples = passage_triples(topics, qrels, passages, candidates, negatives_per_query=20, top_k=3, seed=0)
    one, two = triples[triples["qid"] == "1"], triples[triples["qid"] == "2"]
    assert len(one) == 20 and set(one["positive"]) == {"text 1"}
    assert set(one["negative"]) == {"text 4", "text 5"}  # the top 3 minus the relevant one
    assert set(two["positive"]) == {"text 2"} and set(two["negative"]) == {"text 3"}  # a judged non-relevant one
    again = passage_triples(topics, qrels, passages, candidates, negatives_per_query=20, top_k=3, seed=0)
    assert again.equals(triples)
    # without candidates: random passages, never a relevant one
    randoms = passage_triples(topics, qrels, passages, negatives_per_query=50, seed=1)
    assert not set(randoms.loc[randoms["qid"] == "1", "negative"]) & {"text 1"}
    assert len(set(randoms["negative"])) > 3


def test_a_copy_of_a_relevant_passage_is_never_its_negative():
    topics = pd.DataFrame({"qid": ["1"], "query": ["what is cat"]})
    qrels = pd.DataFrame({"qid": ["1"], "docno": ["p1"], "label": [1]})
    passages = pd.DataFrame({"docno": ["p1", "p2", "p3", "p4"], "text": ["a cat", "a cat", "a dog", "a cow"]})
    candidates = pd.DataFrame({"qid": ["1"] * 3, "docno": ["p2", "p1", "p3"], "rank": [0, 1, 2]})
    hard = passage_triples(topics, qrels, passages, candidates, negatives_per_query=20, top_k=3, seed=0)
    assert set(hard["negative"]) == {"a dog"}
    randoms = passage_triples(topics, qrels, passages, negatives_per_query=50, seed=0)
    assert set(randoms["negative"]) == {"a dog", "a cow"}


def test_triples_and_frames_together(tiny_bert, tmp_path):
    topics = pd.DataFrame({"qid": ["1"], "query": ["what is cat"]})
    qrels = pd.DataFrame({"qid": ["1"], "docno": ["a"], "label": [1]})
    passages = pd.DataFrame({"docno": ["a", "b"], "text": ["the cat", "the dog"]})
    path = train_passage_ranker(tiny_bert, toy_triples(4, seed=0), tmp_path / "both", topics=topics, qrels=qrels,
                                passages=passages, steps=1, triples_per_step=8, dtype="fp32")
    assert (tmp_path / "both" / "config.json").exists() and path.endswith("both")


@pytest.mark.parametrize("data, message", [
    ([("q", "p")], r"rows \[0\] are not \(query, positive, negative\) 3-tuples"),
    ([("q", "p", "n"), ("q", "", "n")], r"rows \[1\] have an empty or missing"),
    ([("q", "p", "n"), ("q", "same", "same")], r"rows \[1\] have the same text"),
    (pd.DataFrame({"query": ["q"], "positive": ["p"]}), r"missing \['negative'\]"),
    ([], "no training triples"),
])
def test_bad_triples_are_named(tiny_bert, tmp_path, data, message):
    with pytest.raises(ValueError, match=message):
        train_passage_ranker(tiny_bert, data, tmp_path / "out", steps=1)


@pytest.mark.parametrize("data", ["not triples", 42])
def test_data_of_another_type_is_a_type_error(tiny_bert, tmp_path, data):
    expected = rf"must be \(query, positive, negative\) triples or a frame of them, got .*{type(data).__name__}"
    with pytest.raises(TypeError, match=expected):
        train_passage_ranker(tiny_bert, data, tmp_path / "out", steps=1)


def test_bad_frames_are_named(tiny_bert, tmp_path):
    topics = pd.DataFrame({"qid": ["1", "2"], "query": ["a", "b"]})
    passages = pd.DataFrame({"docno": ["p1", "p2"], "text": ["x", "y"]})
    qrels = pd.DataFrame({"qid": ["1", "2"], "docno": ["p1", "nowhere"], "label": [1, 1]})
    with pytest.raises(ValueError, match=r"qrels rows \[1\] name relevant passages that are not in passages"):
        train_passage_ranker(tiny_bert, None, tmp_path, topics=topics, qrels=qrels, passages=passages)
    with pytest.raises(ValueError, match="needs topics, qrels and passages"):
        train_passage_ranker(tiny_bert, None, tmp_path, topics=topics, qrels=qrels)
    with pytest.raises(ValueError, match=r"qrels needs columns .*missing \['label'\]"):
        passage_triples(topics, qrels.drop(columns="label"), passages)
    with pytest.raises(ValueError, match=r"qrels: column 'label' must hold numbers; 1 of 2 rows do not "
                                         r".*qid='2' docno='nowhere' value='high'"):
        passage_triples(topics, qrels.assign(label=[1, "high"]), passages)
    with pytest.raises(ValueError, match=r"duplicate docnos in rows \[0, 1\]"):
        passage_triples(topics, qrels, passages.assign(docno=["p1", "p1"]))
    with pytest.raises(ValueError, match="need a rank or a score column"):
        passage_triples(topics, qrels.iloc[:1], passages, pd.DataFrame({"qid": ["1"], "docno": ["p2"]}))


@pytest.mark.parametrize("option, message", [
    ({"loss": "hinge"}, "loss must be one of"), ({"steps": 0}, "steps must be a positive integer"),
    ({"triples_per_step": 0}, "triples_per_step must be a positive integer"), ({"warmup": 1.0}, "warmup is a fraction"),
    ({"lr": 0.0}, "lr must be a positive number"), ({"head_lr": -1e-3}, "head_lr must be a positive number or None"),
    ({"head_lr": True}, "head_lr must be a positive number or None"),
])
def test_bad_options_are_named(tiny_bert, tmp_path, option, message):
    with pytest.raises(ValueError, match=message):
        train_passage_ranker(tiny_bert, toy_triples(2, seed=0), tmp_path, **option)


def _weights(path):
    from safetensors.torch import load_file

    return load_file(str(Path(path) / "model.safetensors"))


@pytest.mark.parametrize("head_lr", [None, 1e-2])
def test_head_lr_is_the_rate_of_the_head_alone(tiny_bert, tmp_path, head_lr):
    """With an encoder rate too small to move anything, only ``head_lr`` moves the fresh head;
    without it the head trains at the encoder's rate (it stays where the seed drew it)."""
    start = _weights(train_passage_ranker(tiny_bert, toy_triples(4, seed=0), tmp_path / "start", steps=1,
                                          lr=1e-12, triples_per_step=4, warmup=0.0, seed=3, dtype="fp32"))
    end = _weights(train_passage_ranker(tiny_bert, toy_triples(40, seed=0), tmp_path / "end", steps=10,
                                        lr=1e-12, head_lr=head_lr, triples_per_step=4, warmup=0.0, seed=3, dtype="fp32"))
    moved = {name: float((end[name] - start[name]).abs().max()) for name in start}
    head = [name for name in moved if name.startswith("classifier.")]
    assert head
    assert max(moved[name] for name in moved if name not in head) < 1e-6  # the encoder and pooler stay
    if head_lr is None:
        assert max(moved[name] for name in head) < 1e-6
    else:
        # AdamW moves the weights ~head_lr a step (a pairwise loss gives the bias no gradient)
        assert moved["classifier.weight"] > 1e-3


def test_mnrl_loss_trains_too(tiny_bert, tmp_path):
    path = train_passage_ranker(tiny_bert, toy_triples(16, seed=0), tmp_path / "mnrl", loss="mnrl", steps=2,
                                triples_per_step=8, dtype="fp32")
    from sentence_transformers import CrossEncoder

    assert CrossEncoder(path).predict([("what is cat", "the cat")]).shape == (1,)


def test_synthetic_passage_triples_cut_negatives_from_the_topics_hard_negatives():
    from pyterrier_longdoc.data.synthetic import make_collection
    from pyterrier_longdoc.data.synthetic import passage_triples as synthetic_triples

    collection = make_collection(n_queries=6)
    train = collection.split("train")
    triples = synthetic_triples(train, negatives_per_query=3, seed=1)
    assert len(triples) == 3 * len(train.topics)
    text = dict(zip(collection.documents["docno"], collection.documents["text"]))
    for qid, group in triples.groupby("qid"):
        answer = train.positions.set_index("qid").loc[qid]
        assert set(group["positive"]) == {text[answer["docno"]][answer["char_start"]:answer["char_end"]]}
        negatives = train.qrels[(train.qrels["qid"] == qid) & (train.qrels["label"] == 0)]["docno"]
        for negative in group["negative"]:
            assert any(negative in text[d] for d in negatives)
            assert 0 < len(negative.split()) <= answer["word_end"] - answer["word_start"]
    assert synthetic_triples(train, negatives_per_query=3, seed=1).equals(triples)
    with pytest.raises(ValueError, match="negatives_per_query must be positive"):
        synthetic_triples(train, negatives_per_query=0)


def test_a_progress_bar_counts_the_steps_by_default(tiny_bert, tmp_path, capfd):
    """The stage takes minutes on a CPU (the demo's, the recipe's): a bar with the loss shows it is working."""
    train_passage_ranker(tiny_bert, toy_triples(8, seed=0), tmp_path / "bar", steps=3, triples_per_step=2, dtype="fp32")
    shown = capfd.readouterr().err
    assert "passage stage" in shown and "3/3" in shown and "loss=" in shown
    train_passage_ranker(tiny_bert, toy_triples(8, seed=0), tmp_path / "quiet", steps=3, triples_per_step=2, dtype="fp32",
                         progress=False)
    assert "passage stage" not in capfd.readouterr().err


# --- the passage stage's typed arguments ---

def test_the_keywords_a_type_checker_reads_are_passage_arguments_fields_and_types():
    import dataclasses
    import inspect
    import typing

    from pyterrier_longdoc.training.passage_arguments import _DEPRECATED, PassageOptions

    parameters = inspect.signature(train_passage_ranker).parameters
    assert str(parameters["options"]) == "**options: 'Unpack[PassageOptions]'" and "args" in parameters
    declared = typing.get_type_hints(PassageOptions)
    fields = typing.get_type_hints(PassageArguments)
    assert {n: declared[n] for n in declared if n not in _DEPRECATED} == {
        f.name: fields[f.name] for f in dataclasses.fields(PassageArguments)}  # no drift: names and types
    assert set(declared) - {f.name for f in dataclasses.fields(PassageArguments)} == set(_DEPRECATED)
    assert PassageOptions.__total__ is False and PassageArguments().to_dict() == {}


def test_arguments_as_an_object_train_as_keywords_do_and_an_explicit_keyword_wins(tiny_bert, tmp_path):
    import json

    args = PassageArguments(steps=5, triples_per_step=2, dtype="fp32", progress=False)
    folder = train_passage_ranker(tiny_bert, toy_triples(8, seed=0), tmp_path / "args", args=args, steps=2)
    assert json.loads((Path(folder) / "training_log.json").read_text())["steps"] == 2
    assert PassageArguments.from_options({"lr": 1e-3}, base=PassageArguments(lr=1e-5, top_k=5)).to_dict() == {
        "lr": 1e-3, "top_k": 5}


@pytest.mark.parametrize("options, error, message", [
    ({"lrr": 1e-3}, TypeError, r"train_passage_ranker: unknown argument 'lrr' \(did you mean 'lr'\?\); "
                               r"PassageArguments' fields: steps, epochs, lr"),
    ({"top_k": 0}, ValueError, "top_k must be a positive integer, got 0"),
    ({"max_length": 2.5}, ValueError, "max_length must be a positive integer, got 2.5"),
    ({"verbose": "yes"}, ValueError, "verbose must be True or False, got 'yes'"),
    ({"seed": "forty-two"}, ValueError, "seed must be an integer"),
    ({"args": {"lr": 1e-3}}, TypeError, "args must be a PassageArguments, got dict"),
])
def test_unknown_and_bad_arguments_are_named_before_anything_loads(options, error, message):
    with pytest.raises(error, match=message):
        train_passage_ranker("no-such-backbone", [("q", "p", "n")], **options)


def test_saved_options_with_the_old_bf16_key_still_load():
    import json

    saved = json.loads('{"steps": 3, "bf16": false, "lr": 0.001}')  # as an earlier release's stamp recorded them
    with pytest.warns(DeprecationWarning, match=r"bf16=...\) is deprecated: use dtype='fp32'"):
        args = PassageArguments.from_options(saved)
    assert args == PassageArguments(steps=3, dtype="fp32", lr=1e-3)
    assert PassageArguments.from_options(args.to_dict()) == args  # a saved dict reads back as the same arguments


def test_batch_size_is_the_old_name_of_triples_per_step():
    # batch_size counted triples per step here and (query, chunk) sequences per encoder call in the models
    removed = r"\(batch_size is removed in version 0\.3\.0\)"
    with pytest.warns(DeprecationWarning, match=r"batch_size=...\) is deprecated: use triples_per_step=4 " + removed):
        args = PassageArguments.from_options({"batch_size": 4})
    assert args.triples_per_step == 4 and "batch_size" not in [f.name for f in dataclasses.fields(PassageArguments)]
    with pytest.raises(TypeError, match="give triples_per_step only"):
        PassageArguments.from_options({"batch_size": 4, "triples_per_step": 8})


# --- checkpoints: a killed passage stage resumes where it stopped ---

class Killed(RuntimeError):
    """The process killed after some steps, simulated."""


def _killed_after(monkeypatch, steps: int):
    """The passage stage's progress bar raises Killed at the end of optimiser step ``steps`` (before
    the Trainer would write a checkpoint of that step)."""
    from transformers import TrainerCallback

    from pyterrier_longdoc.training import passage

    class Kill(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == steps:
                raise Killed(f"killed at step {steps}")

    monkeypatch.setattr(passage, "_progress_bar", Kill)


def _weights(folder):
    from safetensors.torch import load_file

    return load_file(str(Path(folder) / "model.safetensors"))


def _dropout_bert(tiny_bert, folder: Path) -> str:
    """The tiny BERT with dropout: resuming must restore the RNG state as well."""
    import json
    import shutil

    shutil.copytree(tiny_bert, folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "hidden_dropout_prob": 0.1,
                                                    "attention_probs_dropout_prob": 0.1}))
    return str(folder)


def test_a_killed_passage_stage_resumes_from_its_checkpoint_and_ends_as_an_uninterrupted_run(
        tiny_bert, tmp_path, monkeypatch):
    backbone = _dropout_bert(tiny_bert, tmp_path / "bert")
    data = toy_triples(40, seed=0)
    options = dict(steps=8, triples_per_step=4, lr=1e-3, seed=0, dtype="fp32", checkpoint_every=3)
    whole = train_passage_ranker(backbone, data, tmp_path / "whole", **options)
    assert not (tmp_path / "whole" / "trainer").exists()  # a finished stage keeps no checkpoints

    with monkeypatch.context() as patch:
        _killed_after(patch, 7)
        with pytest.raises(Killed):
            train_passage_ranker(backbone, data, tmp_path / "resumed", **options)
    assert sorted(p.name for p in (tmp_path / "resumed" / "trainer").glob("checkpoint-*")) == ["checkpoint-6"]
    resumed = train_passage_ranker(backbone, data, tmp_path / "resumed", **options)
    expected, got = _weights(whole), _weights(resumed)
    assert expected.keys() == got.keys()
    for name in expected:
        # bit-identical on the CPU here; 1e-6 leaves room for kernels that sum in another order
        torch.testing.assert_close(got[name], expected[name], rtol=0, atol=1e-6, msg=name)
    import json

    log = json.loads((tmp_path / "resumed" / "training_log.json").read_text())
    assert log == json.loads((tmp_path / "whole" / "training_log.json").read_text())  # the losses of all 8 steps
    untrained_check = _weights(train_passage_ranker(backbone, data, tmp_path / "short", **{**options, "steps": 6}))
    assert any(not torch.equal(untrained_check[n], expected[n]) for n in expected)  # the last steps did train


def test_a_changed_passage_stage_is_refused_unless_restarted(tiny_bert, tmp_path, monkeypatch):
    data = toy_triples(20, seed=0)
    options = dict(steps=4, triples_per_step=4, seed=0, dtype="fp32", checkpoint_every=2)
    with monkeypatch.context() as patch:
        _killed_after(patch, 3)
        with pytest.raises(Killed):
            train_passage_ranker(tiny_bert, data, tmp_path / "out", **options)
    with pytest.raises(ValueError, match=r"lr 0\.0001 \(now 0\.001\).*restart=True"):
        train_passage_ranker(tiny_bert, data, tmp_path / "out", **{**options, "lr": 1e-3})
    with pytest.raises(ValueError, match="another triples"):
        train_passage_ranker(tiny_bert, toy_triples(20, seed=1), tmp_path / "out", **options)
    # how often it checkpoints and whether it shows a bar are no part of the run: it resumes
    train_passage_ranker(tiny_bert, data, tmp_path / "out", **{**options, "checkpoint_every": 1, "progress": False})
    with monkeypatch.context() as patch:
        _killed_after(patch, 3)
        with pytest.raises(Killed):
            train_passage_ranker(tiny_bert, data, tmp_path / "again", **options)
    path = train_passage_ranker(tiny_bert, data, tmp_path / "again", **{**options, "lr": 1e-3, "restart": True})
    assert json_steps(path) == 4


def json_steps(folder) -> int:
    import json

    return json.loads((Path(folder) / "training_log.json").read_text())["steps"]


def test_passage_arguments_still_take_batch_size_until_0_3():
    with pytest.warns(DeprecationWarning, match=r"PassageArguments\(batch_size=...\) is deprecated: use triples_per_step=2"):
        args = PassageArguments(batch_size=2)
    assert args == PassageArguments(triples_per_step=2)


def test_a_renamed_word_count_states_the_release_that_removes_it():
    from pyterrier_longdoc._warn import REMOVED_IN, renamed

    with pytest.warns(DeprecationWarning, match=rf"window is deprecated, use window_words .*removed in version {REMOVED_IN}"):
        assert renamed({"window": 100}, {"window": "window_words"}, "LongDoc") == {"window_words": 100}

"""Model selection on validation: never worse than the start, valid_fraction, early stopping, resume."""
import warnings

import numpy as np
import pyterrier as pt
import pytest
import torch

import pyterrier_longdoc as pl
from pyterrier_longdoc.training import TrainingArguments
from pyterrier_longdoc.training.checkpoints import latest_checkpoint
from pyterrier_longdoc.training.sampling import split_validation
from pyterrier_longdoc.training.selection import ChanceLevelWarning, Selection, TrainingBelowStartWarning

from helpers.toy_training import FAST, Interrupt, new_model, stop_at, toy_task, train_toy, weights

# models built over a plain encoder (the tiny random BERT) get a new head: expected here, not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::pyterrier_longdoc.UntrainedHeadWarning")

VALID = dict(valid_metric="RR@10")


class Unlearn(torch.nn.Module):
    """A loss that rewards ranking the negative first: training on it must make validation worse."""

    def forward(self, scores):
        return torch.relu(1.0 + scores[:, :1] - scores[:, 1:]).sum()


def validation(topics, qrels, candidates):
    return dict(valid_topics=topics, valid_qrels=qrels, valid_candidates=candidates, **VALID)


@pytest.fixture(scope="module")
def trained(tiny_bert):
    model = new_model(tiny_bert, pl.ParadeAvg)  # learns the toy task (RR@10 1.0)
    train_toy(model)
    return model


def test_a_run_made_to_diverge_ends_with_its_start_and_warns(trained):
    topics, qrels, candidates = toy_task()
    start = weights(trained)
    with pytest.warns(TrainingBelowStartWarning, match=r"ended below its start.*starting weights.*restored\. A lower "
                                                        r"rate may train better: TrainingArguments\(lr=\.\.\.\)"):
        history = trained.fit(topics, qrels, candidates, **{**FAST, "epochs": 2}, loss=Unlearn(), eval_every=1,
                              **validation(topics, qrels, candidates))
    report = history.attrs["selection"]
    assert report["best_step"] == 0 and report["restored"] and report["last"] < report["start"]
    assert len(history) == history["step"].max() == 4  # one row per optimiser step; the start is in the report
    for key, value in start.items():
        torch.testing.assert_close(weights(trained)[key], value, rtol=0, atol=0, msg=key)


def test_without_load_best_model_at_end_the_last_weights_stay(trained):
    topics, qrels, candidates = toy_task()
    start = weights(trained)
    model = new_model_like(trained)
    with pytest.warns(TrainingBelowStartWarning, match="last weights were kept"):
        history = model.fit(topics, qrels, candidates, **FAST, loss=Unlearn(), load_best_model_at_end=False,
                            **validation(topics, qrels, candidates))
    assert not history.attrs["selection"]["restored"]
    assert any(not torch.equal(weights(model)[k], v) for k, v in start.items())


def new_model_like(model):
    """A copy of a trained model (save and load)."""
    import tempfile

    from pyterrier_longdoc import LongDocReranker

    folder = tempfile.mkdtemp()
    model.save_pretrained(folder)
    return LongDocReranker.from_pretrained(folder)


def test_an_improving_run_ends_with_its_best_evaluation(tiny_bert):
    model = new_model(tiny_bert, pl.ParadeAvg)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TrainingBelowStartWarning)
        warnings.simplefilter("error", ChanceLevelWarning)  # it learns the task: far above a random order
        history = train_toy(model, eval_every=2)
    report = history.attrs["selection"]
    assert report["best"] > report["start"] and report["best_step"] > 0
    assert report["best"] > report["random_p95"] >= report["random"]
    assert report["best"] == max(history["RR@10"].max(), report["start"])
    evaluated = history.dropna(subset=["RR@10"])
    assert evaluated["step"].tolist()[:3] == [2, 4, 6]  # every 2 steps (and every epoch's end)


def test_valid_fraction_holds_out_a_seeded_disjoint_share_of_judged_queries():
    topics, qrels, _ = toy_task()
    train, valid = split_validation(topics, qrels, 0.25, seed=3)
    assert len(valid) == 2 and len(train) == 6
    assert set(train["qid"]).isdisjoint(valid["qid"]) and set(train["qid"]) | set(valid["qid"]) == set(topics["qid"])
    shuffled = topics.sample(frac=1.0, random_state=1)
    assert set(split_validation(shuffled, qrels, 0.25, seed=3)[1]["qid"]) == set(valid["qid"])  # order-free
    assert any(set(split_validation(topics, qrels, 0.25, seed=s)[1]["qid"]) != set(valid["qid"]) for s in range(4, 9))
    unjudged = qrels[qrels["qid"] != "q0"]
    assert all("q0" not in set(split_validation(topics, unjudged, 0.5, seed=s)[1]["qid"]) for s in range(5))
    with pytest.raises(ValueError, match="leaves no training query"):
        split_validation(topics.head(1), qrels, 0.5, seed=0)


@pytest.mark.filterwarnings("ignore::pyterrier_longdoc.training.selection.ChanceLevelWarning")  # a toy fit of a few steps
def test_fit_trains_on_what_valid_fraction_leaves(tiny_bert):
    topics, qrels, candidates = toy_task()
    seen = set()
    model = new_model(tiny_bert)
    trainer_sampled = []

    def record(row):
        trainer_sampled.append(row["step"])

    import pyterrier_longdoc.training.trainer as trainer_module

    original = trainer_module.sample_epoch

    def spy(topics, *args):
        seen.update(topics["qid"])
        return original(topics, *args)

    trainer_module.sample_epoch = spy
    try:
        history = model.fit(topics, qrels, candidates, **FAST, valid_fraction=0.25, seed=3, callback=record, **VALID)
    finally:
        trainer_module.sample_epoch = original
    _, held_out = split_validation(topics, qrels, 0.25, seed=3)
    assert seen == set(topics["qid"]) - set(held_out["qid"])
    scored = []
    model.transform = lambda frame: scored.append(set(frame["qid"])) or type(model).transform(model, frame)
    model.fit(topics, qrels, candidates, **FAST, valid_fraction=0.25, seed=3, **VALID)
    assert scored and all(qids == set(held_out["qid"]) for qids in scored)  # validation scores its own queries only
    assert len(trainer_sampled) == 2  # 6 training queries, 4 per step
    assert history.attrs["selection"]["start"] is not None
    with pytest.raises(ValueError, match="cannot be combined"):
        model.fit(topics, qrels, candidates, **FAST, valid_fraction=0.25, **validation(topics, qrels, candidates))


def test_patience_stops_training_early(trained):
    topics, qrels, candidates = toy_task()
    model = new_model_like(trained)
    with pytest.warns(TrainingBelowStartWarning):
        history = model.fit(topics, qrels, candidates, **{**FAST, "queries_per_step": 1, "epochs": 3},
                            loss=Unlearn(), eval_every=1, patience=2, **validation(topics, qrels, candidates))
    assert history.attrs["selection"]["stopped_early"]
    assert history["step"].max() == 2  # two evaluations without improvement, of 24 steps


@pytest.mark.filterwarnings("ignore::pyterrier_longdoc.training.selection.ChanceLevelWarning")  # a toy fit of a few steps
def test_resume_with_selection_ends_as_an_uninterrupted_run(tiny_bert, tmp_path):
    topics, qrels, candidates = toy_task()
    options = dict(epochs=2, queries_per_step=2, lr=1e-3, head_lr=1e-2, checkpoint_every=1, eval_every=3, seed=7,
                   **validation(topics, qrels, candidates))
    straight = new_model(tiny_bert)
    full = straight.fit(topics, qrels, candidates, checkpoint_dir=tmp_path / "straight", **options)

    with pytest.raises(Interrupt):
        new_model(tiny_bert).fit(topics, qrels, candidates, checkpoint_dir=tmp_path / "resumed", callback=stop_at(5),
                                 **options)
    assert latest_checkpoint(tmp_path / "resumed").name == "step-000005"
    resumed = new_model(tiny_bert)
    with pytest.warns(UserWarning, match=r"step-000005: resumed at step 5 of 8"):
        history = resumed.fit(topics, qrels, candidates, checkpoint_dir=tmp_path / "resumed", **options)
    assert history.attrs["selection"] == full.attrs["selection"]
    np.testing.assert_allclose(history["RR@10"].dropna(), full["RR@10"].dropna())
    for key, value in weights(straight).items():
        torch.testing.assert_close(weights(resumed)[key], value, rtol=0, atol=1e-7, msg=key)
    # the last checkpoint holds the model fit ended with
    from pyterrier_longdoc import LongDocReranker
    saved = LongDocReranker.from_pretrained(tmp_path / "resumed")
    for key, value in weights(resumed).items():
        torch.testing.assert_close(weights(saved)[key], value, rtol=0, atol=0, msg=key)
    # the best weights the kept checkpoints refer to, and no others
    best_files = sorted(p.name for p in (tmp_path / "resumed" / "best").iterdir())
    assert best_files == [f"step-{full.attrs['selection']['best_step']:06d}.safetensors"]


def test_training_arguments_check_every_setting():
    assert TrainingArguments().identity() == dict(epochs=1, loss="margin", negatives=1, top_k=100, lr=1e-5,
                                                  head_lr=1e-4, weight_decay=1e-7, warmup=0.2, queries_per_step=16,
                                                  seed=42)  # what version 0.2 recorded: its checkpoints resume
    assert TrainingArguments(valid_fraction=0.2).identity()["valid_fraction"] == 0.2
    for bad in (dict(epochs=0), dict(lr=-1.0), dict(lr=float("nan")), dict(valid_fraction=1.0), dict(eval_every=0),
                dict(patience=True), dict(load_best_model_at_end="yes"), dict(loss="hinge"), dict(seed=1.5)):
        with pytest.raises(ValueError):
            TrainingArguments(**bad)
    with pytest.raises(TypeError, match=r"unknown fit option 'epoch' \(did you mean 'epochs'\?\); valid options: "
                                         r".*epochs"):
        TrainingArguments.from_options({"epoch": 1})


def test_the_chance_level_is_what_random_orders_of_the_candidates_score():
    from pyterrier_longdoc.training.fit_loop import chance_level

    topics, qrels, candidates = toy_task(n_queries=8, docs_per_query=4)  # one relevant among 4
    mean, p95 = chance_level(topics, qrels, candidates, "RR@10", seed=0)
    assert mean == pytest.approx((1 + 1 / 2 + 1 / 3 + 1 / 4) / 4, abs=0.02)  # H(4) / 4
    assert mean < p95 < 1.0 and (mean, p95) == chance_level(topics, qrels, candidates, "RR@10", seed=0)


def test_a_run_no_better_than_a_random_order_warns(tiny_bert, monkeypatch):
    """A model that learned nothing (here: every evaluation scores a random order's RR) is named."""
    fit_module = __import__("pyterrier_longdoc.training.fit_loop", fromlist=["evaluate"])
    monkeypatch.setattr(fit_module, "evaluate", lambda *args, **kwargs: 0.25)
    topics, qrels, candidates = toy_task()
    # what to do, in the user's own calls
    with pytest.warns(ChanceLevelWarning, match=r"no better than a random order \(RR@10 0.2500; random orders.*"
                                                r"train_passage_ranker, train that with more steps or another seed.*"
                                                r"TrainingArguments\(valid_fraction=\.\.\.\)"):
        history = new_model(tiny_bert).fit(topics, qrels, candidates, **FAST, **validation(topics, qrels, candidates))
    report = history.attrs["selection"]
    assert report["best"] == 0.25 <= report["random"] <= report["random_p95"]


def test_the_chance_level_warning_points_at_the_users_line(tiny_bert):
    """Called directly or through a pipeline's fit (PyTerrier's Compose.fit), the warning is shown at
    the line that called, not inside the library or PyTerrier."""
    topics, qrels, candidates = toy_task()
    model = new_model(tiny_bert)
    model.fit_options = dict(FAST, epochs=1, **VALID)
    calls = {  # 2 validation queries of 4 candidates: a random order often ranks both answers first
        "fit": lambda: new_model(tiny_bert).fit(topics[:6], qrels, candidates, **FAST, epochs=1, valid_topics=topics[6:],
                                                valid_qrels=qrels, valid_candidates=candidates, **VALID),
        "pipeline": lambda: (pt.Transformer.from_df(candidates) >> model).fit(topics[:6], qrels, topics[6:], qrels),
    }
    for what, call in calls.items():
        with pytest.warns(ChanceLevelWarning, match="no better than a random order") as said:
            call()
        assert {w.filename for w in said if w.category is ChanceLevelWarning} == {__file__}, what


# --- the advice of TrainingBelowStartWarning follows the run's lr ---

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
    assert "A lower rate" not in in_range and "already in the papers' range" in in_range and "2e-05" in in_range
    assert "A lower rate" in below_start_warning(1e-4) and "this run used 0.0001" in below_start_warning(1e-4)


def test_a_full_disk_while_writing_the_best_weights_is_an_os_error_naming_them(tmp_path, monkeypatch):
    import errno

    from safetensors import SafetensorError

    from pyterrier_longdoc.training import selection as _selection

    def full_disk(*args, **kwargs):
        raise SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)")

    selection = Selection("RR@10", patience=None)
    selection.record(0.9, 3, torch.nn.Linear(1, 1))
    monkeypatch.setattr(_selection, "save_file", full_disk)
    with pytest.raises(OSError, match="No space left on device") as caught:
        selection.save_weights(tmp_path)
    assert caught.value.errno == errno.ENOSPC and caught.value.filename == str(_selection.weights_path(tmp_path, 3))
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]  # nothing half-written left

"""End-to-end training: it learns, it resumes exactly, and it checks what it is given."""
import warnings

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest
import torch
from helpers.toy_training import FAST, Interrupt, interrupted_and_resumed, new_model, stop_at, toy_task, train_toy, weights
from pyterrier.measures import RR

import pyterrier_longdoc as pl
from pyterrier_longdoc.training import ListwiseSoftmaxLoss, MarginLoss
from pyterrier_longdoc.training.checkpoints import latest_checkpoint
from pyterrier_longdoc.training.selection import ChanceLevelWarning

# models built over a plain encoder (the tiny random BERT) get a new head: expected here, not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::pyterrier_longdoc.UntrainedHeadWarning")


@pytest.mark.parametrize("cls", [pl.SumP, pl.ParadeAttn, pl.ParadeAvg])
def test_fit_learns_a_task_that_needs_the_late_chunks(tiny_bert, cls):
    model = new_model(tiny_bert, cls)
    history = train_toy(model)
    assert list(history.columns[:4]) == ["step", "epoch", "loss", "lr"]
    assert history["loss"].iloc[-4:].mean() < history["loss"].iloc[:4].mean()
    assert history["RR@10"].dropna().iloc[-1] > 0.9
    assert not model.model.training  # back in eval mode


@pytest.mark.filterwarnings("ignore::pyterrier_longdoc.training.selection.ChanceLevelWarning")  # a toy fit of a few steps
def test_validation_averages_over_the_validation_topics_only(tiny_bert):
    topics, qrels, candidates = toy_task()
    model = new_model(tiny_bert)
    valid = topics.head(2)
    valid_candidates = candidates[candidates["qid"].isin(valid["qid"])]  # what a retrieval pipeline gives
    options = dict(FAST, valid_topics=valid, valid_candidates=valid_candidates, valid_metric="RR@10")
    with_all_qrels = model.fit(topics, qrels, candidates, **options, valid_qrels=qrels)["RR@10"].iloc[-1]
    expected = pt.Experiment([model(valid_candidates)], valid, qrels, [RR @ 10])["RR@10"].item()
    assert with_all_qrels == pytest.approx(expected) and expected > 0


def test_firstp_cannot_learn_what_it_never_reads(tiny_bert):
    with pytest.warns(ChanceLevelWarning, match="no better than a random order"):
        history = train_toy(new_model(tiny_bert, pl.FirstP))
    assert history["RR@10"].dropna().iloc[-1] < 0.6


def test_listwise_loss_with_several_negatives(tiny_bert):
    topics, qrels, candidates = toy_task()
    history = new_model(tiny_bert, pl.ParadeAttn).fit(topics, qrels, candidates, loss="listwise", negatives=3,
                                                       epochs=4, **FAST)
    assert history["loss"].iloc[-2:].mean() < history["loss"].iloc[:2].mean()


def test_text_from_a_lookup_when_candidates_have_none(tiny_bert):
    topics, qrels, candidates = toy_task(n_queries=2)
    texts = dict(zip(candidates["docno"], candidates["text"]))
    bare = candidates.drop(columns=["text"])
    get_text = pt.apply.text(lambda row: texts[row["docno"]])
    for lookup in (texts, lambda docnos: [texts[d] for d in docnos], get_text):
        assert len(new_model(tiny_bert).fit(topics, qrels, bare, text=lookup, **FAST)) == 1
    with pytest.raises(ValueError, match="no 'text' for documents"):
        new_model(tiny_bert).fit(topics, qrels, bare, **FAST)


def test_candidates_may_be_a_retrieval_pipeline(tiny_bert):
    topics, qrels, candidates = toy_task(n_queries=2)
    pipeline = pt.Transformer.from_df(candidates)
    assert len(new_model(tiny_bert).fit(topics, qrels, pipeline, **FAST)) == 1


def test_queries_without_positives_or_negatives_are_skipped_and_said(tiny_bert):
    topics, qrels, candidates = toy_task(n_queries=3)
    qrels = qrels[qrels["qid"] != "q0"]
    with pytest.warns(UserWarning, match="1 of 3 training queries were skipped"):
        new_model(tiny_bert).fit(topics, qrels, candidates, **FAST)
    with pytest.raises(ValueError, match="no training query has both"):
        new_model(tiny_bert).fit(topics, qrels.assign(label=0), candidates, **FAST)


def test_an_interrupted_run_resumes_to_the_same_model(tiny_bert, tmp_path):
    topics, qrels, candidates = toy_task()
    options = dict(epochs=2, queries_per_step=2, lr=1e-3, head_lr=1e-2, checkpoint_every=1, seed=7)
    straight = new_model(tiny_bert)
    full_history = straight.fit(topics, qrels, candidates, checkpoint_dir=tmp_path / "straight", **options)

    interrupted = new_model(tiny_bert)
    with pytest.raises(Interrupt):
        interrupted.fit(topics, qrels, candidates, checkpoint_dir=tmp_path / "resumed", callback=stop_at(3),
                        **options)
    assert latest_checkpoint(tmp_path / "resumed").name == "step-000003"
    resumed = new_model(tiny_bert)  # a new process would start from a fresh model too
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        history = resumed.fit(topics, qrels, candidates, checkpoint_dir=tmp_path / "resumed", **options)
    assert [str(w.message) for w in caught] == [f"{tmp_path / 'resumed' / 'step-000003'}: resumed at step 3 of 8"]
    np.testing.assert_allclose(history["loss"], full_history["loss"], rtol=1e-6)
    for key, value in weights(straight).items():
        torch.testing.assert_close(weights(resumed)[key], value, rtol=0, atol=1e-7, msg=key)
    # the last two complete checkpoints stay, and no temporary directory is left behind
    assert sorted(p.name for p in (tmp_path / "resumed").iterdir()) == ["pt_meta.json", "step-000007", "step-000008"]
    assert pl.LongDocReranker.from_pretrained(tmp_path / "resumed" / "step-000008").settings == resumed.settings


def test_resuming_with_other_options_is_refused(tiny_bert, tmp_path):
    topics, qrels, candidates = toy_task(n_queries=2)
    new_model(tiny_bert).fit(topics, qrels, candidates, checkpoint_dir=tmp_path, **FAST)
    with pytest.raises(ValueError, match="other training options"):
        new_model(tiny_bert).fit(topics, qrels, candidates, checkpoint_dir=tmp_path, **{**FAST, "lr": 1.0})


def test_resuming_with_other_model_settings_or_another_model_is_refused(tiny_bert, tmp_path):
    topics, qrels, candidates = toy_task(n_queries=2)
    options = dict(FAST, epochs=2, queries_per_step=1, checkpoint_every=1)
    with pytest.raises(Interrupt):
        new_model(tiny_bert).fit(topics, qrels, candidates, checkpoint_dir=tmp_path, callback=stop_at(1), **options)
    changed = new_model(tiny_bert)
    changed.set_parameter("window", 8)
    changed.set_parameter("stride", 4)
    with pytest.raises(ValueError, match=r"other model settings \(stride 6 -> 4, window 12 -> 8\).*restart=True"):
        changed.fit(topics, qrels, candidates, checkpoint_dir=tmp_path, **options)
    with pytest.raises(ValueError, match="written by a 'maxp' model, not this 'sump'"):
        new_model(tiny_bert, pl.SumP).fit(topics, qrels, candidates, checkpoint_dir=tmp_path, **options)
    history = changed.fit(topics, qrels, candidates, checkpoint_dir=tmp_path, **options, restart=True)
    assert history["step"].iloc[0] == 1  # trained from the start with the new settings


@pytest.mark.filterwarnings("ignore::pyterrier_longdoc.training.selection.ChanceLevelWarning")
def test_fit_shows_a_progress_bar_unless_verbose_is_false(tiny_bert, capsys, monkeypatch):
    from pyterrier_longdoc.engine import progress

    monkeypatch.setattr(progress, "PROGRESS_DELAY", 0)  # verbose=None's bar, as if the toy fit had run long
    topics, qrels, candidates = toy_task(n_queries=2)
    new_model(tiny_bert).fit(topics, qrels, candidates, **FAST)
    assert "fit MaxP" in capsys.readouterr().err
    new_model(tiny_bert, verbose=False).fit(topics, qrels, candidates, **FAST)
    assert "fit MaxP" not in capsys.readouterr().err


def test_losses_check_their_inputs():
    scores = torch.tensor([[2.0, 0.5, 1.5]])
    assert MarginLoss()(scores).item() == pytest.approx(0.0 + 0.5)
    assert ListwiseSoftmaxLoss()(scores).item() == pytest.approx(-torch.log_softmax(scores, 1)[0, 0].item())
    for bad in (torch.tensor([1.0, 2.0]), torch.tensor([[1.0]]), torch.tensor([[1.0, float("nan")]])):
        with pytest.raises(ValueError, match="Loss"):
            MarginLoss()(bad)


def test_bad_training_options(tiny_bert):
    topics, qrels, candidates = toy_task(n_queries=2)
    model = new_model(tiny_bert)
    with pytest.raises(ValueError, match="unknown loss"):
        model.fit(topics, qrels, candidates, loss="hinge")
    with pytest.raises(ValueError, match="warmup"):
        model.fit(topics, qrels, candidates, warmup=1.5)
    with pytest.raises(ValueError, match=r"qrels needs columns .*missing \['label'\] \(it has \['qid', 'docno'\]\)"):
        model.fit(topics, qrels.drop(columns=["label"]), candidates)
    with pytest.raises(TypeError, match="candidates must be"):
        model.fit(topics, qrels, "run.txt")
    for bad in (0, -1.0, float("inf"), "1", True):
        with pytest.raises(ValueError, match="max_grad_norm must be a positive number or None"):
            model.fit(topics, qrels, candidates, max_grad_norm=bad)


# --- gradient clipping and fp16 loss scaling ---

def step_gradient_norms():
    """Records the norm of the gradients every optimiser step is given; remove() the handle after."""
    from torch.optim.optimizer import register_optimizer_step_pre_hook

    norms = []

    def record(optimizer, args, kwargs):
        grads = [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
        norms.append(float(torch.nn.utils.get_total_norm(grads)))

    return norms, register_optimizer_step_pre_hook(record)


def test_max_grad_norm_clips_a_step_only_when_its_gradient_is_longer(tiny_bert):
    topics, qrels, candidates = toy_task()

    def train(**clipping):
        model = new_model(tiny_bert, pl.ParadeAttn)
        norms, handle = step_gradient_norms()
        try:
            history = model.fit(topics, qrels, candidates, **FAST, epochs=2, loss="listwise", **clipping)
        finally:
            handle.remove()
        return weights(model), history, norms

    plain, history, norms = train()
    assert "grad_norm" not in history  # the history of a run without clipping is as it was
    assert min(norms) > 0
    # a limit above every step's norm: the norms are recorded and the training is the same
    loose, history, loose_norms = train(max_grad_norm=1e6)
    assert loose_norms == norms and history["grad_norm"].tolist() == pytest.approx(norms, rel=1e-6)
    assert all(torch.equal(plain[k], loose[k]) for k in plain)
    # below the first step's norm: each longer gradient is cut to the limit, and training changes
    limit = norms[0] / 3
    clipped, history, clipped_norms = train(max_grad_norm=limit)
    assert history["grad_norm"][0] == pytest.approx(norms[0], rel=1e-6)
    assert clipped_norms == pytest.approx([min(limit, n) for n in history["grad_norm"]], rel=1e-4)
    assert not all(torch.equal(plain[k], clipped[k]) for k in plain)


class OverflowAt(MarginLoss):
    """The margin loss, with an infinite gradient at its ``call``-th call (as an fp16 overflow gives)."""

    def __init__(self, call: int):
        super().__init__()
        self.call, self.calls = call, 0

    def forward(self, scores):
        self.calls += 1
        if self.calls == self.call:
            scores = _InfiniteGradient.apply(scores)
        return super().forward(scores)


class _InfiniteGradient(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return torch.full_like(grad, float("inf"))


def test_fp16_scales_the_loss_and_skips_a_step_whose_gradient_overflows(tiny_bert):
    from pyterrier_longdoc.training.fit_loop import grad_scaler

    assert isinstance(grad_scaler(new_model(tiny_bert, dtype="fp16")), torch.amp.GradScaler)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a CPU without native bf16 is warned about
        assert grad_scaler(new_model(tiny_bert, dtype="bf16")) is None
    assert grad_scaler(new_model(tiny_bert)) is None
    topics, qrels, candidates = toy_task()
    model = new_model(tiny_bert, pl.ParadeAttn, dtype="fp16")
    after = [weights(model)]
    history = model.fit(topics, qrels, candidates, **{**FAST, "queries_per_forward": 4}, epochs=3,
                        loss=OverflowAt(call=3), callback=lambda row: after.append(weights(model)))
    assert all(torch.equal(after[2][k], after[3][k]) for k in after[2])  # step 3 was skipped
    assert history["loss_scale"][3] == history["loss_scale"][2] / 2  # and the scale lowered
    assert np.isfinite(history["loss"]).all()
    stepped = [i for i in range(1, len(after)) if not all(torch.equal(after[i - 1][k], after[i][k]) for k in after[i])]
    assert stepped and 3 not in stepped  # the other steps that did not overflow were taken
    assert all(torch.isfinite(v).all() for v in after[-1].values())


def test_the_loss_scale_and_clipping_resume_exactly(tiny_bert, tmp_path):
    straight, resumed, full_history, history = interrupted_and_resumed(
        tiny_bert, tmp_path, stop_at=2, runtime=dict(dtype="fp16"), max_grad_norm=5.0, **FAST, epochs=3)
    # the first steps overflow at the initial scale: a fresh scaler would skip more after resuming
    assert full_history["loss_scale"].iloc[2] < full_history["loss_scale"].iloc[0]
    pd.testing.assert_frame_equal(history, full_history)
    assert all(torch.equal(weights(straight)[k], v) for k, v in weights(resumed).items())


def test_the_rates_decay_after_each_epoch_when_asked(tiny_bert):
    # the authors' configurations for Boytsov et al.'s models multiply the rates by 0.95 an epoch (epoch_lr_decay)
    topics, qrels, candidates = toy_task()
    model = new_model(tiny_bert)
    history = model.fit(topics, qrels, candidates, **FAST, epochs=3, epoch_lr_decay=0.5)
    # the history's lr is the rate after its step (for the next one): each epoch's first step shows its own rate
    assert history.groupby("epoch")["lr"].first().tolist() == pytest.approx([3e-3, 1.5e-3, 7.5e-4])
    assert history["lr"].iloc[-1] == pytest.approx(3.75e-4)
    with pytest.raises(ValueError, match="epoch_lr_decay"):
        pl.training.TrainingArguments(epoch_lr_decay=0)


@pytest.mark.filterwarnings("ignore::pyterrier_longdoc.training.selection.ChanceLevelWarning")  # 2 queries: too few
def test_a_long_fit_leaves_the_tokenization_cache_to_inference(tiny_bert):
    # a 10,000-query fit grew by the ids of every document it sampled, step after step: training reads each
    # document once per epoch, so only validation (inference, at every evaluation) fills the cache
    topics, qrels, candidates = toy_task(n_queries=8)
    digits = "cat dog bird fish red blue green river forest city".split()
    candidates["text"] = [f"{text} {' '.join(digits[int(d)] for d in str(i))}"  # every document a text of its own
                          for i, text in enumerate(candidates["text"])]
    valid = candidates[candidates["qid"].isin(["q0", "q1"])]
    model = new_model(tiny_bert, pl.MaxP)
    cache = model.model.tokenization
    assert cache is model.model.query_tokenization  # one cache: documents and queries
    cache.clear()
    model.fit(topics, qrels, candidates, **FAST, epochs=3, valid_topics=topics.iloc[:2], valid_qrels=qrels,
              valid_candidates=valid, valid_metric="RR@10")
    assert len(cache._cache) == valid["text"].nunique() + valid["query"].nunique()  # 10; 37 when training added its own


def test_fit_steps_with_the_fused_adamw_on_the_cpu_and_the_foreach_one_where_torch_has_no_fused_kernel(monkeypatch):
    """The fused AdamW on the CPU, as the peers: one pass over all the parameters; where torch refuses
    ``fused=True`` (no kernel for the device or dtype), the foreach one, not an error."""
    from pyterrier_longdoc.training.trainer import adamw

    parameters = [torch.nn.Parameter(torch.zeros(3))]
    assert adamw([{"params": parameters}], 0.0).defaults["fused"] is True
    plain = torch.optim.AdamW

    def refuse_fused(*args, fused=None, **kwargs):
        if fused:
            raise RuntimeError("`fused=True` requires all the params to be floating point Tensors of supported devices")
        return plain(*args, **kwargs)

    monkeypatch.setattr(torch.optim, "AdamW", refuse_fused)
    optimizer = adamw([{"params": parameters}], 0.0)
    assert optimizer.defaults["foreach"] is True and not optimizer.defaults["fused"]


def test_the_cpus_fused_adamw_trains_the_loops_model_within_float_noise(tiny_bert, monkeypatch):
    """``fit``'s AdamW on the CPU is torch's fused kernel: its trained model scores within float noise of
    the per-tensor loop's (they round otherwise), and the foreach kernel's exactly as the loop."""
    import pyterrier_longdoc.training.trainer as trainer

    topics, qrels, candidates = toy_task()
    kernels = {"loop": dict(foreach=False), "foreach": dict(foreach=True), "fused": dict(fused=True)}
    scores = {}
    for kind in (*kernels, "library"):
        if kind == "library":
            monkeypatch.undo()
        else:
            monkeypatch.setattr(trainer, "adamw", lambda groups, decay, kind=kind: torch.optim.AdamW(
                groups, weight_decay=decay, **kernels[kind]))
        model = new_model(tiny_bert)
        model.fit(topics, qrels, candidates, **FAST, seed=0)
        scores[kind] = model(candidates)["score"].to_numpy()
    spread = np.ptp(scores["loop"])
    assert spread > 0.1  # it trained
    np.testing.assert_array_equal(scores["foreach"], scores["loop"])
    assert np.abs(scores["fused"] - scores["loop"]).max() <= 1e-5 * max(1.0, spread)
    np.testing.assert_array_equal(scores["library"], scores["fused"])

"""The one-call recipe: passage triples from document qrels, then fit with model selection."""
import json
import shutil
import warnings

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest

import pyterrier_longdoc as pl
from pyterrier_longdoc.engine.backbone import attention_dropout_sites
from pyterrier_longdoc.training import TrainingArguments, document_passage_triples, train_long_document_ranker

from helpers.cross_encoders import PAIRS
from helpers.toy_training import TOY_SETTINGS, toy_task

FILLER = " ".join(f"word{i}" for i in range(40))


def documents_task():
    """Each relevant document holds the query's words in its last window; negatives elsewhere."""
    topics = pd.DataFrame({"qid": ["q1", "q2"], "query": ["castle gate", "river boat"]})
    rows, qrels = [], []
    for qid, query in zip(topics["qid"], topics["query"]):
        for j, text in enumerate([FILLER + " " + FILLER + " " + query + " stands here",
                                  query.split()[0] + " " + FILLER, FILLER + " nothing " + FILLER]):
            rows.append({"qid": qid, "query": query, "docno": f"{qid}-d{j}", "rank": j, "text": text})
            qrels.append({"qid": qid, "docno": f"{qid}-d{j}", "label": int(j == 0)})
    return topics, pd.DataFrame(qrels), pd.DataFrame(rows)


def test_passage_triples_take_the_best_matching_window_of_each_relevant_document():
    topics, qrels, candidates = documents_task()
    triples = document_passage_triples(topics, qrels, candidates, window_words=20, stride_words=10, seed=0)
    assert set(triples["qid"]) == {"q1", "q2"} and len(triples) <= 4
    for query, positive in zip(triples["query"], triples["positive"]):
        assert query in positive and len(positive.split()) <= 20  # the window that holds the query
    assert (triples["positive"] != triples["negative"]).all()
    assert triples.equals(document_passage_triples(topics, qrels, candidates, window_words=20, stride_words=10, seed=0))
    with pytest.raises(ValueError, match="no passage triples"):
        document_passage_triples(topics, qrels.assign(label=0), candidates)


def test_the_old_window_names_of_the_passage_triples_warn_and_give_the_same_triples():
    topics, qrels, candidates = documents_task()
    with pytest.warns(DeprecationWarning, match="(window|stride) is deprecated, use (window|stride)_words") as caught:
        old = document_passage_triples(topics, qrels, candidates, window=20, stride=10, seed=0)
    messages = " ".join(str(w.message) for w in caught)
    assert "window is deprecated, use window_words" in messages and "stride is deprecated, use stride_words" in messages
    assert old.equals(document_passage_triples(topics, qrels, candidates, window_words=20, stride_words=10, seed=0))
    with pytest.raises(TypeError, match="give window_words only"):
        document_passage_triples(topics, qrels, candidates, window=20, window_words=30)
    with pytest.raises(ValueError, match="stride_words must be a positive integer, got 0"):
        document_passage_triples(topics, qrels, candidates, stride_words=0)


def test_the_hardest_negative_is_the_best_matching_window_of_any_negative():
    """Document 1 of each query starts with its first word (the best match among the negatives);
    document 2 holds none of its words: "hardest" always takes document 1's first window."""
    topics, qrels, candidates = documents_task()
    triples = document_passage_triples(topics, qrels, candidates, window_words=20, stride_words=10,
                                       hard_negative="hardest", seed=0)
    first_windows = {row.qid: " ".join(row.text.split()[:20]) for row in candidates[candidates["rank"] == 1].itertuples()}
    hard = triples.groupby("qid").nth(0)  # each positive's first triple is its hard negative
    assert len(hard) == 2 and all(first_windows[q] == n for q, n in zip(hard["qid"], hard["negative"]))
    with pytest.raises(ValueError, match="hard_negative must be one of"):
        document_passage_triples(topics, qrels, candidates, hard_negative="random")


@pytest.mark.filterwarnings("ignore::pyterrier_longdoc.training.selection.ChanceLevelWarning")  # a toy fit of a few steps
def test_the_recipe_runs_both_stages_and_never_ends_below_its_start(tiny_bert, tmp_path):
    topics, qrels, candidates = toy_task()
    args = TrainingArguments(epochs=2, lr=1e-3, head_lr=1e-2, queries_per_step=3, warmup=0.0, valid_fraction=0.25,
                             valid_metric="RR@10", eval_every=1, seed=1)
    model, report = train_long_document_ranker(
        pl.MaxP, tiny_bert, topics, qrels, candidates, output_dir=tmp_path, args=args,
        passage_options=dict(steps=3, batch_size=4, max_length=48),
        model_options=dict(TOY_SETTINGS, window=12, stride=6), dtype="fp32")
    assert isinstance(model, pl.MaxP) and model.history is not None
    passage, document = report["passage stage"], report["document stage"]
    assert passage["steps"] == 3 and passage["triples"] > 0 and passage["loss_first"] is not None
    assert (tmp_path / "passage-stage" / "config.json").exists()
    assert document["best"] >= document["start"] and document["restored"] and document["steps"] == 4
    assert 0 < document["random"] <= document["random_p95"] <= 1  # what random orders of its candidates score
    assert document["seconds"] > 0 and passage["cpu_seconds"] > 0
    assert document["trained"] == "aggregator, encoder" or document["trained"].startswith("none: ")
    # the fusion with the first stage (the candidates' score), chosen on the 2 validation queries and saved
    assert report["fusion"] == model.fusion.to_dict() and model.fusion.queries == 2
    assert model.fusion.values["1.0"] == pytest.approx(document["best"])  # the model alone: fit's best
    assert pl.MaxP.from_pretrained(tmp_path).fusion == model.fusion
    skipped, report = train_long_document_ranker(pl.FirstP, str(tmp_path / "passage-stage"), topics, qrels, candidates,
                                                 output_dir=tmp_path / "again", args=args, passages=False,
                                                 model_options=TOY_SETTINGS, dtype="fp32")
    assert "passage stage" not in report and not (tmp_path / "again" / "passage-stage").exists()
    unscored = candidates.drop(columns="score")
    _, report = train_long_document_ranker(pl.FirstP, str(tmp_path / "passage-stage"), topics, qrels, unscored,
                                           output_dir=tmp_path / "unscored", args=args, passages=False,
                                           model_options=TOY_SETTINGS, dtype="fp32")
    assert report["fusion"] == ("not chosen: the candidates carry no 'score' column, the first stage's score that "
                                "fusion combines")
    with pytest.raises(ValueError, match=r"fusion=True\): the candidates carry no 'score' column"):
        train_long_document_ranker(pl.FirstP, str(tmp_path / "passage-stage"), topics, qrels, unscored,
                                   output_dir=tmp_path / "unscored", args=args, passages=False,
                                   model_options=TOY_SETTINGS, dtype="fp32", fusion=True)


@pytest.mark.filterwarnings("ignore::pyterrier_longdoc.training.selection.ChanceLevelWarning")  # a toy fit of a few steps
def test_the_recipe_gives_each_stage_its_settings(tiny_bert, tmp_path, monkeypatch):
    """Without args and passage_options, the passage stage runs with RECIPE_PASSAGE_STAGE and fit
    with RECIPE_DOCUMENT_STAGE (and the recipe's seed)."""
    import importlib

    from pyterrier_longdoc.training import passage
    from pyterrier_longdoc.training.trainer import Trainer

    recipe = importlib.import_module("pyterrier_longdoc.training.recipe")
    monkeypatch.setitem(recipe.RECIPE_PASSAGE_STAGE, "steps", 1)  # small, the defaults otherwise
    monkeypatch.setitem(recipe.RECIPE_PASSAGE_STAGE, "batch_size", 4)
    monkeypatch.setitem(recipe.RECIPE_DOCUMENT_STAGE, "epochs", 1)
    seen = {}
    original_passage, original_trainer = passage.train_passage_ranker, Trainer.__init__

    def passage_spy(backbone, data, output_dir, **options):
        seen["passage"] = options
        return original_passage(backbone, data, output_dir, **options)

    def trainer_spy(self, reranker, args, *rest, **kwargs):
        seen["document"] = args
        seen["attention dropout"] = {rate for *_, rate in attention_dropout_sites(reranker.model)}
        original_trainer(self, reranker, args, *rest, **kwargs)

    monkeypatch.setattr(passage, "train_passage_ranker", passage_spy)
    monkeypatch.setattr(Trainer, "__init__", trainer_spy)
    topics, qrels, candidates = toy_task()
    bert = tmp_path / "bert"  # the tiny BERT with BERT's attention dropout (the fixture's has none)
    shutil.copytree(tiny_bert, bert)
    config = json.loads((bert / "config.json").read_text())
    (bert / "config.json").write_text(json.dumps({**config, "attention_probs_dropout_prob": 0.1}))
    train_long_document_ranker(pl.FirstP, bert, topics, qrels, candidates, output_dir=tmp_path / "recipe",
                               model_options=TOY_SETTINGS, dtype="fp32", seed=5)
    # a checkpoint every quarter of the steps (here 1), so that a killed recipe resumes its passage stage
    assert seen["passage"] == {**recipe.RECIPE_PASSAGE_STAGE, "seed": 5, "dtype": "fp32", "checkpoint_every": 1}
    assert seen["document"] == TrainingArguments(**recipe.RECIPE_DOCUMENT_STAGE, seed=5)
    assert seen["attention dropout"] == {0.0}  # the fused attention kernel's setting, while it trains
    # an encoder whose attention dropout the library cannot switch trains with its own, and the report says so
    monkeypatch.setattr(recipe, "attention_dropout_sites", lambda model: [])
    _, report = train_long_document_ranker(pl.FirstP, bert, topics, qrels, candidates, output_dir=tmp_path / "own",
                                           model_options=TOY_SETTINGS, dtype="fp32", seed=5)
    assert seen["document"].attention_dropout is None and report["document stage"]["attention_dropout"] is None
    assert seen["attention dropout"] == {0.1}  # the encoder's own


# --- the recipe saves what it trained in its output_dir ---

def test_the_recipe_saves_the_trained_model_in_its_output_dir(tiny_bert, tmp_path):
    from pyterrier_longdoc.training import train_long_document_ranker

    topics, qrels, candidates = toy_task(n_queries=4)
    args = TrainingArguments(epochs=1, lr=1e-3, head_lr=1e-2, queries_per_step=2, warmup=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, _ = train_long_document_ranker(pl.MaxP, tiny_bert, topics, qrels, candidates, passages=False,
                                              output_dir=tmp_path / "recipe", args=args, model_options=dict(
                                                  window=12, stride=6, max_length=48, max_query_tokens=8))
    assert repr(model).startswith(f"MaxP({str(tmp_path / 'recipe')!r}") and model.history is not None
    loaded = pt.Artifact.load(str(tmp_path / "recipe"))
    assert isinstance(loaded, pl.MaxP)
    np.testing.assert_allclose(loaded.predict(PAIRS), model.predict(PAIRS), atol=1e-6)


@pytest.fixture
def trained(monkeypatch) -> list:
    """The recipe at a toy size; the list gets an entry for each passage stage trained (not reused)."""
    import importlib

    from pyterrier_longdoc.training import passage

    recipe = importlib.import_module("pyterrier_longdoc.training.recipe")
    monkeypatch.setitem(recipe.RECIPE_PASSAGE_STAGE, "steps", 1)
    monkeypatch.setitem(recipe.RECIPE_PASSAGE_STAGE, "batch_size", 4)
    monkeypatch.setitem(recipe.RECIPE_DOCUMENT_STAGE, "epochs", 1)
    trained = []
    original = passage.train_passage_ranker
    monkeypatch.setattr(passage, "train_passage_ranker", lambda *args, **kwargs: trained.append(1) or original(*args, **kwargs))
    return trained


@pytest.mark.filterwarnings("ignore::pyterrier_longdoc.training.selection.ChanceLevelWarning")  # a toy fit
def test_running_a_finished_recipe_again_reuses_its_passage_stage(tiny_bert, tmp_path, trained, capsys):
    topics, qrels, candidates = documents_task()
    run = dict(output_dir=tmp_path / "recipe", model_options=TOY_SETTINGS, dtype="fp32")
    train_long_document_ranker(pl.FirstP, tiny_bert, topics, qrels, candidates, **run)
    assert len(trained) == 1 and "reused" not in capsys.readouterr().out
    _, report = train_long_document_ranker(pl.FirstP, tiny_bert, topics, qrels, candidates, **run)
    assert len(trained) == 1 and "is complete" in capsys.readouterr().out
    assert report["passage stage"]["triples"] > 0 and report["passage stage"]["reused"]
    train_long_document_ranker(pl.FirstP, tiny_bert, topics, qrels, candidates, **run, seed=3)
    assert len(trained) == 2  # other options: trained again


@pytest.mark.filterwarnings("ignore::pyterrier_longdoc.training.selection.ChanceLevelWarning")  # a toy fit
def test_a_finished_passage_stage_is_known_by_its_backbones_files_not_their_folder(tiny_bert, tmp_path, trained,
                                                                                    capsys):
    """A passage stage copied into another run's folder is reused where that run's backbone holds the same
    files in another folder (the tutorials' lab reuses the demo's so), and trained again where the backbone's
    weights differ in the same folder."""
    import shutil

    topics, qrels, candidates = documents_task()
    first, copy = tmp_path / "first-backbone", tmp_path / "copied-backbone"
    shutil.copytree(tiny_bert, first)
    shutil.copytree(tiny_bert, copy)
    options = dict(model_options=TOY_SETTINGS, dtype="fp32")
    train_long_document_ranker(pl.FirstP, str(first), topics, qrels, candidates, output_dir=tmp_path / "a", **options)
    shutil.copytree(tmp_path / "a" / "passage-stage", tmp_path / "b" / "passage-stage")
    capsys.readouterr()
    train_long_document_ranker(pl.FirstP, str(copy), topics, qrels, candidates, output_dir=tmp_path / "b", **options)
    assert len(trained) == 1 and "is complete" in capsys.readouterr().out
    weights = next(copy.glob("*.safetensors"))
    weights.write_bytes(weights.read_bytes()[:-1] + bytes([weights.read_bytes()[-1] ^ 1]))  # other weights, same folder
    shutil.rmtree(tmp_path / "c", ignore_errors=True)
    shutil.copytree(tmp_path / "a" / "passage-stage", tmp_path / "c" / "passage-stage")
    train_long_document_ranker(pl.FirstP, str(copy), topics, qrels, candidates, output_dir=tmp_path / "c", **options)
    assert len(trained) == 2 and "is complete" not in capsys.readouterr().out

"""PyTerrier's and sentence-transformers' conventions: training inside a pipeline (pt.Estimator),
saved models as pt.Artifacts with a model card, predict/rank on plain lists, frames sorted by qid
and rank, a progress bar with a total; and two checks on what a model gives: weights verified
against their checksum, non-finite scores named; and the project's own: its metadata in
pyproject.toml, the code clean under ruff, type information shipped (py.typed)."""
import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest
import torch
from helpers.setup_py import long_description
from helpers.toy_training import FAST, new_model, toy_task
from safetensors.torch import load_file, save_file

import pyterrier_longdoc as pl
from pyterrier_longdoc.engine.weights import saved_names

# models built over a plain encoder (the tiny random BERT) get a new head: expected here, not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::pyterrier_longdoc.UntrainedHeadWarning")


def first_stage(candidates: pd.DataFrame) -> pt.Transformer:
    """A retrieval stand-in: the candidates of the topics it is given, with their text."""
    return pt.Transformer.from_df(candidates)


@pytest.mark.filterwarnings("ignore::pyterrier_longdoc.training.selection.ChanceLevelWarning")  # a toy fit of a few steps
def test_a_pipeline_trains_its_last_stage_with_validation_and_checkpoints(tiny_bert, tmp_path):
    topics, qrels, candidates = toy_task()
    model = new_model(tiny_bert)
    model.fit_options = dict(FAST, epochs=2, valid_metric="RR@10", checkpoint_dir=str(tmp_path / "ckpt"),
                             load_best_model_at_end=False)  # the trained weights, even where the start was as good
    before = {k: v.clone() for k, v in model.model.state_dict().items()}
    pipeline = first_stage(candidates) >> model
    pipeline.fit(topics[:6], qrels, topics[6:], qrels)  # PyTerrier's Compose.fit runs first_stage, then model.fit
    assert model.history is not None and len(model.history) == 4  # one row per optimiser step: 2 epochs of 2 steps
    assert model.history["RR@10"].notna().sum() == 2  # validated after each epoch
    assert model.history.attrs["selection"]["start"] is not None  # and at the start, kept beside the rows
    assert any(not torch.equal(before[k], v) for k, v in model.model.state_dict().items())
    # the checkpoint folder's root loads its latest checkpoint
    resumed = pl.LongDocReranker.from_pretrained(tmp_path / "ckpt")
    np.testing.assert_allclose(resumed(candidates)["score"], model(candidates)["score"], atol=1e-6)


@pytest.mark.filterwarnings("ignore::pyterrier_longdoc.training.selection.ChanceLevelWarning")  # a toy fit of a few steps
def test_direct_calls_take_topics_with_candidates_or_the_candidates_themselves(tiny_bert):
    topics, qrels, candidates = toy_task()
    options = dict(FAST, epochs=1)
    histories = [new_model(tiny_bert).fit(topics, qrels, candidates=candidates, **options),
                 new_model(tiny_bert).fit(candidates, qrels, **options),
                 new_model(tiny_bert).fit(topics, qrels, candidates, **options)]  # version 0.1's call
    for history in histories[1:]:
        pd.testing.assert_frame_equal(history, histories[0])
    # validation topics are retrieved by the training pipeline unless told otherwise
    model = new_model(tiny_bert)
    history = model.fit(topics[:6], qrels, topics[6:], qrels, candidates=first_stage(candidates), valid_metric="RR@10",
                        **options)
    assert history["RR@10"].notna().any()
    with pytest.raises(TypeError, match="need candidates"):
        new_model(tiny_bert).fit(topics, qrels, topics, qrels)
    with pytest.raises(TypeError, match="not given twice"):
        new_model(tiny_bert).fit(candidates, qrels, candidates=candidates)


@pytest.mark.filterwarnings("ignore::pyterrier_longdoc.training.selection.ChanceLevelWarning")  # a toy fit of a few steps
@pytest.mark.filterwarnings("ignore::pyterrier_longdoc.training.selection.TrainingBelowStartWarning")  # its 2 steps may
def test_a_saved_model_is_a_pyterrier_artifact_with_a_model_card(tiny_bert, tmp_path):
    topics, qrels, candidates = toy_task()
    model = new_model(tiny_bert)
    model.fit(topics, qrels, candidates, **FAST, epochs=1, valid_topics=topics, valid_qrels=qrels,
              valid_candidates=candidates, valid_metric="RR@10")
    model.save_pretrained(tmp_path / "saved")
    loaded = pt.Artifact.load(str(tmp_path / "saved"))
    assert type(loaded) is pl.MaxP and isinstance(loaded, pt.Artifact) and isinstance(loaded, pt.Estimator)
    np.testing.assert_allclose(loaded(candidates)["score"], model(candidates)["score"], atol=1e-6)
    card = (tmp_path / "saved" / "README.md").read_text()
    front = card.split("---")[1]
    assert "library_name: pyterrier-longdoc" in front and "base_model" not in front  # a local folder
    assert "| `window` | `12` |" in card and "2 optimiser steps over 1 epoch;" in card
    assert "| RR@10 |" in card and "- 8 topics\n- 32 judgements" in card
    assert json.loads((tmp_path / "saved" / "pt_meta.json").read_text())["type"] == "reranker"


def test_predict_and_rank_on_plain_lists(tiny_bert):
    model = new_model(tiny_bert)
    docs = ["the castle house", "a red dog", "castle castle castle"]
    scores = model.predict([("what castle", d) for d in docs])
    np.testing.assert_allclose(scores, model.score_texts(["what castle"] * 3, docs), rtol=1e-6)
    assert np.ndim(model.predict(("what castle", docs[0]))) == 0  # one pair, one score
    ranked = model.rank("what castle", docs, top_k=2, return_documents=True)
    order = np.argsort(-scores)
    assert [r["corpus_id"] for r in ranked] == order[:2].tolist()
    assert ranked[0]["text"] == docs[order[0]] and ranked[0]["score"] == pytest.approx(scores[order[0]])
    with pytest.raises(TypeError, match="pair 1"):
        model.predict([("q", "d"), ("q",)])
    assert model.predict([]).shape == (0,)


def test_frames_come_out_sorted_by_qid_then_rank_and_the_progress_bar_counts_documents(tiny_bert):
    _, _, candidates = toy_task()
    model = new_model(tiny_bert)
    out = model(candidates.sample(frac=1, random_state=1))
    assert out[["qid", "rank"]].values.tolist() == out.sort_values(["qid", "rank"])[["qid", "rank"]].values.tolist()
    assert (out.groupby("qid")["rank"].apply(list) == [list(range(4))] * 8).all()

    class Progress:
        seen = 0

        def update(self, n):
            self.seen += n

    progress = Progress()
    with torch.no_grad():
        model.model.score(candidates["query"].tolist(), candidates["text"].tolist(), batch_size=5, progress=progress)
    assert progress.seen == len(candidates)  # documents, though each has several windows


def test_changed_weights_are_refused_unless_asked(tiny_bert, tmp_path):
    model = new_model(tiny_bert)
    model.save_pretrained(tmp_path / "saved")
    weights = tmp_path / "saved" / "model.safetensors"
    tensors = load_file(weights)
    for name in sorted(tensors)[len(tensors) // 2:]:  # the second half zeroed: the file keeps its size
        tensors[name] = torch.zeros_like(tensors[name])
    save_file(tensors, weights, metadata={"format": "pt"})
    with pytest.raises(ValueError, match=f"{weights} is corrupt or truncated, or was changed"):
        pl.MaxP.from_pretrained(tmp_path / "saved")
    loaded = pl.MaxP.from_pretrained(tmp_path / "saved", verify_weights=False)  # changed on purpose
    internal = {saved: name for name, saved in saved_names(loaded.model).items()}
    assert torch.count_nonzero(loaded.model.state_dict()[internal[sorted(tensors)[-1]]]) == 0


def test_non_finite_scores_are_named_with_their_rows(tiny_bert):
    _, _, candidates = toy_task()
    model = new_model(tiny_bert)
    with torch.no_grad():
        model.model.aggregator.head.classifier.bias.fill_(float("nan"))  # a diverged model
    with pytest.raises(ValueError, match=r"MaxP\(.*\) gave 32 non-finite scores .*qid='q0' docno='q0-d0'"):
        model(candidates)
    with pytest.raises(ValueError, match=r"non-finite scores .* pair 0 \(query 'what cat'\)"):
        model.score_texts(["what cat"], ["the castle"])


def test_a_reranker_around_a_model_built_in_memory(tiny_bert):
    model = new_model(tiny_bert)
    again = pl.LongDocReranker.from_model(model.model, model.config, batch_size=3)
    assert type(again) is pl.MaxP and again.batch_size == 3 and again.model is model.model
    _, _, candidates = toy_task()
    np.testing.assert_allclose(again(candidates)["score"], model(candidates)["score"], atol=1e-6)
    with pytest.raises(ValueError, match="not 'firstp'"):
        pl.FirstP.from_model(model.model, model.config)


ROOT = Path(__file__).resolve().parents[2]


def test_the_project_is_described_by_pyproject():
    tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from Python 3.11")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    # setup.py declares the one thing pyproject.toml cannot, the long description (README with its relative links
    # rewritten), and for tools that still run it delegates the rest
    call, = [node for node in ast.walk(ast.parse((ROOT / "setup.py").read_text()))
             if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "setup"]
    assert not call.args and {k.arg for k in call.keywords} == {"long_description", "long_description_content_type"}
    assert project["project"]["license"] == "Apache-2.0" and project["project"]["license-files"] == ["LICENSE"]
    assert project["build-system"]["build-backend"] == "setuptools.build_meta"
    assert project["project"]["dynamic"] == ["version", "readme"]  # one version: pyterrier_longdoc/_version.py
    assert project["tool"]["setuptools"]["dynamic"]["version"]["attr"] == "pyterrier_longdoc._version.__version__"
    assert project["project"]["scripts"]["pyterrier-longdoc"] == "pyterrier_longdoc.cli:main"
    assert "reranker.pyterrier_longdoc" in project["project"]["entry-points"]["pyterrier.artifact"]
    assert "ruff" in project["project"]["optional-dependencies"]["dev"]
    assert "py.typed" in project["tool"]["setuptools"]["package-data"]["pyterrier_longdoc"]
    assert (ROOT / "pyterrier_longdoc" / "py.typed").is_file()


def test_the_long_description_has_no_link_pypi_cannot_follow():
    """PyPI's page of README.md would link its relative paths to pypi.org: each is its text and its path."""
    readme = (ROOT / "README.md").read_text()
    description = long_description(readme)
    relative = [link for link in re.findall(r"\]\(([^)]+)\)", readme) if "://" not in link]
    assert relative and [link for link in re.findall(r"\]\(([^)]+)\)", description) if "://" not in link] == []
    assert all(link in description for link in relative)  # each path still named
    assert [link for link in re.findall(r"\]\(([^)]+)\)", readme) if "://" in link] == \
        re.findall(r"\]\(([^)]+)\)", description)  # the absolute links kept, in order
    assert description.startswith("# pyterrier-longdoc\n") and "files of the source repository" in description


def test_the_metadata_names_its_authors_valid_classifiers_and_real_urls():
    """As CITATION.cff: its authors, and Project-URLs only of pages that exist (PyTerrier, the papers it
    cites by DOI or arXiv id); the project's own URL is recorded nowhere. Classifiers are PyPI's own."""
    tomllib = pytest.importorskip("tomllib")
    trove_classifiers = pytest.importorskip("trove_classifiers")
    yaml = pytest.importorskip("yaml")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert project["authors"] == [{"name": author["name"]} for author in citation["authors"]]
    assert project["classifiers"] and set(project["classifiers"]) <= trove_classifiers.classifiers
    assert not [c for c in project["classifiers"] if c.startswith("License ::")]  # PEP 639: license is the SPDX one
    cited = {reference.get("doi") for reference in citation["references"]}
    cited |= {i["value"] for reference in citation["references"] for i in reference.get("identifiers", [])}
    for label, url in project["urls"].items():
        assert len(label) <= 32, label  # the core metadata's limit on a Project-URL's label
        if "doi.org/" in url:
            assert url.split("doi.org/")[1] in cited, url
        elif "arxiv.org/abs/" in url:
            assert "arXiv:" + url.split("arxiv.org/abs/")[1] in cited, url
        else:
            assert url == "https://github.com/terrier-org/pyterrier", url


def test_the_code_passes_ruff():
    pytest.importorskip("ruff", reason="ruff comes with the dev extra: pip install -e '.[dev]'")
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", str(ROOT)], capture_output=True,
                          text=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr

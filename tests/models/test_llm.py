"""LLM cross-encoders (RankLLaMA-style) on tiny random Llama and Qwen2 LMs, offline: a window's
score is the checkpoint's own, the template is RankLLaMA's (the published model card's input by
default, the paper's EOS with append_eos=True), LoRA adapters train, save in peft's format and merge."""
import pandas as pd
import numpy as np
import pytest
import torch

pytest.importorskip("peft")

from helpers.llm_backbones import write_tiny_lm
from helpers.zoo_backbones import assert_padding_invariant, margin_training

import pyterrier_longdoc as pl
from pyterrier_longdoc.aggregators.heads import pool
from pyterrier_longdoc.training import TrainingArguments

QUERY, DOC = "what red cat", "the red cat sat on a mat near the river castle in the city"


@pytest.fixture(scope="module", params=["llama", "qwen2"])
def lm(request, tmp_path_factory):
    return str(write_tiny_lm(tmp_path_factory.mktemp(request.param), request.param))


def reference_scores(path, sequences: list[list[int]]) -> np.ndarray:
    """AutoModelForSequenceClassification's scores of id sequences, one at a time (no padding)."""
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained(path).eval()
    with torch.no_grad():
        return np.array([float(model(input_ids=torch.tensor([ids])).logits[0, 0]) for ids in sequences])


def rankllama_input(tokenizer, query: str, document: str, eos: bool = False) -> list[int]:
    """RankLLaMA's input as its published passage model's card gives it, ``tokenizer('query: q',
    'document: d')``; with ``eos``, the paper's (and Tevatron's ``--append_eos_token``): the EOS appended."""
    return tokenizer(f"query: {query}", f"document: {document}")["input_ids"] + [tokenizer.eos_token_id] * eos


@pytest.mark.parametrize("append_eos", [None, False, True])
def test_a_window_scores_as_the_checkpoint_does_on_rankllamas_input(lm, append_eos):
    from transformers import AutoTokenizer

    given = {} if append_eos is None else {"append_eos": append_eos}
    model = pl.LLMFirstP(lm, max_length=128, dtype="fp32", **given)  # the checkpoint's own precision on a GPU too
    ids = rankllama_input(AutoTokenizer.from_pretrained(lm), QUERY, DOC, eos=bool(append_eos))
    np.testing.assert_allclose(model.predict([(QUERY, DOC)]), reference_scores(lm, [ids]), rtol=1e-5, atol=1e-6)


def test_the_default_input_is_the_published_model_cards_and_the_eos_changes_the_score(lm):
    model = pl.LLMFirstP(lm, max_length=128, dtype="fp32")
    assert model.settings["append_eos"] is False and model.model.layout.suffix[-1:] != (
        model.model.tokenizer.eos_token_id,)
    with_eos = pl.LLMFirstP(lm, max_length=128, dtype="fp32", append_eos=True)
    assert abs(float(with_eos.predict([(QUERY, DOC)])[0] - model.predict([(QUERY, DOC)])[0])) > 1e-3
    # a plain MaxP over the LM keeps the EOS rule of a head that reads the last token
    assert pl.MaxP(lm).model.layout.suffix[-1:] == (model.model.tokenizer.eos_token_id,)


def test_every_maxp_window_is_the_checkpoints_score_of_template_and_window(lm):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(lm)
    model = pl.LLMMaxP(lm, window=4, stride=2, query_prefix="Q: ", doc_prefix="D: ", append_eos=True, dtype="fp32")
    doc_ids = model.model.tokenization([DOC], 1000)[0][0].tolist()
    layout = model.model.layout
    query_ids = model.model.query_tokenization([QUERY], 32)[0][0].tolist()
    windows = [list(layout.prefix) + query_ids + list(layout.middle) + doc_ids[s:e] + list(layout.suffix)
               for s, e in model.chunk_spans(DOC)]
    assert len(windows) > 3 and all(w[-1] == tokenizer.eos_token_id for w in windows)
    # the template is the text "Q: what red cat" tokenized as one, as RankLLaMA tokenizes it
    assert windows[0][:len(layout.prefix) + len(query_ids)] == tokenizer("Q: " + QUERY)["input_ids"]
    np.testing.assert_allclose(model.predict([(QUERY, DOC)]), reference_scores(lm, windows).max(), rtol=1e-5)


@pytest.mark.parametrize("name", ["llm_firstp", "llm_maxp", "llm_longp"])
def test_padding_never_changes_a_score(lm, name):
    assert_padding_invariant(pl.model_class(name)(lm, window=None if name != "llm_maxp" else 8, stride=None))


def test_last_token_pooling_reads_the_last_real_token_with_left_or_right_padding():
    class Output:
        last_hidden_state = torch.arange(2 * 4, dtype=torch.float).view(2, 4, 1)

    right = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1]])
    left = torch.tensor([[0, 0, 1, 1], [1, 1, 1, 1]])
    assert pool(Output, right, "last").flatten().tolist() == [1.0, 7.0]
    assert pool(Output, left, "last").flatten().tolist() == [3.0, 7.0]


def test_a_prefix_the_tokenizer_joins_with_the_text_leaves_the_text_alone(tiny_bert):
    from transformers import AutoTokenizer

    from pyterrier_longdoc.engine.tokenization import Tokenization

    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    ids = lambda text: tokenizer(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    spaced, joined = Tokenization(tokenizer, prefix="cat "), Tokenization(tokenizer, prefix="ca")
    assert spaced(["dog river"], 10)[0][0].tolist() == ids("dog river")
    assert ids("cat")[:2] != ids("ca")  # "ca" + "t" is the one token "cat": the prefix's tokens are gone
    assert joined(["t river"], 10)[0][0].tolist() == ids("t river")


def test_an_encoder_is_refused_with_the_model_to_use(tiny_bert):
    with pytest.raises(ValueError, match="decoder-only.*use MaxP"):
        pl.LLMMaxP(tiny_bert)


def test_longp_reads_the_lms_whole_context(lm):
    model = pl.LLMLongP(lm, max_doc_tokens=1000)
    chunking, layout = model.model.chunking, model.model.layout
    assert chunking.max_length == 256  # the tiny LM's max_position_embeddings
    assert model.chunk_spans(DOC * 20) == [(0, 256 - chunking.max_query_tokens - layout.n_special)]


def test_no_token_types_and_no_key_value_cache(lm, monkeypatch):
    model = pl.LLMFirstP(lm)
    seen = {}
    forward = model.model.encoder.forward

    def recording(*args, **kwargs):
        seen.update(kwargs)
        return forward(*args, **kwargs)

    monkeypatch.setattr(model.model.encoder, "forward", recording)
    model.predict([(QUERY, DOC)])
    assert seen["token_type_ids"] is None and model.model.encoder.config.use_cache is False


def test_lora_trains_only_the_adapters_and_the_score_head(lm):
    # the toy task's words come late; with the EOS a window is read whole (without it, at its last word); seeded:
    # under some draws the best window of both documents is the same filler, which no margin step can move
    model = pl.LLMMaxP(lm, window=24, stride=12, max_doc_tokens=200, append_eos=True, seed=3)
    before = {name: p.detach().clone() for name, p in model.model.named_parameters()}
    trainable = {name for name, p in model.model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in name or name.startswith("aggregator.head.") for name in trainable)
    encoder = model.model.encoder
    assert getattr(encoder, "is_activation_checkpointing", None) or encoder.is_gradient_checkpointing
    loss_before, loss_after = margin_training(model, steps=6, lr=1e-2)
    assert loss_after < loss_before
    changed = {name for name, p in model.model.named_parameters() if not torch.equal(p, before[name])}
    assert changed and changed <= trainable


@pytest.mark.filterwarnings("ignore::pyterrier_longdoc.CroppingWarning")  # long toy documents
def test_fit_trains_the_adapters_and_the_head_only(lm, tmp_path):
    import pandas as pd

    topics = pd.DataFrame({"qid": ["q1", "q2"], "query": ["red cat", "blue river"]})
    candidates = pd.DataFrame([{"qid": q, "query": query, "docno": f"{q}-{k}", "rank": k, "score": -k,
                                "text": f"the {word} sat on a mat " * 3}
                               for q, query in topics.itertuples(index=False)
                               for k, word in enumerate(query.split() + ["dog", "house"])])
    qrels = candidates.assign(label=candidates["rank"].eq(0).astype(int))[["qid", "docno", "label"]]
    model = pl.LLMMaxP(lm, window=8, stride=4, max_doc_tokens=32)
    before = {name: p.detach().clone() for name, p in model.model.named_parameters()}
    history = model.fit(topics, qrels, candidates=candidates, epochs=2, lr=1e-2, head_lr=1e-2, queries_per_step=2,
                        checkpoint_dir=tmp_path / "checkpoints")
    assert len(history) == 2
    changed = {name for name, p in model.model.named_parameters() if not torch.equal(p, before[name])}
    assert changed and all("lora_" in name or name.startswith("aggregator.head.") for name in changed)
    resumed = pl.LLMMaxP.from_pretrained(tmp_path / "checkpoints")  # the latest checkpoint, adapters and all
    np.testing.assert_array_equal(resumed.predict([(QUERY, DOC)]), model.predict([(QUERY, DOC)]))


@pytest.fixture(scope="module")
def trained(lm):
    model = pl.LLMFirstP(lm, max_length=128, dtype="fp32")  # the whole of DOC, in fp32 on a GPU too
    margin_training(model, steps=3, lr=1e-2)  # the adapters' B are no longer zero
    return model


def test_saved_adapters_load_with_peft_onto_the_base_model(trained, lm, tmp_path):
    from peft import PeftModel
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    trained.save_adapter(tmp_path / "adapter")
    base = AutoModelForSequenceClassification.from_pretrained(lm)
    peft_model = PeftModel.from_pretrained(base, str(tmp_path / "adapter")).eval()
    ids = rankllama_input(AutoTokenizer.from_pretrained(lm), QUERY, DOC)
    with torch.no_grad():
        expected = float(peft_model(input_ids=torch.tensor([ids])).logits[0, 0])
    ours = trained.predict([(QUERY, DOC)])
    np.testing.assert_allclose(ours, [expected], rtol=1e-4)
    assert abs(expected - reference_scores(lm, [ids])[0]) > 1e-4  # training changed the score
    # the adapter folder is a starting point too (RankLLaMA's published form), merged into its base
    np.testing.assert_allclose(pl.LLMFirstP(str(tmp_path / "adapter"), max_length=128, lora=None, dtype="fp32").predict(
        [(QUERY, DOC)]), ours, rtol=1e-4)


def test_merging_keeps_the_scores_and_saves_a_plain_cross_encoder(trained, tmp_path):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    before = trained.predict([(QUERY, DOC)])
    trained.merge_lora()
    assert trained.settings["lora"] is None
    assert not any("lora_" in name for name, _ in trained.model.named_parameters())
    np.testing.assert_allclose(trained.predict([(QUERY, DOC)]), before, rtol=1e-4)
    trained.save_pretrained(tmp_path / "merged")
    np.testing.assert_array_equal(pl.LongDocReranker.from_pretrained(tmp_path / "merged", dtype="fp32").predict([(QUERY, DOC)]),
                                  trained.predict([(QUERY, DOC)]))
    trained.save_cross_encoder(tmp_path / "cross")
    ids = rankllama_input(AutoTokenizer.from_pretrained(tmp_path / "cross"), QUERY, DOC)
    model = AutoModelForSequenceClassification.from_pretrained(tmp_path / "cross").eval()
    with torch.no_grad():
        np.testing.assert_allclose(float(model(input_ids=torch.tensor([ids])).logits[0, 0]), before, rtol=1e-4)
    with pytest.raises(ValueError, match="no LoRA adapters"):
        trained.merge_lora()


def test_a_cross_encoder_is_saved_only_once_the_adapters_are_merged(lm, tmp_path):
    with pytest.raises(ValueError, match="merge_lora"):
        pl.LLMFirstP(lm).save_cross_encoder(tmp_path / "cross")


def test_bad_lora_settings_are_named(lm):
    with pytest.raises(ValueError, match="unknown LoRA settings.*rank"):
        pl.LLMFirstP(lm, lora={"rank": 4})


def test_adapters_train_at_rankllamas_rate_unless_told(lm):
    assert pl.LLMFirstP(lm).fit_options == {"lr": 1e-4}
    assert pl.LLMFirstP(lm, fit_options={"lr": 3e-4}).fit_options == {"lr": 3e-4}
    assert pl.LLMFirstP(lm, lora=None).fit_options == {}


def test_explicit_training_arguments_keep_the_adapters_rate(lm, monkeypatch):
    # args=TrainingArguments(...) used to drop every stored fit option: LoRA adapters trained at
    # the encoder rate 1e-5 instead of 1e-4 for everyone who passed args
    seen = {}

    def fake_fit(reranker, topics, qrels, candidates, args=None, text=None, **options):
        seen["args"] = (args or TrainingArguments()).replace(**options)
        return pd.DataFrame({"loss": [0.0]})

    monkeypatch.setattr("pyterrier_longdoc.training.fit", fake_fit)
    topics = pd.DataFrame({"qid": ["q"], "query": ["red cat"]})
    qrels = pd.DataFrame({"qid": ["q"], "docno": ["d"], "label": [1]})
    candidates = pd.DataFrame({"qid": ["q"], "docno": ["d"], "text": ["the red cat"], "score": [1.0], "rank": [0]})
    model = pl.LLMFirstP(lm)
    model.fit(topics, qrels, candidates=candidates, args=TrainingArguments(epochs=2, seed=3))
    assert seen["args"].lr == 1e-4 and seen["args"].epochs == 2 and seen["args"].seed == 3
    model.fit(topics, qrels, candidates=candidates, args=TrainingArguments(lr=1e-5))  # set explicitly: kept
    assert seen["args"].lr == 1e-5
    model.fit(topics, qrels, candidates=candidates, args=TrainingArguments.from_options({"lr": 2e-5}))
    assert seen["args"].lr == 2e-5
    assert TrainingArguments(epochs=2).replace(lr=3e-5).given == {"epochs", "lr"}

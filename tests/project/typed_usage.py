"""Typed use of the model classes: ``tests/project/test_typing.py`` runs mypy on this file, which must
type-check cleanly. Every family is built with its own settings, and loaded with overrides; nothing here runs."""
from __future__ import annotations

from pyterrier_longdoc import (AvgP, BiEncoderFirstP, BiEncoderLongP, BiEncoderMaxP, CedrDrmm, CedrKnrm, CedrPacrr,
                               FirstP, KMaxAvgP, LLMFirstP, LLMKMaxAvgP, LLMLongP, LLMMaxP, LLMSumP, LongDocReranker,
                               LongP, MaxP, NeuralModel1, ParadeAttn, ParadeAvg, ParadeCNN, ParadeMax, ParadeSum,
                               ParadeTransformer, ParadeTransformerPretrained, ParadeTransformerQ, SumP)


def build(path: str) -> list[LongDocReranker]:
    return [
        FirstP(path, max_length=256, batch_size=8, dtype="bf16"),
        MaxP(path, window=200, stride=100, max_doc_tokens=2048, device="cpu"),
        SumP(path, max_chunks=8, chunk_selection="first_last_even"),
        KMaxAvgP(path, k=2, seed=0),
        AvgP(path, max_chunks=4, disjoint_split="fill"),
        ParadeAvg(path), ParadeMax(path), ParadeSum(path, gradient_checkpointing=True),
        ParadeAttn(path, window=128, stride=64),
        ParadeCNN(path, layers=3),
        ParadeTransformer(path, layers=1, heads=2, query_tokens=True),
        ParadeTransformerPretrained(path, aggregator_model="cross-encoder/ms-marco-MiniLM-L-2-v2", layers=None),
        ParadeTransformerQ(path, layers=2),
        CedrKnrm(path, mus=[1.0, 0.5], sigmas=[0.001, 0.1]),
        CedrPacrr(path, max_ngram=2, filters=16, kmax=1),
        CedrDrmm(path, bins=5, hidden=3),
        NeuralModel1(path, max_query_tokens=16),
        LongP(path, pooling="mean", max_length=None),
        LLMFirstP(path, lora=None, append_eos=True),
        LLMMaxP(path, lora={"r": 4}, query_prefix="q: ", max_batch_tokens=4096),
        LLMSumP(path, doc_prefix="d: "), LLMKMaxAvgP(path, k=4), LLMLongP(path, max_doc_tokens=4096),
        BiEncoderFirstP(path, pooling="cls", normalize=True), BiEncoderMaxP(path, similarity="dot"),
        BiEncoderLongP(path, max_length=4096),
    ]


def load(path: str) -> None:
    maxp: MaxP = MaxP.from_pretrained(path, window=100, stride=50, batch_size=4)
    cnn: ParadeCNN = ParadeCNN.from_pretrained(path, layers=2, verify_weights=False)
    llm: LLMMaxP = LLMMaxP.from_pretrained(path, lora=None, trust_remote_code=True)
    any_model: LongDocReranker = LongDocReranker.from_pretrained(path, max_doc_tokens=800, device="cpu")
    print(maxp, cnn, llm, any_model)


def use(model: MaxP, path: str) -> None:
    # the reranker's delegated calls and runtime options, as a type checker sees them (functions bound as methods)
    model.batch_size = 8
    model.dtype = "bf16"
    model.device = "cpu"
    model.set_parameter("window", 100)
    print(model.get_parameter("stride"), model.tunable_parameters(), model.chunk_spans("a long text"))
    print(model.predict([("query", "document")], batch_size=4), model.rank("query", ["a", "b"], top_k=1))
    print(model.score_texts(["query"], ["document"]), model.devices, model.autocast_dtype, model.int8)
    model.save_pretrained(path)
    model.save_cross_encoder(path)

"""LLM cross-encoders: FirstP, MaxP, SumP, k-max average and LongP over decoder-only LMs.

Ma, Wang, Yang, Wei, Lin, "Fine-Tuning LLaMA for Multi-Stage Text Retrieval" (RankLLaMA),
SIGIR 2024: a causal LM's sequence-classification head reads the last token of
``query: {q}`` ... ``document: {d}`` (the paper ends it with ``</s>``; the published passage
model's card tokenizes the pair without it), fine-tuned with LoRA; the positional-bias study
behind MS MARCO FarRelevant evaluates FirstP and LongP over TinyLLAMA so.

Why classes and not only an option: the engine already handles a decoder-only backbone in any
score model (its ``*ForSequenceClassification`` head is a linear ``score`` layer, which the
engine reads at the last non-pad token, with an EOS appended; no token types), so
``MaxP(llama_checkpoint)`` scores as that checkpoint does. What these classes add is what a
RankLLaMA model *is* beyond its backbone, saved with it: RankLLaMA's input template
(``query_prefix``, ``doc_prefix``, ``append_eos``), LoRA adapters (``lora``) and gradient
checkpointing for ``fit``, batches capped by tokens, and a check that the backbone is a decoder.
Each is the encoder model class and ``LLMCrossEncoder`` (``LLMMaxP`` is a ``MaxP``): the aggregation is
not written twice.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from typing_extensions import Unpack

from .._reranker import LongDocReranker, Source
from ..engine.lora import LORA_DEFAULTS, add_lora, has_lora, lora_settings, merge_lora, save_adapter
from ..engine.settings import ModelOptions, flag, setting
from .longp import LongP, LongPOptions, LongPSettings
from .score import (FirstP, FirstPOptions, FirstPSettings, KMaxAvgP, KMaxAvgPOptions, KMaxAvgPSettings, MaxP,
                    MaxPOptions, MaxPSettings, SumP)

LORA_LR = 1e-4  # RankLLaMA's learning rate for its LoRA adapters


@dataclass(frozen=True)
class LLMSettings:
    """What an LLM model adds to its encoder class's settings (a mixin, first in the bases): RankLLaMA's
    input template, as the published passage model's card uses it (no EOS), LoRA and gradient checkpointing."""

    query_prefix: str = setting("query: ", "text before the query (RankLLaMA's template; '' for none)")
    doc_prefix: str = setting("document: ", "text before every chunk (RankLLaMA's template; '' for none)")
    append_eos: bool | None = setting(False, "the tokenizer's EOS after the chunk, as the RankLLaMA paper and "
                                             "Tevatron's training have it (True), or not, as the published model's "
                                             "card (False)")
    lora: dict | None = setting(LORA_DEFAULTS, "LoRA adapters: r, alpha, dropout, target_modules (Tevatron's "
                                               "defaults; {} for them); None trains every weight")
    gradient_checkpointing: bool = setting(True, "recompute activations in the backward pass (training only)")

    def __post_init__(self):
        object.__setattr__(self, "lora", lora_settings(self.lora))  # {} and a partial dict: Tevatron's defaults
        flag(self, "gradient_checkpointing")
        super().__post_init__()


class LLMOptions(ModelOptions, total=False):
    """What the LLM models' keywords add (``LLMSettings``; its other fields are every model's)."""

    lora: dict | None


@dataclass(frozen=True)
class LLMFirstPSettings(LLMSettings, FirstPSettings):
    """LLM FirstP's settings."""


class LLMFirstPOptions(LLMOptions, FirstPOptions, total=False):
    """LLM FirstP's keywords (``LLMFirstPSettings``)."""


@dataclass(frozen=True)
class LLMMaxPSettings(LLMSettings, MaxPSettings):
    """LLM MaxP's and LLM SumP's settings."""


class LLMMaxPOptions(LLMOptions, MaxPOptions, total=False):
    """The keywords of LLM MaxP and LLM SumP (``LLMMaxPSettings``)."""


@dataclass(frozen=True)
class LLMKMaxAvgPSettings(LLMSettings, KMaxAvgPSettings):
    """LLM k-max average's settings."""


class LLMKMaxAvgPOptions(LLMOptions, KMaxAvgPOptions, total=False):
    """LLM k-max average's keywords (``LLMKMaxAvgPSettings``)."""


@dataclass(frozen=True)
class LLMLongPSettings(LLMSettings, LongPSettings):
    """LLM LongP's settings."""


class LLMLongPOptions(LLMOptions, LongPOptions, total=False):
    """LLM LongP's keywords (``LLMLongPSettings``)."""


LLM_BATCH_TOKENS = 16 * 512  # a batch's tokens by default: 16 sequences of 512, or 2 of 4,096


class LLMCrossEncoder(LongDocReranker):
    """What the LLM models add to their encoder model class (first in their bases; no state of its own).

    Settings: ``query_prefix="query: "``, ``doc_prefix="document: "`` (RankLLaMA's template;
    ``""`` for none); ``append_eos`` (False): the tokenizer's EOS after the document, as the
    RankLLaMA paper and Tevatron's ``--append_eos_token`` training have it (True), or not, as the
    published passage model's card uses it (the default); ``lora``: LoRA adapters added to the LM,
    a dict of ``r`` (8), ``alpha`` (64), ``dropout`` (0.1) and ``target_modules``
    (``"all-linear"``): Tevatron's defaults (the published RankLLaMA adapters have ``r=32``,
    ``alpha=64``); ``{}`` for those defaults, ``None`` to train every weight; new adapters are
    drawn from ``seed=`` and drawn again from ``fit``'s seed, so a fit is the same in every process;
    with adapters, ``fit`` trains only them and the score head, by default at RankLLaMA's
    ``lr=1e-4`` (``fit_options``, ``fit(lr=...)`` or an ``args`` that sets ``lr`` change it). ``gradient_checkpointing`` (True):
    recompute activations in the backward pass rather than keep them (training only). On a CUDA
    device the default dtype is bf16, weights included; batches hold at most ``max_batch_tokens``
    (16 x 512) tokens unless given.
    Start from a RankLLaMA-style checkpoint: a causal LM's ``*ForSequenceClassification`` folder
    (its score head kept), or a peft adapter folder whose ``adapter_config.json`` names the base
    model (merged into it); a plain LM gets a new score head.
    """

    backbone_settings = ("lora", "gradient_checkpointing")
    fp32_embeddings = False  # one embedding table (of 100k+ rows), nothing summed in it: bf16 loses nothing there

    def _class_defaults(self) -> None:
        super()._class_defaults()
        if self.runtime.max_batch_tokens is None:  # a LongP batch of 4,096-token sequences is not 16 of them
            self.runtime.max_batch_tokens = LLM_BATCH_TOKENS
        if self.settings["lora"] is not None:  # adapters learn at RankLLaMA's rate, not full fine-tuning's
            self.fit_options.setdefault("lr", LORA_LR)

    @classmethod
    def _prepare_backbone(cls, model, settings: dict) -> None:
        if getattr(getattr(model.aggregator, "head", None), "pooling", None) != "last":
            encoder_class = next(c for c in cls.__mro__[1:] if not issubclass(c, LLMCrossEncoder))
            raise ValueError(f"{cls.__name__} needs a decoder-only LM (Llama, Qwen2, Mistral, Gemma, ...) whose "
                             f"sequence-classification head reads the last token; {type(model.encoder).__name__} is "
                             f"not one: use {encoder_class.__name__} for an encoder")
        super()._prepare_backbone(model, settings)  # gradient checkpointing (non-reentrant: reaches the adapters)
        settings["lora"] = lora_settings(settings.get("lora"))
        if settings["lora"] is not None:
            add_lora(model.encoder, settings["lora"])

    def merge_lora(self) -> None:
        """Merges the LoRA adapters into the LM's weights (peft's ``merge_and_unload``): the same
        scores, no adapter layers; ``lora`` becomes None, so ``save_pretrained`` writes a plain
        model, which ``save_cross_encoder`` turns into a standard sequence-classification folder."""
        if not has_lora(self.model.encoder):
            raise ValueError(f"{type(self).__name__} has no LoRA adapters to merge (lora=None)")
        merge_lora(self.model.encoder)
        self._parameters.replace(lora=None)
        self._placement.replicas.clear()  # the copies have the adapter layers

    def save_cross_encoder(self, path: str | os.PathLike) -> None:
        if has_lora(self.model.encoder):
            raise ValueError(f"{type(self).__name__} has LoRA adapters: call merge_lora() first, then "
                             "save_cross_encoder writes the merged sequence classifier (or save_adapter the adapters)")
        super().save_cross_encoder(path)

    def save_adapter(self, path: str | os.PathLike) -> None:
        """Writes the LoRA adapters and the score head in peft's format, as RankLLaMA publishes
        its models: ``peft.PeftModel.from_pretrained(AutoModelForSequenceClassification.from_pretrained(base), path)``
        scores a window as this model does, and this class starts from the folder too."""
        if not has_lora(self.model.encoder):
            raise ValueError(f"{type(self).__name__} has no LoRA adapters to save (lora=None): use save_pretrained")
        save_adapter(self.model.encoder, self.model.aggregator.head, Path(path), self.config.base_model)
        self.model.tokenizer.save_pretrained(path)


class LLMFirstP(LLMCrossEncoder, FirstP):
    """LLM FirstP: a decoder-only LM (RankLLaMA, Ma et al. SIGIR 2024) on the query and the start of the document."""

    name = "llm_firstp"
    Settings = LLMFirstPSettings

    def __init__(self, model_name_or_path: Source, **options: Unpack[LLMFirstPOptions]):
        self._load(model_name_or_path, options)


class LLMMaxP(LLMCrossEncoder, MaxP):
    """LLM MaxP: a decoder-only LM (RankLLaMA, Ma et al. SIGIR 2024) scores each window, the best decides."""

    name = "llm_maxp"
    Settings = LLMMaxPSettings

    def __init__(self, model_name_or_path: Source, **options: Unpack[LLMMaxPOptions]):
        self._load(model_name_or_path, options)


class LLMSumP(LLMCrossEncoder, SumP):
    """LLM SumP: a decoder-only LM (RankLLaMA, Ma et al. SIGIR 2024) scores each window, the scores summed."""

    name = "llm_sump"
    Settings = LLMMaxPSettings

    def __init__(self, model_name_or_path: Source, **options: Unpack[LLMMaxPOptions]):
        self._load(model_name_or_path, options)


class LLMKMaxAvgP(LLMCrossEncoder, KMaxAvgP):
    """LLM k-max average: a decoder-only LM (RankLLaMA, Ma et al. SIGIR 2024), the mean of the k best windows."""

    name = "llm_kmax_avgp"
    Settings = LLMKMaxAvgPSettings

    def __init__(self, model_name_or_path: Source, **options: Unpack[LLMKMaxAvgPOptions]):
        self._load(model_name_or_path, options)


class LLMLongP(LLMCrossEncoder, LongP):
    """LLM LongP: the whole document in one sequence of a decoder-only LM's long context (RankLLaMA, Ma et al.
    SIGIR 2024; LongP over TinyLLAMA in the positional-bias study of MS MARCO FarRelevant)."""

    name = "llm_longp"
    Settings = LLMLongPSettings

    def __init__(self, model_name_or_path: Source, **options: Unpack[LLMLongPOptions]):
        self._load(model_name_or_path, options)

"""A local transformers causal LM as RankGPT's chat backend (e.g. Qwen2.5-7B-Instruct,
RankZephyr, Llama-3-Instruct): the messages go through the tokenizer's chat template and the
answer is generated greedily."""
from __future__ import annotations

from .backends import ChatBackend, Reply


class TransformersChat(ChatBackend):
    """Args:
        model_name_or_path: a causal LM with a chat template (hub id or folder), or a
            ``(model, tokenizer)`` pair already loaded.
        max_new_tokens: the answer's cap (RankGPT keeps 200 tokens of the context for it).
        device: default ``"cuda"`` if available, else ``"cpu"``.
        dtype: the model's weights, e.g. ``"bfloat16"``; default the checkpoint's own.

    Its tokenizer and context length are RankGPT's defaults for the token budget, so passages
    are cut in the model's own tokens and a prompt that would overflow the context is shortened.
    """

    def __init__(self, model_name_or_path, *, max_new_tokens: int = 200, device: str | None = None,
                 dtype: str | None = None):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if isinstance(model_name_or_path, tuple):
            self._model, self.tokenizer = model_name_or_path
            self.model = getattr(self._model, "name_or_path", "") or type(self._model).__name__
        else:
            self.model = str(model_name_or_path)
            self.tokenizer = AutoTokenizer.from_pretrained(model_name_or_path)
            self._model = AutoModelForCausalLM.from_pretrained(model_name_or_path, dtype=dtype or "auto")
        if not getattr(self.tokenizer, "chat_template", None):
            raise ValueError(f"TransformersChat({self.model!r}): the tokenizer has no chat template; RankGPT needs an "
                             "instruction-tuned (chat) model")
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self._model.to(self.device).eval()
        self.max_new_tokens = max_new_tokens
        self.context_tokens = getattr(self._model.config, "max_position_embeddings", None)

    @property
    def answer_tokens(self) -> int | None:
        return self.max_new_tokens

    @property
    def settings(self) -> dict:
        return {**super().settings, "max_new_tokens": self.max_new_tokens}

    def prompt(self, messages: list[dict]):
        """The chat template's input ids; a template without a system role (Gemma's, Mistral's)
        gets the system message at the start of the first user turn instead."""
        from jinja2.exceptions import TemplateError

        try:
            return self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt",
                                                      return_dict=True)
        except TemplateError:
            if messages[0]["role"] != "system" or len(messages) < 2 or messages[1]["role"] != "user":
                raise
            first = {"role": "user", "content": f"{messages[0]['content']}\n\n{messages[1]['content']}"}
            return self.prompt([first, *messages[2:]])

    def complete(self, messages: list[dict]) -> Reply:
        import torch

        inputs = self.prompt(messages).to(self.device)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        with torch.inference_mode():
            output = self._model.generate(**inputs, max_new_tokens=self.max_new_tokens, do_sample=False,
                                          pad_token_id=pad)
        prompt_tokens = inputs["input_ids"].shape[1]
        answer = output[0, prompt_tokens:]
        return Reply(self.tokenizer.decode(answer, skip_special_tokens=True), prompt_tokens, len(answer))

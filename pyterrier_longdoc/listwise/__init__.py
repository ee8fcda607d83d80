"""Listwise re-ranking by chat LLMs: RankGPT and its backends."""
from .backends import AnthropicChat, ChatBackend, OpenAIChat, Reply
from .calls import ChatCallError, ChatCalls
from .local import TransformersChat
from .rankgpt import RankGPT

__all__ = ["RankGPT", "ChatBackend", "OpenAIChat", "AnthropicChat", "TransformersChat", "Reply", "ChatCalls",
           "ChatCallError"]

"""Diagnostics for long-document ranking (Boytsov et al., "Understanding Performance of
Long-Document Ranking Models through Comprehensive Evaluation and Leaderboarding"):
MS MARCO FarRelevant-style collections, positional-bias tables and plots, and
passage-to-document matching for collections without passage offsets."""

# the FarRelevant builder and the token helpers live in data/ (the shipped prose is built with them), shown here
from ..data._tokens import HFTokenizer, Tokenizer, WhitespaceTokenizer, resolve_tokenizer
from ..data.far_relevant import FarRelevantCollection, build_far_relevant, load_passage_collection
from .matching import PassageMatch, PassageMatches, match_passage, match_passages
from .positions import plot_positional_bias, positional_bias, published_positions, span_positions

__all__ = [
    "FarRelevantCollection",
    "HFTokenizer",
    "PassageMatch",
    "PassageMatches",
    "Tokenizer",
    "WhitespaceTokenizer",
    "build_far_relevant",
    "load_passage_collection",
    "match_passage",
    "match_passages",
    "plot_positional_bias",
    "positional_bias",
    "published_positions",
    "resolve_tokenizer",
    "span_positions",
]

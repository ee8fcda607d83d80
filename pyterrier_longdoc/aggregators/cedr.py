"""Token-embedding aggregation: CEDR-KNRM, CEDR-PACRR and CEDR-DRMM.

MacAvaney, Yates, Cohan, Goharian, "CEDR: Contextualized Embeddings for Document Ranking",
SIGIR 2019. A document is cut into disjoint chunks, each read as ``[CLS] q [SEP] chunk [SEP]``;
every encoder layer (the embeddings included) gives a cosine similarity matrix between the
query tokens and the document tokens; a classic neural ranker (KNRM, PACRR, DRMM) reads those
matrices, one channel per layer, together with the mean over chunks of the last layer's [CLS].

Differences from the reference code (github.com/Georgetown-IR-Lab/cedr), all written here:

- padding is masked out of the signals, not only zeroed in the similarity matrices: the
  reference lets zero similarities of padding fall into KNRM's kernels, PACRR's k-max pooling
  and DRMM's query-term sum;
- each chunk's similarities use the query token vectors of that chunk's own sequence (the
  reference reuses the first chunk's query vectors for every chunk; the paper does not say).
  This keeps a chunk's features to its signal (e.g. ``[layers, kernels, query]``) rather than
  its token vectors, and KNRM and DRMM sum over document tokens, so summing per-chunk signals
  over chunks equals the reference's concatenation of the chunks' document tokens;
- PACRR's n-gram convolutions run per chunk, so an n-gram never spans two chunks.

Reference defaults kept: 20 query tokens, 800 document tokens; KNRM's 11 kernels
(mu -0.9..0.9 step 0.2 and 1.0 for exact match, sigma 0.1 and 0.001), trainable as in the
reference; PACRR with 1- to 3-grams, 32 filters, k-max 2, a 32-32-1 MLP; DRMM with 11
log-count histogram bins and a 5-unit hidden layer.
"""
from __future__ import annotations

import torch
from torch import nn

from .base import Aggregator, masked_reduce, select_tokens

KNRM_MUS = [-0.9, -0.7, -0.5, -0.3, -0.1, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0]
KNRM_SIGMAS = [0.1] * 10 + [0.001]


def similarity_matrices(output, batch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Cosine similarities ``[n, layers, query, doc]`` of every hidden state (zero on padding),
    and the query and document token masks ``[n, query]``, ``[n, doc]``."""
    states = torch.stack(output.hidden_states)  # [layers, n, tokens, hidden]
    query, query_mask = select_tokens(states, batch.query_mask)
    doc, doc_mask = select_tokens(states, batch.doc_mask)
    query = nn.functional.normalize(query.float(), dim=-1, eps=1e-9)
    doc = nn.functional.normalize(doc.float(), dim=-1, eps=1e-9)
    sim = (query @ doc.transpose(-1, -2)).transpose(0, 1)
    sim = sim * (query_mask[:, None, :, None] & doc_mask[:, None, None, :])
    return sim, query_mask, doc_mask


class CedrAggregator(Aggregator):
    """Per chunk: ``(signal(sim), query mask, [CLS])``; per document the signals are combined
    by ``score(signal, query_mask, cls)`` with ``cls`` the mean [CLS] over the chunks."""

    output_hidden_states = True

    def attach(self, encoder, tokenizer, chunking) -> None:
        self.build(encoder.config.num_hidden_layers + 1, chunking)  # the embeddings and every layer

    def build(self, channels: int, chunking) -> None:
        raise NotImplementedError

    def signal(self, sim: torch.Tensor, query_mask: torch.Tensor, doc_mask: torch.Tensor) -> torch.Tensor:
        """A chunk's signal from its similarity matrices (what the chunk keeps)."""
        raise NotImplementedError

    def score(self, signal: torch.Tensor, mask: torch.Tensor, query_mask: torch.Tensor,
              cls: torch.Tensor) -> torch.Tensor:
        """A document's score from its chunks' signals and its mean [CLS]."""
        raise NotImplementedError

    def chunk_features(self, output, batch):
        sim, query_mask, doc_mask = similarity_matrices(output, batch)
        return self.signal(sim, query_mask, doc_mask), query_mask, output.last_hidden_state[:, 0]

    def forward(self, features, mask: torch.Tensor) -> torch.Tensor:
        signal, query_mask, cls = features
        return self.score(signal, mask, query_mask[:, 0], masked_reduce(cls, mask, "mean"))


class KnrmAggregator(CedrAggregator):
    """CEDR-KNRM: ``linear([sum_q log sum_d K_k(sim_l(q, d)) for every layer l, kernel k], cls)``."""

    def __init__(self, hidden_size: int, mus: list[float] = KNRM_MUS, sigmas: list[float] = KNRM_SIGMAS):
        super().__init__(hidden_size)
        self.mus = nn.Parameter(torch.tensor(mus, dtype=torch.float))
        self.sigmas = nn.Parameter(torch.tensor(sigmas, dtype=torch.float))

    def build(self, channels: int, chunking) -> None:
        self.combine = nn.Linear(channels * len(self.mus) + self.hidden_size, 1)

    def signal(self, sim, query_mask, doc_mask):
        kernels = torch.exp(-0.5 * ((sim.unsqueeze(2) - self.mus[:, None, None]) / self.sigmas[:, None, None]) ** 2)
        return (kernels * doc_mask[:, None, None, None, :]).sum(-1)  # [n, layers, kernels, query]

    def score(self, signal, mask, query_mask, cls):
        counts = masked_reduce(signal, mask, "sum")
        logs = torch.where(query_mask[:, None, None, :], torch.log(counts + 1e-6), 0.0).sum(-1)
        return self.combine(torch.cat([logs.flatten(1), cls], dim=-1)).squeeze(-1)


class PacrrAggregator(CedrAggregator):
    """CEDR-PACRR: n-gram convolutions over the layer channels, max over filters, k-max over the
    document, then an MLP over ``[query positions x n-grams x k, cls]``."""

    def __init__(self, hidden_size: int, max_ngram: int = 3, filters: int = 32, kmax: int = 2):
        super().__init__(hidden_size)
        self.max_ngram, self.filters, self.kmax = max_ngram, filters, kmax

    def build(self, channels: int, chunking) -> None:
        self.query_length = chunking.max_query_tokens
        self.convs = nn.ModuleList(nn.Conv2d(channels, self.filters, n) for n in range(1, self.max_ngram + 1))
        self.mlp = nn.Sequential(
            nn.Linear(self.hidden_size + self.query_length * self.max_ngram * self.kmax, 32), nn.ReLU(),
            nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 1))

    def signal(self, sim, query_mask, doc_mask):
        valid = (query_mask[:, :, None] & doc_mask[:, None, :]).to(sim.dtype)
        if sim.shape[-1] < self.kmax:
            sim = nn.functional.pad(sim, (0, self.kmax - sim.shape[-1]))
            valid = nn.functional.pad(valid, (0, self.kmax - valid.shape[-1]))
        pooled = []
        for n, conv in enumerate(self.convs, start=1):
            matches = torch.relu(conv(nn.functional.pad(sim, (0, n - 1, 0, n - 1)))).max(dim=1).values
            pooled.append((matches * valid).topk(self.kmax, dim=-1).values)  # padding gives 0, the ReLU floor
        return torch.stack(pooled, dim=1)  # [n, ngrams, query, kmax]

    def score(self, signal, mask, query_mask, cls):
        signal = signal * mask[:, :, None, None, None]
        docs, chunks, ngrams, query, kmax = signal.shape
        top = signal.permute(0, 2, 3, 1, 4).reshape(docs, ngrams, query, chunks * kmax).topk(self.kmax, dim=-1).values
        top = top[:, :, :self.query_length]
        top = nn.functional.pad(top, (0, 0, 0, self.query_length - top.shape[2]))
        return self.mlp(torch.cat([top.transpose(1, 2).flatten(1), cls], dim=-1)).squeeze(-1)


class DrmmAggregator(CedrAggregator):
    """CEDR-DRMM: per query token, log-count histograms of its similarities (every layer) and
    the [CLS] go through a small MLP; the document score is the sum over query tokens."""

    def __init__(self, hidden_size: int, bins: int = 11, hidden: int = 5):
        super().__init__(hidden_size)
        self.bins, self.hidden = bins, hidden

    def build(self, channels: int, chunking) -> None:
        self.mlp = nn.Sequential(nn.Linear(self.bins * channels + self.hidden_size, self.hidden), nn.ReLU(),
                                 nn.Linear(self.hidden, 1))

    def signal(self, sim, query_mask, doc_mask):
        index = ((sim.detach() + 1.000001) / 2 * (self.bins - 1)).long().clamp(0, self.bins - 1)
        weights = doc_mask[:, None, None, :].expand_as(sim).to(sim.dtype)
        counts = sim.new_zeros((*sim.shape[:-1], self.bins))
        return counts.scatter_add_(-1, index, weights)  # [n, layers, query, bins]

    def score(self, signal, mask, query_mask, cls):
        histogram = torch.log(masked_reduce(signal, mask, "sum") + 1e-5).permute(0, 2, 1, 3).flatten(2)
        cls = cls.unsqueeze(1).expand(-1, histogram.shape[1], -1)
        per_token = self.mlp(torch.cat([histogram, cls], dim=-1)).squeeze(-1)
        return (per_token * query_mask).sum(-1)

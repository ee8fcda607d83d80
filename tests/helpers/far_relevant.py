"""A FarRelevant corpus: passages of made-up words, query i judged on passage i."""
import numpy as np
import pandas as pd

FAR_RELEVANT_QUERIES = 12


def far_relevant_corpus(seed: int = 7, n_passages: int = 300) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Synthetic passages of random made-up words; query i is judged on passage i only."""
    rng = np.random.default_rng(seed)
    letters = list("abcdefghiklmnoprstuvy")
    vocab = ["".join(rng.choice(letters, size=int(rng.integers(2, 9)))) for _ in range(2000)]
    texts = [" ".join(rng.choice(vocab, size=int(rng.integers(20, 70)))) + "." for _ in range(n_passages)]
    passages = pd.DataFrame({"docno": [f"p{i}" for i in range(n_passages)], "text": texts})
    queries = pd.DataFrame(
        {"qid": [f"q{i}" for i in range(FAR_RELEVANT_QUERIES)],
         "query": [" ".join(texts[i].split()[:4]) for i in range(FAR_RELEVANT_QUERIES)]}
    )
    qrels = pd.DataFrame({"qid": queries["qid"], "docno": [f"p{i}" for i in range(FAR_RELEVANT_QUERIES)], "label": 1})
    return passages, queries, qrels

"""The passage stage's toy task: queries name an animal that the positive passage mentions."""
import random

import numpy as np
import torch

ANIMALS = "cat dog bird fish".split()
OTHER = "red blue green castle river mountain forest city house door window book paper music song".split()


def toy_triples(n, seed):
    """Queries name an animal; the positive passage mentions it among random words, the negative
    is random words only."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        animal = rng.choice(ANIMALS)
        filler = lambda: " ".join(rng.choice(OTHER) for _ in range(6))  # noqa: E731
        rows.append((f"what is {animal}", f"{filler()} {animal} {filler()}", f"{filler()} {filler()}"))
    return rows


def pairwise_accuracy(model, triples):
    scores = model.predict([(q, p) for q, p, _ in triples] + [(q, n) for q, _, n in triples], batch_size=64,
                           activation_fn=torch.nn.Identity())  # logits: a sigmoid saturates into ties
    return float(np.mean(scores[:len(triples)] > scores[len(triples):]))

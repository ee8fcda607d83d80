"""Inference past one process: a model pickles whole (PyTerrier's .parallel() ships it to its
workers), and ``.parallel(2, backend="ray")`` on a local Ray cluster of 2 workers gives the
scores of a single process."""
import pickle

import numpy as np
import pandas as pd
import pytest

import pyterrier_longdoc as pl

WORDS = "the red cat and a blue bird in the green river of the castle house door window".split()


def frame(n_queries=2, docs=4):
    rng = np.random.default_rng(0)
    rows = [(f"q{q}", " ".join(rng.choice(WORDS, 2)), f"q{q}-d{d}", " ".join(rng.choice(WORDS, int(rng.integers(5, 60)))))
            for q in range(n_queries) for d in range(docs)]
    return pd.DataFrame(rows, columns=["qid", "query", "docno", "text"])


def test_a_model_pickles_and_scores_the_same_after(tiny_bert):
    maxp = pl.MaxP(tiny_bert, window=12, stride=6)
    copy = pickle.loads(pickle.dumps(maxp))
    np.testing.assert_array_equal(copy(frame())["score"], maxp(frame())["score"])


@pytest.fixture
def ray_cluster():
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()


def test_ray_parallel_gives_the_scores_of_one_process(tiny_bert, ray_cluster):
    maxp = pl.MaxP(tiny_bert, window=12, stride=6)
    single = maxp(frame()).set_index(["qid", "docno"])["score"]
    with pytest.warns(UserWarning, match="experimental"):
        parallel = maxp.parallel(2, backend="ray")
    scored = parallel(frame()).set_index(["qid", "docno"])["score"]
    assert sorted(scored.index) == sorted(single.index)
    # each worker batches only its own queries' windows: kernels chosen by a batch's shape round differently
    np.testing.assert_allclose(scored.loc[single.index].to_numpy(), single.to_numpy(), atol=1e-5)

"""Inference past one process: a model pickles whole (PyTerrier's .parallel() ships it to its
workers), and ``.parallel(2, backend="ray")`` on a local Ray cluster of 2 workers gives the
scores of a single process."""
import pickle

import numpy as np
import pandas as pd
import pytest

import pyterrier_longdoc as pl

# models built over a plain encoder (the tiny random BERT) get a new head: expected here, not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::pyterrier_longdoc.UntrainedHeadWarning")

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


@pytest.fixture(scope="module")  # one local cluster for the module: starting Ray takes half a minute
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


def test_ray_scorer_gives_the_model_s_ranking_and_keeps_its_workers(tiny_bert, ray_cluster):
    """Groups of 3 rows dealt to 2 actors (queries split across them) rank as one process does; a
    second call reuses the same actors (the model is shipped once); an empty frame gives the
    model's empty result; a missing column is named."""
    from pyterrier_longdoc.scale_out import RayScorer

    maxp = pl.MaxP(tiny_bert, window=12, stride=6)
    inp = frame(n_queries=3, docs=5)
    single = maxp(inp)
    with RayScorer(maxp, workers=2, group_size=3) as scorer:
        scored = scorer(inp)
        actors = list(scorer._actors)
        again = scorer(inp.iloc[::-1])
        assert scorer._actors == actors
        assert len(scorer(inp.iloc[:0])) == 0
        with pytest.raises(KeyError, match="text"):
            scorer(inp.drop(columns=["text"]))
    assert scorer._actors is None
    keys = list(zip(single.qid, single.docno))
    for result in (scored, again):
        by_key = result.set_index(["qid", "docno"]).loc[keys]
        assert by_key["rank"].tolist() == single["rank"].tolist()
        np.testing.assert_allclose(by_key["score"], single["score"], atol=1e-5)


def test_ray_scorer_refuses_bad_settings_and_a_missing_cluster(tiny_bert, monkeypatch):
    import ray

    from pyterrier_longdoc.scale_out import RayScorer

    monkeypatch.setattr(ray, "is_initialized", lambda: False)  # whatever the module's cluster is doing

    maxp = pl.MaxP(tiny_bert)
    for bad in ({"workers": 0}, {"group_size": 1.5}, {"num_gpus": -1}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            RayScorer(maxp, **bad)
    with pytest.raises(RuntimeError, match=r"ray.init\(\)"):
        RayScorer(maxp)(frame())

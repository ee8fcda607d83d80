"""Parameters a model adds to its backbone (a new head, PARADE's attention vector) are named in an
UntrainedHeadWarning, and drawn reproducibly under a seed."""
import warnings

import numpy as np
import pytest
import torch

import pyterrier_longdoc as pl

from helpers.cross_encoders import write_cross_encoder

DOCS = ["the castle by the river is red " * 3, "a dog in the house", "music song answer"]


@pytest.fixture(scope="module")
def cross_encoder(tmp_path_factory):
    return str(write_cross_encoder(tmp_path_factory.mktemp("ce"), "bert"))


def test_parade_attn_over_a_cross_encoder_starts_as_parade_avg_with_nothing_random(cross_encoder):
    """Its attention vector starts at zero (equal weights), so before any training it ranks exactly as PARADE-Avg:
    a document stage that keeps its start keeps a ranker, not a vector drawn at random."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", pl.UntrainedHeadWarning)  # nothing random: nothing to say
        for cls in (pl.MaxP, pl.ParadeAvg, pl.AvgP, pl.ParadeAttn):
            cls(cross_encoder)
        attn = pl.ParadeAttn(cross_encoder, window=12, stride=6, seed=1)
        avg = pl.ParadeAvg(cross_encoder, window=12, stride=6)
    assert not attn.model.aggregator.query_vector.detach().any()
    np.testing.assert_allclose(attn.score_texts(["castle river"] * 3, DOCS), avg.score_texts(["castle river"] * 3, DOCS),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cls, names", [(pl.CedrKnrm, r"mus, sigmas, combine.weight, combine.bias"),
                                         (pl.ParadeTransformer, r"cls_vector, .*\(\d+ in all\)")])
def test_models_with_a_new_head_name_its_parameters(cross_encoder, cls, names):
    with pytest.warns(pl.UntrainedHeadWarning, match=rf"its {cls.__name__} head is new \({names}: initialised here"):
        cls(cross_encoder)


def test_a_plain_encoder_names_the_new_head(tiny_bert):
    with pytest.warns(pl.UntrainedHeadWarning, match=r"its head is new \(query_vector, head\.classifier\.weight, "):
        pl.ParadeAttn(tiny_bert)


def test_construction_is_reproducible_under_a_seed(cross_encoder):
    def scores(**seed):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pl.UntrainedHeadWarning)
            model = pl.ParadeTransformer(cross_encoder, window=12, stride=6, **seed)
        return model.score_texts(["castle river"] * 3, DOCS)

    torch.manual_seed(123)
    state = torch.get_rng_state()
    first = scores(seed=7)
    assert torch.equal(torch.get_rng_state(), state)  # the global random state is left alone
    np.testing.assert_array_equal(scores(seed=7), first)
    assert not np.allclose(scores(seed=8), first)
    torch.manual_seed(5)
    global_seed = scores()
    torch.manual_seed(5)
    np.testing.assert_array_equal(scores(), global_seed)  # torch's own seed is honoured too
    with pytest.raises(TypeError, match="seed must be an integer"):
        pl.ParadeTransformer(cross_encoder, seed="7")

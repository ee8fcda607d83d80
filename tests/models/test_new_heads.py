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


def test_parade_attn_over_a_cross_encoder_names_its_new_attention_vector(cross_encoder):
    with pytest.warns(pl.UntrainedHeadWarning, match=r"ParadeAttn over .*head is kept, but its new parameters "
                                                     r"\(query_vector\) are drawn at random.*seed="):
        pl.ParadeAttn(cross_encoder)
    with warnings.catch_warnings():
        warnings.simplefilter("error", pl.UntrainedHeadWarning)  # nothing new: nothing to say
        for cls in (pl.MaxP, pl.ParadeAvg, pl.AvgP):
            cls(cross_encoder)


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
            model = pl.ParadeAttn(cross_encoder, window=12, stride=6, **seed)
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
        pl.ParadeAttn(cross_encoder, seed="7")

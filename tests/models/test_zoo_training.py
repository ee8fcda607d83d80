"""Every model of the zoo on its tiny offline backbone: padding never changes a score, and a few
training steps on a task that needs the chunks (or the whole document) lower the loss."""
import pytest
from helpers.zoo_backbones import ZOO_SETTINGS, assert_padding_invariant, margin_training, tiny_backbone_for

import pyterrier_longdoc.aggregators.cedr  # noqa: F401 - registers the models
import pyterrier_longdoc.aggregators.model1  # noqa: F401
from pyterrier_longdoc import model_class

# models built over a plain encoder (the tiny random BERT) get a new head: expected here, not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::pyterrier_longdoc.UntrainedHeadWarning")


@pytest.fixture(scope="module", params=sorted(ZOO_SETTINGS))
def model(request, tmp_path_factory):
    path, settings = tiny_backbone_for(request.param, tmp_path_factory.mktemp(request.param))
    return model_class(request.param).from_pretrained(path, **settings)


@pytest.mark.filterwarnings("ignore::pyterrier_longdoc.CroppingWarning")  # long toy documents
def test_padding_never_changes_a_score(model):
    assert_padding_invariant(model)


def test_training_lowers_the_loss(model):
    before, after = margin_training(model)
    assert after < before

"""CEDR-KNRM / PACRR / DRMM and Neural Model 1 heads (training and padding: test_zoo_training)."""
import numpy as np
import pytest
import torch

from pyterrier_longdoc.models.cedr import CedrDrmm, CedrKnrm, CedrPacrr
from pyterrier_longdoc.models.model1 import NeuralModel1

# models built over a plain encoder (the tiny random BERT) get a new head: expected here, not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::pyterrier_longdoc.UntrainedHeadWarning")


def test_heads_read_every_layer_and_the_query_length(tiny_bert):
    layers = 2 + 1  # the embeddings and each layer of the tiny BERT
    knrm = CedrKnrm.from_pretrained(tiny_bert).model.aggregator
    assert knrm.combine.in_features == layers * 11 + 32
    pacrr = CedrPacrr.from_pretrained(tiny_bert, max_query_tokens=7).model.aggregator
    assert pacrr.convs[0].in_channels == layers and pacrr.mlp[0].in_features == 32 + 7 * 3 * 2
    assert CedrDrmm.from_pretrained(tiny_bert).model.aggregator.mlp[0].in_features == 11 * layers + 32


def test_model1_score_is_the_documented_formula(tiny_bert):
    """log P(Q|D) = sum_q log(1/|D| sum_d sigmoid(P_q(e_q) . P_d(e_d) / sqrt(H))), one chunk."""
    model = NeuralModel1.from_pretrained(tiny_bert)
    model.model.eval()
    tokenizer, encoder, head = model.model.tokenizer, model.model.encoder, model.model.aggregator
    query, doc = "castle river", "the red castle by a river"
    with torch.no_grad():
        states = encoder(**tokenizer(query, doc, return_tensors="pt")).last_hidden_state[0]
        n_query = len(tokenizer(query, add_special_tokens=False)["input_ids"])
        e_q, e_d = states[1:1 + n_query], states[2 + n_query:-1]
        t = torch.sigmoid(head.project_query(e_q) @ head.project_doc(e_d).T / 32 ** 0.5)
        expected = torch.log(t.mean(dim=1)).sum()
    np.testing.assert_allclose(model.score_texts([query], [doc]), [float(expected)], rtol=1e-5)

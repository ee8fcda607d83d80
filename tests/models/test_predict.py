"""predict and rank take what sentence-transformers' CrossEncoder takes (numpy arrays, device,
prompt, chunk_size), and name what they cannot take."""
import numpy as np
import pytest

import pyterrier_longdoc as pl

from helpers.cross_encoders import PAIRS

# models built over a plain encoder (the tiny random BERT) get a new head: expected here, not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::pyterrier_longdoc.UntrainedHeadWarning")


def test_predict_takes_numpy_arrays_device_prompt_and_chunk_size(window_model):
    expected = window_model.predict(PAIRS)
    np.testing.assert_array_equal(window_model.predict(np.array(PAIRS)), expected)
    np.testing.assert_array_equal(window_model.predict(PAIRS, device="cpu", chunk_size=8), expected)
    assert window_model.predict(np.array(PAIRS[0])) == pytest.approx(expected[0], abs=1e-5)  # a 1-D array: one pair
    prompted = window_model.predict([("please " + q, d) for q, d in PAIRS])
    np.testing.assert_array_equal(window_model.predict(PAIRS, prompt="please "), prompted)
    ranked = window_model.rank("what cat", [d for _, d in PAIRS], device="cpu", prompt="please ")
    assert [r["score"] for r in ranked] == sorted(window_model.predict([("please what cat", d) for _, d in PAIRS])
                                                  .tolist(), reverse=True)


def test_predict_names_what_it_cannot_take(window_model):
    with pytest.raises(ValueError, match="prompt_name 'query': the model has no named prompts"):
        window_model.predict(PAIRS, prompt_name="query")
    with pytest.raises(ValueError, match=r"pool: .* device=\[\.\.\.\]"):
        window_model.predict(PAIRS, pool={"processes": []})


@pytest.mark.parametrize("given, problem", [(["just a string"], "1 string, not a pair"),
                                            ("just a string", "one string 'just a string'"),
                                            (["q", "d", "e"], "3 strings, not a pair")])
def test_predict_of_strings_that_are_not_pairs_says_so(window_model, given, problem):
    with pytest.raises(TypeError, match=f"predict takes \\(query, document\\) pairs of strings; .*{problem}"):
        window_model.predict(given)


def test_a_cuda_device_without_a_gpu_is_a_clear_error(tiny_bert, window_model):
    with pytest.raises(ValueError, match=r"device='cuda': no CUDA GPU is available .*use device='cpu'"):
        pl.MaxP(tiny_bert, device="cuda", window=12, stride=6, max_length=48, max_query_tokens=8)
    with pytest.raises(ValueError, match=r"device='cuda:1': no CUDA GPU is available"):
        window_model.predict(PAIRS, device="cuda:1")
    assert window_model.device.type == "cpu" and window_model.predict(PAIRS).shape == (2,)  # left where it was

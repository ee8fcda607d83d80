"""TextLoader over DataFrames, dicts, files and ir_datasets ids, alone and through pt.text.get_text."""
import json

import pandas as pd
import pyterrier as pt
import pytest
from helpers.irds_standin import register_standin

from pyterrier_longdoc.data.documents import MalformedInputError, TextLoader, read_documents

RESULTS = pd.DataFrame({"qid": ["1", "1", "2"], "query": ["q", "q", "r"], "docno": ["D2", "D1", "D2"],
                        "score": [3.0, 2.0, 1.0]})


@pytest.mark.parametrize("source", [
    pd.DataFrame({"docno": ["D1", "D2"], "text": ["cat text", "dog text"]}),
    {"D1": "cat text", "D2": "dog text"},
    {"D1": {"text": "cat text"}, "D2": {"text": "dog text"}},
    pd.Series({"D1": "cat text", "D2": "dog text"}, name="text"),
])
def test_in_memory_sources_add_text_by_docno(source):
    out = TextLoader(source)(RESULTS)
    assert out["text"].tolist() == ["dog text", "cat text", "dog text"]
    assert out[["qid", "docno", "score"]].equals(RESULTS[["qid", "docno", "score"]])  # order and columns kept


def test_get_text_uses_the_loader_and_picks_fields():
    docs = pd.DataFrame({"docno": ["D1", "D2"], "title": ["Cats", "Dogs"], "text": ["cat text", "dog text"]})
    loader = pt.text.get_text(TextLoader(docs), "title")
    out = loader(RESULTS)
    assert out["title"].tolist() == ["Dogs", "Cats", "Dogs"] and "text" not in out.columns
    both = pt.text.get_text(TextLoader(docs), ["title", "text"], by_query=True)(RESULTS)
    assert both.sort_values(["qid", "docno"])["text"].tolist() == ["cat text", "dog text", "dog text"]
    assert TextLoader(docs, "text")(RESULTS.assign(text="stale"))["text"].tolist()[1] == "cat text"  # replaced
    pipeline = pt.Transformer.from_df(RESULTS) >> TextLoader(docs)
    assert pipeline.search("q")["title"].tolist() == ["Dogs", "Cats"]


def test_errors_name_the_problem():
    loader = TextLoader({"D1": "cat"})
    with pytest.raises(KeyError, match=r"1 docnos are not in the documents, e.g. \['D2'\]"):
        loader(RESULTS)
    with pytest.raises(ValueError, match="no field"):
        TextLoader({"D1": "cat"}, "body")
    with pytest.raises(ValueError, match="repeat"):
        TextLoader(pd.DataFrame({"docno": ["D1", "D1"], "text": ["a", "b"]}))
    with pytest.raises(ValueError, match="docno column"):
        TextLoader(pd.DataFrame({"id": ["D1"], "text": ["a"]}))
    with pytest.raises(Exception, match="docno"):
        loader(pd.DataFrame({"qid": ["1"]}))
    empty = loader(RESULTS.iloc[:0])
    assert len(empty) == 0 and "text" in empty.columns


def test_files_jsonl_pyserini_jsonl_folder_and_tsv(tmp_path):
    jsonl = tmp_path / "docs.jsonl"
    jsonl.write_text('{"docno": "D1", "text": "cat text", "title": "Cats"}\n\n{"docno": 2, "text": "x"}\n')
    assert TextLoader(str(jsonl), "title")(pd.DataFrame({"docno": ["D1"]}))["title"].tolist() == ["Cats"]
    assert read_documents(jsonl)["docno"].tolist() == ["D1", "2"]
    assert read_documents(jsonl)["title"].tolist() == ["Cats", ""]  # absent on the second line
    collection = tmp_path / "collection"
    collection.mkdir()
    (collection / "a.jsonl").write_text(json.dumps({"id": "D1", "contents": "cat text"}) + "\n")
    (collection / "b.jsonl").write_text(json.dumps({"id": "D2", "contents": "dog text"}) + "\n")
    assert TextLoader(collection)(RESULTS)["text"].tolist() == ["dog text", "cat text", "dog text"]
    tsv = tmp_path / "docs.tsv"
    tsv.write_text('D1\ta "quoted" text\nD2\t\n')
    assert TextLoader(tsv)(RESULTS)["text"].tolist() == ["", 'a "quoted" text', ""]


@pytest.mark.parametrize("name, content, where, problem", [
    ("docs.tsv", "D1\tcat\textra\nD2\tdog\n", ":1:", "3 tab-separated fields, expected 2"),
    ("docs.tsv", "D1\tcat\nD2 dog\n", ":2:", "1 tab-separated fields"),
    ("docs.tsv", "D1\tcat\nD1\tdog\n", ":2:", "docno 'D1' is also on line 1"),
    ("docs.jsonl", '{"docno": "D1", "text": "a"}\n{"docno": "D2", "text": \n', ":2:", "not JSON"),
    ("docs.jsonl", '{"text": "a"}\n', ":1:", "no docno"),
    ("docs.jsonl", '["D1", "a"]\n', ":1:", "expected a JSON object"),
])
def test_malformed_files_name_file_and_line(tmp_path, name, content, where, problem):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(MalformedInputError, match=problem) as error:
        TextLoader(str(path))
    assert str(error.value).startswith(f"{path}{where}")
    with pytest.raises(MalformedInputError, match="no such file"):
        read_documents(tmp_path / "absent.tsv")


def test_irds_source_uses_pyterriers_loader(tmp_path):
    irds_id = register_standin(tmp_path)
    loader = TextLoader(f"irds:{irds_id}", ["title", "body"])
    out = loader(RESULTS)
    assert out["title"].tolist() == ["Dogs", "Cats", "Dogs"]
    assert out["body"].tolist()[1] == "A cat is an animal."
    assert pt.text.get_text(TextLoader(f"irds:{irds_id}"), "body")(RESULTS)["body"].tolist()[0] == "Kibble for dogs."
    assert "url" in TextLoader(f"irds:{irds_id}").fields  # '*' is every string field, as in PyTerrier

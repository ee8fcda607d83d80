"""The command line on TREC-format files: train, then rerank with the saved model."""
import json

import pandas as pd
import pyterrier as pt
import pytest

from pyterrier_longdoc.cli import main, parse_settings, read_documents, read_topics


@pytest.fixture()
def trec_files(tmp_path):
    topics = tmp_path / "topics.txt"
    topics.write_text("q1\twhat cat\nq2\twhat dog\n")
    docs = tmp_path / "docs.tsv"
    rows = {f"{q}-d{j}": "the a of and " * 8 + ("castle " if j == 0 else "house ") * 6
            for q in ("q1", "q2") for j in range(3)}
    docs.write_text("".join(f"{docno}\t{text}\n" for docno, text in rows.items()))
    run = tmp_path / "bm25.run"
    run.write_text("".join(f"{d[:2]} Q0 {d} {int(d[-1])} {10 - int(d[-1])} bm25\n" for d in rows))
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"{d[:2]} 0 {d} {int(d.endswith('d0'))}\n" for d in rows))
    return {"topics": topics, "docs": docs, "run": run, "qrels": qrels}


def test_train_then_rerank(trec_files, tiny_bert, tmp_path, capsys):
    files = {k: str(v) for k, v in trec_files.items()}
    common = ["--topics", files["topics"], "--run", files["run"], "--docs", files["docs"]]
    model_dir = tmp_path / "model"
    assert main(["train", "--model", "parade_attn", "--backbone", tiny_bert, *common, "--qrels", files["qrels"],
                 "--output", str(model_dir), "--set", "window=12", "stride=6", "max_length=48",
                 "max_query_tokens=8", "--fit", "queries_per_step=2", "lr=1e-3", "seed=3"]) == 0
    config = json.loads((model_dir / "config.json").read_text())
    ours = config["pyterrier_longdoc"]
    assert ours["model"] == "parade_attn" and ours["settings"]["window"] == 12

    out = tmp_path / "reranked.run"
    assert main(["rerank", "--model", str(model_dir), *common, "--output", str(out)]) == 0
    reranked = pt.io.read_results(str(out))
    assert len(reranked) == 6 and set(reranked["qid"]) == {"q1", "q2"}
    assert "wrote" in capsys.readouterr().out


def test_documents_missing_from_the_docs_file_are_named(trec_files, tiny_bert, tmp_path):
    trec_files["docs"].write_text("q1-d0\tonly one\n")
    with pytest.raises(SystemExit, match="not in the documents file"):
        main(["rerank", "--model", tiny_bert, "--topics", str(trec_files["topics"]), "--run",
              str(trec_files["run"]), "--docs", str(trec_files["docs"]), "--output", str(tmp_path / "x")])


def test_readers(tmp_path):
    trec = tmp_path / "topics.trec"
    trec.write_text("<top>\n<num> 7 </num>\n<title> red castle </title>\n</top>\n")
    assert read_topics(str(trec))[["qid", "query"]].values.tolist() == [["7", "red castle"]]
    jsonl = tmp_path / "docs.jsonl"
    jsonl.write_text('{"docno": "007", "text": "a b"}\n')
    assert read_documents(str(jsonl)).to_dict("records") == [{"docno": "007", "text": "a b"}]
    tsv = tmp_path / "docs.tsv"
    tsv.write_text('1\ta "quoted" text\n2\t\n')
    assert read_documents(str(tsv))["text"].tolist() == ['a "quoted" text', ""]
    assert parse_settings(["window=150", "chunk_selection=first_last_even", "max_chunks=null"]) == {
        "window": 150, "chunk_selection": "first_last_even", "max_chunks": None}
    with pytest.raises(SystemExit, match="key=value"):
        parse_settings(["window"])
    assert isinstance(read_documents(str(tsv)), pd.DataFrame)

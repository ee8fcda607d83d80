"""The command line: train then rerank on TREC files, Pyserini and PISA indexes, and one-line errors."""
import argparse
import json
import re

import pandas as pd
import pyterrier as pt
import pytest

import pyterrier_longdoc
import pyterrier_longdoc as pl
from pyterrier_longdoc.cli import (CliError, build_parser, main, parse_settings, read_documents, read_qrels, read_run,
                                   read_topics, write_run)

from helpers.cross_encoders import write_cross_encoder

pytestmark = pytest.mark.filterwarnings("ignore::pyterrier_longdoc.UntrainedHeadWarning")

TINY = ["--set", "window=12", "stride=6", "max_length=48", "max_query_tokens=8"]
FAST_FIT = ["--fit", "queries_per_step=2", "lr=1e-3", "seed=3"]


def common(files):
    return ["--topics", files["topics"], "--run", files["run"], "--docs", files["docs"]]


@pytest.fixture()
def trained(trec_files, tiny_bert, tmp_path):
    model_dir = tmp_path / "model"
    assert main(["train", "--model", "parade_attn", "--backbone", tiny_bert, *common(trec_files),
                 "--qrels", trec_files["qrels"], "--output", str(model_dir), *TINY, *FAST_FIT]) == 0
    return model_dir


def test_train_then_rerank_writes_one_based_ranks(trec_files, trained, tmp_path, capsys):
    ours = json.loads((trained / "config.json").read_text())["pyterrier_longdoc"]
    assert ours["model"] == "parade_attn" and ours["settings"]["window"] == 12
    out = tmp_path / "reranked.run"
    assert main(["rerank", "--model", str(trained), *common(trec_files), "--output", str(out)]) == 0
    lines = [line.split() for line in out.read_text().splitlines()]
    assert len(lines) == 6 and {line[0] for line in lines} == {"q1", "q2"}
    assert sorted(int(line[3]) for line in lines if line[0] == "q1") == [1, 2, 3]  # TREC ranks start at 1
    scores = [float(line[4]) for line in lines if line[0] == "q1"]
    assert scores == sorted(scores, reverse=True)
    assert "wrote" in capsys.readouterr().out
    top1 = tmp_path / "top1.run"
    assert main(["rerank", "--model", str(trained), *common(trec_files), "--top-k", "1", "--output", str(top1)]) == 0
    assert [line.split()[2] for line in top1.read_text().splitlines()] == ["q1-d0", "q2-d0"]  # the run's first


@pytest.mark.filterwarnings("ignore::pyterrier_longdoc.training.selection.ChanceLevelWarning")  # a toy fit of a few steps
def test_train_with_top_k_text_field_and_validation(trec_files, tiny_bert, tmp_path, capsys):
    docs = tmp_path / "docs.jsonl"  # the text to use is in body; title is a decoy
    docs.write_text("".join(json.dumps({"docno": d, "title": "x", "body": t}) + "\n" for d, t in
                            (line.split("\t") for line in open(trec_files["docs"]).read().splitlines())))
    files = {**trec_files, "docs": str(docs)}
    model_dir = tmp_path / "model"
    assert main(["train", "--model", "maxp", "--backbone", tiny_bert, *common(files), "--text-field", "body",
                 "--top-k", "2", "--qrels", files["qrels"], "--valid-topics", files["topics"],
                 "--valid-qrels", files["qrels"], "--valid-run", files["run"], "--valid-metric", "RR@10",
                 "--epochs", "2", "--output", str(model_dir), *TINY, *FAST_FIT]) == 0
    out = capsys.readouterr().out
    assert "epoch 1: validation RR@10" in out and "epoch 2: validation RR@10" in out
    assert (model_dir / "config.json").exists()
    assert main(["train", "--model", "maxp", "--backbone", tiny_bert, *common(files), "--qrels", files["qrels"],
                 "--output", str(tmp_path / "m2")]) == 2  # the JSONL has no text field: named, not trained
    assert "no field 'text'" in capsys.readouterr().err


def test_version_and_models(capsys):
    with pytest.raises(SystemExit) as exit:
        main(["--version"])
    assert exit.value.code == 0 and capsys.readouterr().out.strip() == f"pyterrier-longdoc {pyterrier_longdoc.__version__}"
    assert main(["models"]) == 0
    trainable, listwise = capsys.readouterr().out.split("\n\n")
    assert [line.split()[0] for line in trainable.splitlines()] == list(pyterrier_longdoc.registered_models())
    assert listwise.splitlines()[1].startswith("RankGPT    ")


def test_rerank_starts_a_zero_shot_model_from_a_cross_encoder(trec_files, tmp_path):

    cross_encoder = write_cross_encoder(tmp_path / "ce")
    out = tmp_path / "maxp.run"
    assert main(["rerank", "--model", "maxp", "--backbone", str(cross_encoder), *common(trec_files), *TINY,
                 "--output", str(out)]) == 0
    run = pt.io.read_results(str(out))
    frame = read_documents(trec_files["docs"])(run.merge(read_topics(trec_files["topics"]), on="qid"))
    expected = pyterrier_longdoc.MaxP(str(cross_encoder), window=12, stride=6, max_length=48,
                                      max_query_tokens=8).score_texts(frame["query"].tolist(), frame["text"].tolist())
    assert run["score"].tolist() == pytest.approx(expected.tolist(), abs=1e-5)
    assert main(["rerank", "--model", "maxq", "--backbone", str(cross_encoder), *common(trec_files),
                 "--output", str(out)]) == 2


def test_help_and_version_load_neither_torch_nor_pandas():
    """They answer before the library loads (the start-up time is measured, not tested)."""
    import subprocess
    import sys

    code = ("import sys; from pyterrier_longdoc.cli import main\n"
            "for argv in (['--version'], ['--help'], ['rerank', '--help']):\n"
            "    try: main(argv)\n"
            "    except SystemExit: pass\n"
            "print(sorted(m for m in ('torch', 'pandas', 'pyterrier', 'transformers') if m in sys.modules))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.splitlines()[-1] == "[]"
    loaded = subprocess.run([sys.executable, "-c", "import pyterrier_longdoc as pl, sys; pl.training; pl.MaxP; "
                             "from pyterrier_longdoc.data import documents; "
                             "print('torch' in sys.modules, documents.TextLoader is pl.TextLoader)"],
                            capture_output=True, text=True, check=True)
    assert loaded.stdout.split() == ["True", "True"]


def test_help_is_plain_text(capsys):
    for argv in (["--help"], ["rerank", "--help"], ["train", "--help"]):
        with pytest.raises(SystemExit):
            main(argv)
        text = capsys.readouterr().out
        assert "--topics" in text or "rerank" in text
        assert "``" not in text and ":class:" not in text


def test_rerank_a_lucene_index_and_pyserini_jsonl(trained, tmp_path):
    from helpers.lucene_standin import TOPICS, build_index

    collection, index, docs = build_index(tmp_path / "lucene")
    topics = tmp_path / "topics.tsv"
    topics.write_text("".join(f"{q}\t{query}\n" for q, query in TOPICS.items()))
    out = tmp_path / "from-index.run"
    # candidates and text from the index
    assert main(["rerank", "--model", str(trained), "--topics", str(topics), "--lucene-index", str(index),
                 "--top-k", "2", "--output", str(out)]) == 0
    run = pt.io.read_results(str(out))
    assert len(run) == 6 and set(run["docno"]) <= {f"d{i}" for i in range(9)} and run["rank"].min() == 1
    # a run file with Pyserini's JSONL folder as documents, and the same run with the index's stored text
    bm25 = tmp_path / "bm25.run"
    bm25.write_text("".join(f"{q} Q0 d{3 * i + j} {j + 1} {3 - j} bm25\n" for i, q in enumerate(TOPICS) for j in range(3)))
    from_jsonl, from_text = tmp_path / "jsonl.run", tmp_path / "text.run"
    assert main(["rerank", "--model", str(trained), "--topics", str(topics), "--run", str(bm25),
                 "--docs", str(collection), "--output", str(from_jsonl)]) == 0
    assert main(["rerank", "--model", str(trained), "--topics", str(topics), "--run", str(bm25),
                 "--lucene-index", str(index), "--output", str(from_text)]) == 0
    assert from_jsonl.read_text() == from_text.read_text() and len(from_jsonl.read_text().splitlines()) == 9
    assert read_documents(str(collection))(pd.DataFrame({"docno": ["d5"]}))["text"].tolist() == [docs["d5"]]


def test_rerank_a_pisa_index(trained, trec_files, tmp_path):
    from pyterrier_pisa import PisaIndex

    docs = pd.read_csv(trec_files["docs"], sep="\t", names=["docno", "text"])
    PisaIndex(str(tmp_path / "pisa"), text_field="text").index(docs.to_dict("records"))
    topics = tmp_path / "topics.txt"
    topics.write_text("q1\tcastle\n")
    out = tmp_path / "pisa.run"
    assert main(["rerank", "--model", str(trained), "--topics", str(topics), "--pisa-index", str(tmp_path / "pisa"),
                 "--docs", trec_files["docs"], "--output", str(out)]) == 0
    run = pt.io.read_results(str(out))
    assert set(run["docno"]) == {"q1-d0", "q2-d0"} and sorted(run["rank"]) == [1, 2]  # the castle documents
    assert main(["rerank", "--model", str(trained), "--topics", str(topics), "--pisa-index", str(tmp_path / "pisa"),
                 "--output", str(out)]) == 2  # no --docs: a PISA index has no text


def test_run_qids_missing_from_the_topics_are_counted(trec_files, trained, tmp_path, capsys):
    with open(trec_files["run"], "a") as f:
        f.write("q9 Q0 q1-d0 1 5 bm25\nq9 Q0 q1-d1 2 4 bm25\n")
    out = tmp_path / "out.run"
    assert main(["rerank", "--model", str(trained), *common(trec_files), "--output", str(out)]) == 0
    assert f"warning: {trec_files['run']}: 2 of 8 lines left out: their 1 qids are not topics" in capsys.readouterr().err
    assert len(out.read_text().splitlines()) == 6
    with open(trec_files["topics"], "a") as f:
        f.write("q3\twhat bird\n")
    assert main(["rerank", "--model", str(trained), *common(trec_files), "--output", str(out)]) == 0
    assert f"warning: {trec_files['topics']}: 1 of 3 topics have no candidates in {trec_files['run']}" in (
        capsys.readouterr().err)


BAD_INPUTS = {
    "five-column run": ("run", "q1 Q0 q1-d0 1 9\n", "{run}:1: 5 columns, expected 6 (qid Q0 docno rank score tag)"),
    "rank not a number": ("run", "q1 Q0 q1-d0 1 9 x\nq1 Q0 q1-d1 one 8 x\n", "{run}:2: rank 'one' must be an integer"),
    "docno twice": ("run", "q1 Q0 q1-d0 1 9 x\nq1 Q0 q1-d0 2 8 x\n", "{run}:2: docno 'q1-d0' is listed for qid 'q1' again"),
    "extra tab in docs": ("docs", "q1-d0\tcastle\textra\nq1-d1\thouse\n", "{docs}:1: 3 tab-separated fields, expected 2"),
    "three-column qrels": ("qrels", "q1 q1-d0 1\n", "{qrels}:1: 3 columns, expected 4 (qid iteration docno label)"),
    "label not a number": ("qrels", "q1 0 q1-d0 yes\n", "{qrels}:1: label 'yes' is not an integer"),
    "query missing": ("topics", "q1\twhat cat\nq2\n", "{topics}:2: expected qid<TAB>query"),
    "qid twice": ("topics", "q1\twhat cat\nq1\twhat dog\n", "{topics}:2: qid 'q1' is given twice"),
    "documents missing": ("docs", "q1-d0\tcastle\n", "{run}: documents not in {docs}: 5 docnos"),
    "nothing relevant": ("qrels", "q1 0 q1-d0 0\n", "{qrels}: no judgement has a label above 0"),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_malformed_inputs_give_one_error_line_and_status_2(case, trec_files, tiny_bert, tmp_path, capsys):
    which, content, message = BAD_INPUTS[case]
    with open(trec_files[which], "w") as f:
        f.write(content)
    argv = ["train", "--model", "maxp", "--backbone", tiny_bert, *common(trec_files), "--qrels", trec_files["qrels"],
            "--output", str(tmp_path / "model")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1].startswith("error: " + message.format(**trec_files)), err
    assert "Traceback" not in err and not (tmp_path / "model").exists()


@pytest.mark.parametrize("model, problem", [("./no-such-model", "no such directory"),
                                            ("/no/such/model", "no such directory"),
                                            ("no-such-model", "no such directory, and not in the HuggingFace cache")])
def test_missing_files_and_models_fail_at_once(model, problem, trec_files, tmp_path, capsys):
    assert main(["rerank", "--model", model, *common(trec_files), "--output", str(tmp_path / "x")]) == 2
    assert capsys.readouterr().err.strip() == f"error: --model {model}: {problem}" + (
        " (HF_HUB_OFFLINE is set)" if "cache" in problem else "")
    absent = str(tmp_path / "absent.run")
    assert main(["rerank", "--model", "./m", "--topics", trec_files["topics"], "--run", absent, "--docs",
                 trec_files["docs"], "--output", str(tmp_path / "x")]) == 2
    assert main(["train", "--model", "maxp", "--backbone", str(tmp_path), *common({**trec_files, "run": absent}),
                 "--qrels", trec_files["qrels"], "--output", str(tmp_path / "x")]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"error: {absent}: no such file"


def test_hub_unreachable_is_one_line(monkeypatch, trec_files, tmp_path, capsys):
    import huggingface_hub
    from huggingface_hub import constants

    def unreachable(*args, **kwargs):
        raise ConnectionError("Name or service not known")

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub, "model_info", unreachable)
    assert main(["rerank", "--model", "org/model", *common(trec_files), "--output", str(tmp_path / "x")]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: --model org/model: no such directory, and the HuggingFace hub is unreachable (Name or service not known)")


def test_option_combinations_are_checked(trec_files, tiny_bert, tmp_path, capsys):
    base = ["train", "--model", "maxp", "--backbone", tiny_bert, "--qrels", trec_files["qrels"], "--output",
            str(tmp_path / "m")]
    assert main([*base, "--topics", trec_files["topics"], "--docs", trec_files["docs"]]) == 2
    assert "--run, --lucene-index or --pisa-index" in capsys.readouterr().err
    assert main([*base, *common(trec_files), "--valid-topics", trec_files["topics"]]) == 2
    assert "--valid-topics and --valid-qrels go together" in capsys.readouterr().err
    assert main([*base, *common(trec_files), "--valid-topics", trec_files["topics"], "--valid-qrels",
                 trec_files["qrels"]]) == 2
    assert "needs --valid-run" in capsys.readouterr().err
    assert main([*base, *common(trec_files), "--top-k", "0"]) == 2
    assert main(["train", "--model", "nope", "--backbone", tiny_bert, *common(trec_files), "--qrels",
                 trec_files["qrels"], "--output", str(tmp_path / "m")]) == 2
    assert "unknown model 'nope'" in capsys.readouterr().err


def test_readers(tmp_path):
    trec = tmp_path / "topics.trec"
    trec.write_text("<top>\n<num> 7 </num>\n<title> red castle </title>\n</top>\n")
    assert read_topics(str(trec))[["qid", "query"]].values.tolist() == [["7", "red castle"]]
    spaced = tmp_path / "topics.txt"
    spaced.write_text("1 red castle\n2\tblue  river\n")
    assert read_topics(str(spaced)).values.tolist() == [["1", "red castle"], ["2", "blue  river"]]
    run = tmp_path / "run"
    run.write_text("1 Q0 a 1 2.5 x\n1 Q0 b 2 1.5 x\n")
    assert read_run(str(run)).values.tolist() == [["1", "a", 2.5, 1], ["1", "b", 1.5, 2]]
    qrels = tmp_path / "qrels"
    qrels.write_text("1 0 a 2\n")
    assert read_qrels(str(qrels)).values.tolist() == [["1", "a", 2]]
    jsonl = tmp_path / "docs.jsonl"
    jsonl.write_text('{"docno": "007", "text": "a b"}\n')
    assert read_documents(str(jsonl))(pd.DataFrame({"docno": ["007"]}))["text"].tolist() == ["a b"]
    assert parse_settings(["window=150", "chunk_selection=first_last_even", "max_chunks=null"]) == {
        "window": 150, "chunk_selection": "first_last_even", "max_chunks": None}


# --- bad input files and names: one line, naming the file line or the name ---

def cli_error(argv, capsys) -> str:
    from pyterrier_longdoc.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err.splitlines()[-1]


def train_argv(files, tiny_bert, tmp_path, *extra):
    return ["train", "--model", "maxp", "--backbone", tiny_bert, "--topics", files["topics"], "--run", files["run"],
            "--docs", files["docs"], "--qrels", files["qrels"], "--output", str(tmp_path / "model"), *extra]


def test_a_trec_topic_without_title_is_named_by_line(trec_files, tiny_bert, tmp_path, capsys):
    topics = tmp_path / "topics.trec"
    topics.write_text("<top>\n<num> Number: q1\n<title> what cat\n</top>\n\n"
                      "<top>\n<num> Number: q2\n<desc> Description:\nonly a description\n</top>\n")
    argv = train_argv({**trec_files, "topics": str(topics)}, tiny_bert, tmp_path)
    assert cli_error(argv, capsys) == f"error: {topics}:7: topic 'q2' has no <title>, so no query"


@pytest.mark.parametrize("value, shown", [("null", "null"), ("42", "42"), ('["castle"]', '["castle"]')])
def test_a_json_text_that_is_not_a_string_is_named_by_line(trec_files, tiny_bert, tmp_path, capsys, value, shown):
    docs = tmp_path / "docs.jsonl"
    lines = [json.dumps({"docno": f"{q}-d{j}", "text": "castle house"}) for q in ("q1", "q2") for j in range(3)]
    lines[1] = f'{{"docno": "q1-d1", "text": {value}}}'
    docs.write_text("\n".join(lines) + "\n")
    argv = train_argv({**trec_files, "docs": str(docs)}, tiny_bert, tmp_path)
    assert cli_error(argv, capsys) == f"error: {docs}:2: the 'text' of docno 'q1-d1' is {shown}, not a string"


@pytest.mark.parametrize("extra, message", [
    (["--set", "windw=150"], r"--set windw=\.\.\.: unknown name 'windw' \(did you mean 'window'\?\); "
                              r"valid names: window, stride, .*, max_length"),
    (["--fit", "lrr=1e-4"], r"--fit lrr=\.\.\.: unknown name 'lrr' \(did you mean 'lr'\?\); "
                             r"valid names: loss, negatives, lr, "),
    (["--fit", "epochs=2"], r"--fit epochs=\.\.\.: give it as --epochs$"),
    (["--fit", "lr=fast"], r"--fit lr=fast: expected a number, such as its default 1e-05$"),
    (["--set", "window=wide"], r"--set window=wide: expected a number, such as its default 150$"),
])
def test_unknown_or_clashing_cli_names_are_one_line(trec_files, tiny_bert, tmp_path, capsys, extra, message):

    assert re.match(r"error: " + message.removeprefix("error: "), cli_error(
        train_argv(trec_files, tiny_bert, tmp_path, *extra), capsys))


# --- the command line takes whole option names and points to the right one ---

def test_cli_refuses_an_abbreviated_option(capsys):
    with pytest.raises(SystemExit):  # not read as --model x
        build_parser().parse_args(["rerank", "--mod", "x", "--topics", "t", "--output", "o"])
    assert "unknown option --mod; did you mean --model?" in capsys.readouterr().err


def test_cli_model_name_without_backbone_says_to_add_it(trec_files, tmp_path, capsys):
    assert main(["rerank", "--model", "maxp", "--topics", trec_files["topics"], "--run", trec_files["run"],
                 "--docs", trec_files["docs"], "--output", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "--model maxp: no such directory; 'maxp' is a model name" in err and "add --backbone DIR" in err


def test_cli_fit_option_typo_points_to_the_option(trec_files, tiny_bert, tmp_path, capsys):
    assert main(["train", "--model", "maxp", "--backbone", tiny_bert, "--topics", trec_files["topics"],
                 "--run", trec_files["run"], "--docs", trec_files["docs"], "--qrels", trec_files["qrels"],
                 "--output", str(tmp_path / "m"), "--fit", "epoch=1"]) == 2
    assert "unknown name 'epoch' (did you mean --epochs?)" in capsys.readouterr().err


def test_fit_options_typo_points_to_the_option(tiny_bert):
    with pytest.raises(TypeError, match=r"unknown fit option 'epoch' \(did you mean 'epochs'\?\)"):
        pl.MaxP(tiny_bert, fit_options={"epoch": 1}, window=12, stride=6, max_length=48, max_query_tokens=8)


# --- help texts, plain text, unknown options and unclosed topics (issue 53, item 14) ---

def _parsers(parser, name="pyterrier-longdoc"):
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command, subparser in action.choices.items():
                yield from _parsers(subparser, command)


def test_every_option_of_every_command_has_help():
    without = [(name, action.option_strings or action.dest) for name, parser in _parsers(build_parser())
               for action in parser._actions if not action.help]
    assert without == []


def test_models_prints_plain_text_not_rst(capsys):
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert "``" not in out and not re.search(r":\w+:`", out)
    assert "the mean of the k best windows' scores" in out


@pytest.mark.parametrize("argv, option, hint", [
    (["train", "--modle", "maxp"], "--modle", "--model"),
    (["rerank", "--model", "m", "--topcs", "t"], "--topcs", "--topics"),
    (["--verison"], "--verison", "--version"),
    (["train", "--zzzz"], "--zzzz", None),
])
def test_unknown_options_fail_first_with_a_suggestion(argv, option, hint, capsys):
    with pytest.raises(SystemExit) as exit:
        main(argv)
    last = capsys.readouterr().err.splitlines()[-1]
    assert exit.value.code == 2 and "required" not in last
    assert last.endswith(f"error: unknown option {option}" + (f"; did you mean {hint}?" if hint else ""))


def test_values_that_look_like_numbers_are_not_unknown_options(capsys):
    assert build_parser().parse_args(["rerank", "--model", "m", "--topics", "t", "--output", "o",
                                      "--top-k", "-3"]).top_k == -3


@pytest.mark.parametrize("content, line, problem", [
    ("<top>\n<num> 7 </num>\n<title> red </title>\n\n<top>\n<num> 8 </num>\n<title> blue </title>\n</top>\n",
     1, "<top> not closed by a </top> before the next <top> (line 5)"),
    ("<top>\n<num> 7 </num>\n<title> red </title>\n</top>\n<top>\n<num> 8 </num>\n<title> blue </title>\n",
     5, "<top> not closed by a </top> before the end of the file"),
    ("<top>\n<num> 7 </num>\n<title> red </title>\n</top>\n</top>\n", 5, "</top> without a <top> before it"),
])
def test_an_unclosed_top_names_the_file_and_its_line(content, line, problem, tmp_path):
    from pyterrier_longdoc.engine.files import MalformedInputError

    topics = tmp_path / "topics.trec"
    topics.write_text(content)
    with pytest.raises(MalformedInputError) as error:
        read_topics(str(topics))
    assert str(error.value) == f"{topics}:{line}: {problem}"


# --- ids a TREC run cannot hold: refused, naming the row; what is written always reads back ---

SEPARATORS = {"tab": "\t", "newline": "\n", "carriage return": "\r", "space": " ", "no-break space": "\u00a0"}


@pytest.fixture(scope="module")
def cross_encoder(tmp_path_factory):
    return str(write_cross_encoder(tmp_path_factory.mktemp("cross-encoder")))


def scored(qids, docnos):
    return pd.DataFrame({"qid": qids, "docno": docnos, "score": [3.0, 2.0, 1.0][:len(qids)],
                         "rank": list(range(len(qids)))})


@pytest.mark.parametrize("column", ["qid", "docno"])
@pytest.mark.parametrize("name", SEPARATORS)
def test_the_run_writer_refuses_ids_holding_whitespace(column, name, tmp_path):
    ids = {"qid": ["q1", "q1", "q1"], "docno": ["d1", "d2", "d3"]}
    ids[column][1] += f"{SEPARATORS[name]}x"
    out = tmp_path / "out.run"
    row = rf"row 1 \(qid {re.escape(repr(ids['qid'][1]))}, docno {re.escape(repr(ids['docno'][1]))}\)"
    with pytest.raises(CliError, match=rf"--output {re.escape(str(out))}: not written: {column} "
                                       rf"{re.escape(repr(ids[column][1]))} of {row} holds a {name} "
                                       rf"\(U\+{ord(SEPARATORS[name]):04X}\): a TREC run separates its columns"):
        write_run(scored(ids["qid"], ids["docno"]), str(out), "run")
    assert not out.exists()


def test_a_written_run_reads_back_with_read_run_and_ir_measures(tmp_path):
    """Ids with quotes, commas, hashes and accents, and float32 scores: the file's lines are the
    frame's rows, read back alike by read_run and ir_measures (pandas' CSV writer would quote a ``"``)."""
    import ir_measures
    import numpy as np

    frame = scored(['q"1', "q#2", "q,3"], ['d"1', "caf\u00e9", "d'3"]).astype({"score": np.float32})
    frame.loc[0, "score"] = 0.1234567
    out = tmp_path / "out.run"
    write_run(frame, str(out), "my-run")
    back = read_run(str(out))
    assert back[["qid", "docno"]].values.tolist() == frame[["qid", "docno"]].values.tolist()
    assert back["score"].tolist() == pytest.approx(frame["score"].tolist()) and back["rank"].tolist() == [1, 2, 3]
    measured = [(d.query_id, d.doc_id, d.score) for d in ir_measures.read_trec_run(str(out))]
    assert measured == list(zip(back["qid"], back["docno"], back["score"]))
    with pytest.raises(CliError, match=r"--name 'my run' holds a space \(U\+0020\)"):
        write_run(frame, str(out), "my run")
    with pytest.raises(CliError, match=r"not written: score nan of row 2 \(qid 'q,3', docno \"d'3\"\) is not finite"):
        write_run(frame.assign(score=[1.0, 2.0, float("nan")]), str(out), "run")


@pytest.mark.parametrize("character", [" ", "\u00a0"], ids=["space", "no-break space"])
def test_topics_with_a_qid_holding_whitespace_are_refused_by_line(character, trec_files, cross_encoder, tmp_path,
                                                                  capsys):
    topics = tmp_path / "topics.tsv"
    topics.write_text(f"q1\twhat cat\nq{character}2\twhat dog\n")
    argv = ["rerank", "--model", "maxp", "--backbone", cross_encoder, *TINY, "--topics", str(topics), "--run",
            trec_files["run"], "--docs", trec_files["docs"], "--output", str(tmp_path / "out.run")]
    assert cli_error(argv, capsys).startswith(f"error: {topics}:2: qid {f'q{character}2'!r} holds a ")
    argv[argv.index("--topics") + 1] = trec_files["topics"]
    name = f"my{character}run"
    assert cli_error([*argv, "--name", name], capsys).startswith(f"error: --name {name!r} holds a ")
    assert not (tmp_path / "out.run").exists()


@pytest.mark.parametrize("name", SEPARATORS)
def test_rerank_refuses_candidates_whose_docnos_hold_whitespace_before_scoring(name, trec_files, cross_encoder, tmp_path,
                                                                             monkeypatch, capsys):
    """An index's docnos are the index's (a Lucene or PISA index may hold any): one that a run line
    cannot hold stops the command before the model loads, naming the index and the row."""
    from pyterrier_longdoc import cli

    character, first_stage = SEPARATORS[name], cli.first_stage

    def index_with_odd_docnos(args, topics, run_path, topics_path):
        candidates = first_stage(args, topics, run_path, topics_path)
        return candidates.assign(docno=candidates["docno"].where(candidates.index != 4, f"q2{character}d1"))

    monkeypatch.setattr(cli, "first_stage", index_with_odd_docnos)
    docs = tmp_path / "docs.jsonl"  # the documents file can hold such a docno (JSON lines)
    docs.write_text("".join(json.dumps({"docno": d, "text": "castle"}) + "\n" for d in
                            ["q1-d0", "q1-d1", "q1-d2", "q2-d0", f"q2{character}d1", "q2-d2"]))
    argv = ["rerank", "--model", "maxp", "--backbone", cross_encoder, *TINY, *common({**trec_files, "docs": str(docs)}),
            "--output", str(tmp_path / "out.run")]
    shown = re.escape(repr(f"q2{character}d1"))
    assert re.match(rf"error: {re.escape(trec_files['run'])}: docno {shown} of row 4 \(qid 'q2', docno {shown}\) "
                    rf"holds a {name} .*: a TREC run separates its columns by whitespace", cli_error(argv, capsys))
    assert not (tmp_path / "out.run").exists()


def test_a_saved_model_with_a_setting_that_does_not_load_names_its_config(trec_files, cross_encoder, tmp_path, capsys):
    saved = tmp_path / "maxp"
    pl.MaxP(cross_encoder, window=12, stride=6, max_length=48, max_query_tokens=8).save_pretrained(saved)
    config = json.loads((saved / "config.json").read_text())
    config["pyterrier_longdoc"]["settings"]["window"] = "wide"
    (saved / "config.json").write_text(json.dumps(config))
    argv = ["rerank", "--model", str(saved), *common(trec_files), "--output", str(tmp_path / "out.run")]
    assert cli_error(argv, capsys) == (f"error: {saved / 'config.json'}: its saved settings do not load ('window' = "
                                       "'wide'): MaxPSettings: window must be a positive integer or None, got 'wide'")

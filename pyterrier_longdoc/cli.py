"""``pyterrier-longdoc demo | models | train | rerank | reproduce``: the library from the shell.

Inputs: TREC topics (or ``qid<TAB>query`` lines), TREC qrels, and candidates from a TREC run file
(``--run``), a Pyserini Lucene index (``--lucene-index``, BM25) or a PISA index (``--pisa-index``,
BM25); document text from ``--docs`` (``docno<TAB>text`` lines, JSON lines with ``docno``/``text``
or Pyserini's ``id``/``contents``, or a folder of JSON-lines files) or from the Lucene index's
stored documents. Written runs have 1-based ranks; qids and docnos holding whitespace are refused (a TREC
line splits at any), so a written run reads back as it was.

A malformed input stops the command with one line ``error: FILE:LINE: what is wrong`` and exit
status 2; lines left out (run lines whose qid has no topic) are counted in a warning.
"""
from __future__ import annotations

import argparse
import dataclasses
import difflib
import functools
import json
import math
import re
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from .engine.files import MalformedInputError
from .engine import BATCH_SIZE, DTYPES

if TYPE_CHECKING:
    import pandas as pd
    import pyterrier as pt

# pandas, PyTerrier and torch load inside the commands: --help and --version start in a blink
EXIT_BAD_INPUT = 2


class CliError(Exception):
    """A one-line error for the user (no traceback)."""


def _lines(path: str):
    """``(line number, stripped line)`` of the non-empty lines of ``path``."""
    if not Path(path).is_file():
        raise MalformedInputError(path, None, "no such file" if not Path(path).exists() else "not a file")
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            if line.strip():
                yield number, line.strip("\r\n")


def read_topics(path: str) -> pd.DataFrame:
    """TREC topic files (``<top>``) or one ``qid<TAB>query`` (or ``qid query``) per line."""
    import pandas as pd
    import pyterrier as pt

    lines = list(_lines(path))
    if any("<top>" in line.lower() for _, line in lines[:50]):
        _check_top_tags(path, lines)
        try:
            topics = pt.io.read_topics(path, format="trec")[["qid", "query"]]
        except Exception as e:  # the SGML reader's errors carry no line
            raise MalformedInputError(path, None, f"not a TREC topics file ({type(e).__name__}: {e})") from None
        lines = [(None, qid) for qid in topics["qid"]]
        untitled = topics["qid"][topics["query"].str.strip() == ""]
        if len(untitled):
            qid = untitled.iloc[0]
            raise MalformedInputError(path, _topic_line(path, qid), f"topic {qid!r} has no <title>, so no query")
    else:
        rows = []
        for number, line in lines:
            qid, _, query = line.partition("\t") if "\t" in line else line.strip().partition(" ")
            if not qid.strip() or not query.strip():
                raise MalformedInputError(path, number, "expected qid<TAB>query")
            rows.append((qid.strip(), query.strip()))
        topics = pd.DataFrame(rows, columns=["qid", "query"])
    if not len(topics):
        raise MalformedInputError(path, None, "no topics")
    for (number, _), qid in zip(lines, topics["qid"]):
        problem = id_problem(qid)
        if problem:
            raise MalformedInputError(path, number or _topic_line(path, qid), f"qid {qid!r} {problem}: TREC qrels "
                                      "and runs separate their columns by whitespace, so none of their lines can name it")
    repeated = topics["qid"][topics["qid"].duplicated()]
    if len(repeated):
        number = lines[repeated.index[0]][0]
        raise MalformedInputError(path, number, f"qid {repeated.iloc[0]!r} is given twice")
    return topics


def _check_top_tags(path: str, lines) -> None:
    """Every ``<top>`` closed by a ``</top>`` before the next one, and holding a ``<num>``: PyTerrier's
    reader silently lets an unclosed topic run into the next (or the end of the file), and fails on a
    topic without a number with an AttributeError that names no line."""
    opened = numbered = None  # the line of the <top> not yet closed; whether it has a <num>
    tags = ((number, tag.lower()) for number, line in lines
            for tag in re.findall(r"<(/?top|num)>", line, re.IGNORECASE))
    for number, tag in tags:
        if tag == "num":
            numbered = opened is not None
            continue
        closing = tag == "/top"
        if closing and opened is None:
            raise MalformedInputError(path, number, "</top> without a <top> before it")
        if not closing and opened is not None:
            raise MalformedInputError(path, opened, f"<top> not closed by a </top> before the next <top> (line {number})")
        if closing and not numbered:
            raise MalformedInputError(path, opened, "topic without a <num>, so no qid")
        opened, numbered = (None, None) if closing else (number, False)
    if opened is not None:
        raise MalformedInputError(path, opened, "<top> not closed by a </top> before the end of the file")


def _topic_line(path: str, qid: str) -> int | None:
    """The line of a TREC topic's ``<num>``."""
    pattern = re.compile(rf"<num>.*(?<![\w-]){re.escape(str(qid))}(?![\w-])", re.IGNORECASE)
    return next((number for number, line in _lines(path) if pattern.search(line)), None)


def _columns(path: str, expected: int, layout: str):
    for number, line in _lines(path):
        fields = line.split()
        if len(fields) != expected:
            raise MalformedInputError(path, number, f"{len(fields)} columns, expected {expected} ({layout})")
        yield number, fields


def read_run(path: str) -> pd.DataFrame:
    """A TREC run, ``qid Q0 docno rank score tag``: ``qid, docno, score, rank`` (the file's ranks)."""
    import pandas as pd

    rows = []
    seen: dict[tuple[str, str], int] = {}  # the line each (qid, docno) was first on
    for number, (qid, _, docno, rank, score, _) in _columns(path, 6, "qid Q0 docno rank score tag"):
        try:
            rank, score = int(rank), float(score)
        except ValueError:
            raise MalformedInputError(path, number, f"rank {rank!r} must be an integer and score {score!r} a number") from None
        if not math.isfinite(score):
            raise MalformedInputError(path, number, f"score {score} is not finite")
        first = seen.setdefault((qid, docno), number)
        if first != number:
            raise MalformedInputError(path, number, f"docno {docno!r} is listed for qid {qid!r} again (first on line {first})")
        rows.append((qid, docno, score, rank))
    if not rows:
        raise MalformedInputError(path, None, "no run lines")
    return pd.DataFrame(rows, columns=["qid", "docno", "score", "rank"])


def read_qrels(path: str) -> pd.DataFrame:
    """TREC qrels, ``qid iteration docno label``: ``qid, docno, label``."""
    import pandas as pd

    rows = []
    for number, (qid, _, docno, label) in _columns(path, 4, "qid iteration docno label"):
        try:
            rows.append((qid, docno, int(label)))
        except ValueError:
            raise MalformedInputError(path, number, f"label {label!r} is not an integer") from None
    if not rows:
        raise MalformedInputError(path, None, "no judgements")
    return pd.DataFrame(rows, columns=["qid", "docno", "label"])


@functools.cache  # read once when training and validation share the file
def read_documents(path: str, text_field: str = "text") -> pt.Transformer:
    """A text loader over the documents file (see :class:`~pyterrier_longdoc.data.documents.TextLoader`),
    adding ``text`` from the documents' ``text_field``."""
    from .data.documents import TextLoader
    from .data.documents import read_documents as read_document_fields

    loader = TextLoader(read_document_fields(path, text_field))  # the text field must hold strings
    if text_field not in loader.fields:
        raise MalformedInputError(path, None, f"the documents have no field {text_field!r}; fields: {loader.fields}")
    return loader.text_loader(text_field)


def parse_settings(pairs: list[str]) -> dict:
    """``key=value`` pairs; values are JSON when they parse (numbers, null), else strings."""
    settings = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise CliError(f"--set and --fit take key=value, got {pair!r}")
        try:
            settings[key] = json.loads(value)
        except json.JSONDecodeError:
            settings[key] = value
    return settings


# fit options the command's own flags give
_FIT_FLAGS = {"epochs": "--epochs", "checkpoint_dir": "--checkpoint-dir", "top_k": "--top-k", "text": "--docs",
              "valid_topics": "--valid-topics", "valid_qrels": "--valid-qrels", "valid_candidates": "--valid-run",
              "valid_metric": "--valid-metric"}


def checked_settings(pairs: list[str], option: str, defaults: dict, flags: dict[str, str] | None = None) -> dict:
    """``parse_settings`` of ``pairs``: every name one of ``defaults``, and a number where its
    default is one; a name that a flag of its own gives is refused, naming the flag."""
    from .training.arguments import did_you_mean

    settings = parse_settings(pairs)
    for key, value in settings.items():
        if flags and key in flags:
            raise CliError(f"{option} {key}=...: give it as {flags[key]}")
        if key not in defaults:
            hint = did_you_mean(key, [*defaults, *(flags or {})])
            for name, flag in (flags or {}).items():  # a name a flag gives: point to the flag
                hint = hint.replace(f"{name!r}", flag)
            raise CliError(f"{option} {key}=...: unknown name {key!r}{hint}; valid names: {', '.join(defaults)}")
        if _is_number(defaults[key]) and not _is_number(value):
            raise CliError(f"{option} {key}={value}: expected a number, such as its default {defaults[key]}")
    return settings


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_model_source(name: str, option: str) -> None:
    """A local directory, or a hub id that is cached or found on the hub: fails fast instead of
    letting transformers retry an unreachable hub for half a minute."""
    path = Path(name).expanduser()
    if path.exists():
        if not path.is_dir():
            raise CliError(f"{option} {name}: not a directory")
        return
    if name.startswith((".", "/", "~")) or name.endswith("/") or name.count("/") > 1 or "\\" in name:
        raise CliError(f"{option} {name}: no such directory")
    import huggingface_hub
    from huggingface_hub import constants

    if isinstance(huggingface_hub.try_to_load_from_cache(name, "config.json"), str):
        return
    if constants.HF_HUB_OFFLINE:
        raise CliError(f"{option} {name}: no such directory, and not in the HuggingFace cache (HF_HUB_OFFLINE is set)")
    try:
        huggingface_hub.model_info(name, timeout=10)
    except huggingface_hub.errors.RepositoryNotFoundError:
        raise CliError(f"{option} {name}: no such directory, and no such model on the HuggingFace hub") from None
    except Exception as e:  # network errors come from httpx, requests or huggingface_hub
        raise CliError(f"{option} {name}: no such directory, and the HuggingFace hub is unreachable ({e})") from None


def first_stage(args, topics: pd.DataFrame, run_path: str | None, topics_path: str) -> pd.DataFrame:
    """``qid, query, docno, score, rank`` (0-based): the run file's lines for the topics, or BM25."""
    if run_path:
        run = read_run(run_path)
        known = run["qid"].isin(set(topics["qid"]))
        if not known.any():
            raise CliError(f"{run_path}: no qid of the run is a topic of {topics_path} "
                           f"(run qids e.g. {sorted(run['qid'].unique())[:3]})")
        if not known.all():
            dropped = run.loc[~known, "qid"].unique()
            print(f"warning: {run_path}: {int((~known).sum())} of {len(run)} lines left out: their {len(dropped)} "
                  f"qids are not topics of {topics_path} (e.g. {sorted(dropped)[:3]})", file=sys.stderr)
        run = run[known].sort_values(["qid", "rank", "score"], ascending=[True, True, False], kind="stable")
        if args.top_k:
            run = run.groupby("qid", sort=False).head(args.top_k)
        # the file's order, as 0-based ranks (scores need not agree with it)
        return topics.merge(run.assign(rank=run.groupby("qid").cumcount()), on="qid")
    k = args.top_k or 100
    if args.lucene_index:
        return _lucene(args.lucene_index).bm25(k=k)(topics)
    try:
        from pyterrier_pisa import PisaIndex
    except ImportError as e:
        raise CliError(f"--pisa-index needs PyTerrier-PISA: pip install pyterrier-pisa ({e})") from None
    index = PisaIndex(args.pisa_index)
    if not index.built():
        raise CliError(f"--pisa-index {args.pisa_index}: no PISA index there")
    return index.bm25(num_results=k)(topics)


@functools.cache
def _lucene(path: str):
    if not Path(path).is_dir():
        raise CliError(f"--lucene-index {path}: no such directory")
    try:
        from .pyserini import LuceneIndex
    except ImportError as e:
        raise CliError(f"--lucene-index needs Pyserini: pip install 'pyterrier-longdoc[pyserini]' ({e})") from None
    return LuceneIndex(path)


def with_text(args, candidates: pd.DataFrame, source: str) -> pd.DataFrame:
    """The candidates with ``text``, from ``--docs`` or the Lucene index; every docno must have one."""
    if args.docs:
        loader, where = read_documents(args.docs, args.text_field), args.docs
    else:
        loader, where = _lucene(args.lucene_index).text_loader(), f"the Lucene index {args.lucene_index}"
    try:
        frame = loader.transform(candidates)
    except KeyError as e:
        raise CliError(f"{source}: documents not in {where}: {e.args[0].split(': ', 1)[-1]}") from None
    return frame.rename(columns={args.text_field: "text"}) if args.text_field != "text" else frame


def candidates_for(args, topics_path: str, run_path: str | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(topics, candidates with text)``."""
    topics = read_topics(topics_path)
    source = run_path or args.lucene_index or args.pisa_index
    candidates = first_stage(args, topics, run_path, topics_path)
    without = sorted(set(topics["qid"]) - set(candidates["qid"]))
    if without:
        print(f"warning: {topics_path}: {len(without)} of {len(topics)} topics have no candidates in {source}, "
              f"so no results (e.g. {without[:3]})", file=sys.stderr)
    return topics, with_text(args, candidates, source)


def write_run(results: pd.DataFrame, path: str, name: str) -> None:
    """TREC run lines, ``qid Q0 docno rank score name``, ranks from 1 (as trec_eval and TREC submissions
    expect), that ``read_run``, trec_eval and ir_measures read back as they were: ids and ``name`` that
    a run line cannot hold (see ``id_problem``) and scores that are not finite are refused, naming the
    row, before the file is opened; ids are written as they are (``pt.io.write_results`` would quote
    one holding ``"``)."""
    import csv

    import numpy as np
    import pandas as pd

    if not Path(path).parent.is_dir():
        raise CliError(f"--output {path}: the folder {Path(path).parent} does not exist")
    check_run_name(name)
    lines = pd.DataFrame({"qid": results["qid"].astype(str), "Q0": "Q0", "docno": results["docno"].astype(str),
                          "rank": results["rank"] + 1, "score": results["score"], "name": name})
    problem = run_id_problem(lines)
    infinite = ~np.isfinite(lines["score"].to_numpy(dtype=float))
    if problem is None and infinite.any():
        problem = f"score {lines['score'].iloc[infinite.argmax()]} {_row(lines, int(infinite.argmax()))} is not finite"
    if problem:
        raise CliError(f"--output {path}: not written: {problem}")
    lines = lines.sort_values(["qid", "rank"], kind="stable")
    lines.to_csv(path, sep=" ", header=False, index=False, quoting=csv.QUOTE_NONE, encoding="utf-8")


# what each whitespace character that TREC readers split a line at is called in an error
_WHITESPACE = {"\t": "tab", "\n": "newline", "\r": "carriage return", " ": "space", "\u00a0": "no-break space"}
RUN_COLUMNS = "a TREC run separates its columns by whitespace, so the line would not read back"


def id_problem(value: str) -> str | None:
    """Why ``value`` cannot be one column of a TREC run or qrels line, or None when it can: their
    readers (trec_eval, ir_measures, ``read_run``) split a line at any whitespace, so an id holding
    some reads as two columns or two lines, and an empty one as none."""
    if not value:
        return "is empty"
    space = re.search(r"\s", value)
    if space is None:
        return None
    character = space.group()
    return f"holds a {_WHITESPACE.get(character, 'whitespace character')} (U+{ord(character):04X})"


def run_id_problem(frame: pd.DataFrame) -> str | None:
    """The first qid or docno of ``frame`` that a TREC run line cannot hold, with its row, or None."""
    for column in ("qid", "docno"):
        ids = frame[column].astype(str)
        refused = (ids.str.contains(r"\s") | (ids == "")).to_numpy()
        if refused.any():
            row = int(refused.argmax())
            return f"{column} {ids.iloc[row]!r} {_row(frame, row)} {id_problem(ids.iloc[row])}: {RUN_COLUMNS}"
    return None


def _row(frame: pd.DataFrame, row: int) -> str:
    return f"of row {row} (qid {str(frame['qid'].iloc[row])!r}, docno {str(frame['docno'].iloc[row])!r})"


def check_run_name(name: str) -> None:
    problem = id_problem(name)
    if problem:
        raise CliError(f"--name {name!r} {problem}: {RUN_COLUMNS} (the name is each line's last column)")


class _Parser(argparse.ArgumentParser):
    """Unknown options and commands fail first, with the closest known one: argparse reports the missing
    required options before unknown ones, so ``--modle`` read as "--model is required", and names no
    command close to a mistyped one."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)  # --mod is not --model (a prefix would change meaning later)
        super().__init__(*args, **kwargs)

    def parse_known_args(self, args=None, namespace=None):
        args = sys.argv[1:] if args is None else list(args)
        commands = {name for action in self._actions if isinstance(action, argparse._SubParsersAction)
                    for name in action.choices}
        for arg in args:
            if arg == "--" or arg in commands:  # the rest is a subcommand's, or not options
                break
            option = arg.split("=", 1)[0]  # argparse's test of what looks like an option
            looks_like_one = option.startswith("-") and option != "-" and " " not in arg
            if looks_like_one and not self._negative_number_matcher.match(arg) \
                    and option not in self._option_string_actions:
                self._unknown("option", option, self._option_string_actions)
            if commands and not looks_like_one:  # the main parser's one positional is the command
                self._unknown("command", arg, commands)
        return super().parse_known_args(args, namespace)

    def _unknown(self, kind: str, name: str, known) -> None:
        close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
        if close:
            self.error(f"unknown {kind} {name}; did you mean {close[0]}?")
        # a few commands are worth listing; dozens of options are --help's
        self.error(f"unknown {kind} {name}" + (f" (known: {', '.join(sorted(known))})" if kind == "command" else ""))


class _Version(argparse.Action):
    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from ._version import __version__

        print(f"pyterrier-longdoc {__version__}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="pyterrier-longdoc", description=plain_text(__doc__),
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser,
                                     help="what to do (add --help after one for its options)")

    demo = _add_command(commands, "demo", "train FirstP, MaxP and PARADE-Attn on the shipped WordNet prose and "
                                          "compare them, with query controls, offline")
    demo.add_argument("--output", default="demo-output", help="where the index, models, plot and test candidates go")
    demo.add_argument("--quick", action="store_true", help="a tiny collection and a few training steps: a smoke test")
    demo.add_argument("--backbone", help="a local encoder directory (default: the packaged MiniLM)")
    demo.add_argument("--seed", type=int, default=0, help="the recipe's seed (default 0, the recorded run's; "
                                                          "benchmarks/prose_seeds.py runs several)")
    demo.add_argument("--dtype", default="fp32", choices=DTYPES,
                      help="precision (default fp32, the recorded run's, on every CPU; auto: bf16 where the "
                           "device computes it natively)")

    _add_command(commands, "models",
                 "list the model names that train --model (and rerank --model with --backbone) accept")

    runtime = _Parser(add_help=False)
    runtime.add_argument("--topics", required=True, help="TREC topics, or qid<TAB>query lines")
    runtime.add_argument("--run", help="candidates: a first-stage run in TREC format")
    runtime.add_argument("--lucene-index", help="candidates: BM25 over a Pyserini Lucene index (needs the [pyserini] "
                                                "extra); with --run: the source of the document text")
    runtime.add_argument("--pisa-index", help="candidates: BM25 over a PyTerrier-PISA index (needs --docs)")
    runtime.add_argument("--docs", help="documents: docno<TAB>text lines, JSON lines (docno/text or Pyserini's "
                                        "id/contents) or a folder of them; default with --lucene-index: its stored text")
    runtime.add_argument("--text-field", default="text", help="the documents' field to use as text (default text)")
    runtime.add_argument("--top-k", type=int, help="candidates per query (default: all of a run, 100 from an index)")
    _add_device_options(runtime)

    train = _add_command(commands, "train", "fine-tune a model end to end and save it", parents=[runtime])
    train.add_argument("--model", required=True, help="a model name (see the models command)")
    train.add_argument("--backbone", required=True, help="a HuggingFace encoder (hub id or directory)")
    train.add_argument("--qrels", required=True, help="TREC qrels")
    train.add_argument("--output", required=True, help="directory to save the trained model to")
    train.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="model settings, e.g. window=150")
    train.add_argument("--epochs", type=int, default=1, help="passes over the training queries (default 1)")
    train.add_argument("--checkpoint-dir", help="resumable training checkpoints")
    train.add_argument("--valid-topics", help="validation topics: the metric is computed after every epoch")
    train.add_argument("--valid-qrels", help="validation qrels (with --valid-topics)")
    train.add_argument("--valid-run", help="validation candidates (default: the same index as training)")
    train.add_argument("--valid-metric", default="nDCG@10", help="an ir_measures name (default nDCG@10)")
    train.add_argument("--fit", nargs="*", default=[], metavar="KEY=VALUE", help="fit options, e.g. lr=2e-5")

    rerank = _add_command(commands, "rerank", "re-rank candidates with a saved model, or zero-shot with a model over "
                                              "a cross-encoder", parents=[runtime])
    rerank.add_argument("--model", required=True, help="a saved pyterrier_longdoc model (directory or hub id); "
                                                       "with --backbone: a model name (see the models command)")
    rerank.add_argument("--backbone", help="start --model from this trained cross-encoder (directory or hub id), "
                                           "e.g. --model maxp --backbone DIR: zero-shot MaxP")
    rerank.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="settings, e.g. window=150 (with --backbone, or to override a saved model's)")
    rerank.add_argument("--output", required=True, help="the re-ranked run, TREC format, ranks from 1")
    rerank.add_argument("--name", default="pyterrier_longdoc", help="the run tag")
    _add_reproduce(commands)
    return parser


def _add_command(commands, name: str, summary: str, **kwargs) -> argparse.ArgumentParser:
    """A subcommand whose one-line summary is both its entry in the main --help and the description
    at the top of its own."""
    return commands.add_parser(name, help=summary, description=summary[0].upper() + summary[1:] + ".", **kwargs)


def _add_reproduce(commands) -> None:
    reproduce = _add_command(commands, "reproduce", "run a paper's table rows end to end (ir_datasets, BM25, "
                                                    "training per seed), published beside measured")
    reproduce.add_argument("paper", nargs="?", help="boytsov2022 or positional-bias")
    reproduce.add_argument("--table", type=int, help="one table of the paper (default: all)")
    reproduce.add_argument("--row", help="one row, e.g. maxp (default: every row of the table)")
    reproduce.add_argument("--plan", action="store_true", help="print the published values, downloads, disk and "
                           "rough GPU-hours, run nothing")
    reproduce.add_argument("--compare", nargs="+", metavar="RESULTS", help="results.json files or folders: published "
                           "against measured, the difference and whether the seeds' variation explains it (95%%)")
    reproduce.add_argument("--output", default="reproduce-output", help="one folder per row, with results.json/.md")
    reproduce.add_argument("--backbone", help="a local copy of the row's encoder, instead of its hub id")
    reproduce.add_argument("--warm-start", help="a trained passage cross-encoder to start from (skips the passage stage)")
    reproduce.add_argument("--dataset", nargs="*", default=[], metavar="PAPER_ID=ID",
                           help="read an ir_datasets id from another id (a local copy)")
    reproduce.add_argument("--run", nargs="*", default=[], metavar="COLUMN=FILE",
                           help="a TREC run instead of BM25 for a column (or the training collection's id)")
    reproduce.add_argument("--max-queries", type=int, help="cap every collection's queries: a smoke run, not comparable")
    reproduce.add_argument("--seeds", type=int, nargs="+", help="seeds (default: the row's)")
    reproduce.add_argument("--fold-validation", action="store_true",
                           help="Robust04: train on three folds and keep the best epoch on a fourth (the library's "
                                "split; default: the papers', the other four folds and no validation)")
    reproduce.add_argument("--passage-steps", type=int, help="run the library's passage stage first, this many steps "
                           "(not the papers' recipe)")
    _add_device_options(reproduce)


def _add_device_options(parser) -> None:
    parser.add_argument("--batch-size", type=int, default=BATCH_SIZE,
                        help=f"query-window pairs per forward pass (default {BATCH_SIZE}); lower it if memory runs out")
    parser.add_argument("--device", help="where the model runs, e.g. cpu, cuda, cuda:1 or mps (default: cuda, "
                                         "else mps, else cpu)")
    parser.add_argument("--dtype", choices=DTYPES, help="precision (default: bf16 or fp16 on CUDA, else fp32; "
                                                        "auto: also bf16 on CPUs that compute it natively)")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    read_documents.cache_clear()
    _lucene.cache_clear()
    with warnings.catch_warnings():
        warnings.showwarning = lambda message, *_, **__: print(f"warning: {message}", file=sys.stderr)
        try:
            return _run(args)
        except (CliError, MalformedInputError) as e:
            print(f"error: {e}", file=sys.stderr)
            return EXIT_BAD_INPUT
        except (ValueError, TypeError, KeyError, OSError) as e:  # the library's input checks
            print(f"error: {e.args[0] if isinstance(e, KeyError) and e.args else e}", file=sys.stderr)
            return EXIT_BAD_INPUT


def _run(args) -> int:
    if args.command == "demo":
        from .demo import run

        run(args.output, quick=args.quick, backbone=args.backbone, dtype=args.dtype, seed=args.seed)
        return 0
    if args.command == "models":
        from .models import registered_models
        from .listwise import RankGPT

        named = registered_models()
        width = max(map(len, named)) + 2
        for name, cls in named.items():
            print(f"{name:<{width}}{_summary(cls)}".rstrip())
        # listwise re-rankers have no weights to train or save, so train --model does not take them
        print("\nlistwise, in a pipeline only (pyterrier_longdoc.listwise):")
        print(f"{'RankGPT':<{width}}{_summary(RankGPT)}")
        return 0
    if args.command == "reproduce":
        return _reproduce(args)
    if args.top_k is not None and args.top_k < 1:
        raise CliError(f"--top-k must be at least 1, got {args.top_k}")
    if not (args.run or args.lucene_index or args.pisa_index):
        raise CliError("candidates come from --run, --lucene-index or --pisa-index; give one")
    if args.pisa_index and (args.run or args.lucene_index):
        raise CliError("--pisa-index retrieves the candidates itself; leave out --run and --lucene-index")
    if not (args.docs or args.lucene_index):
        raise CliError("the document text comes from --docs (or a --lucene-index's stored documents); give it")
    if args.lucene_index and not args.docs and args.text_field != "text":
        raise CliError("--text-field picks a field of --docs; a Lucene index gives its stored text only")

    if args.command == "train":
        return _train(args)
    return _rerank(args)


def _summary(cls) -> str:
    return plain_text(" ".join((cls.__doc__ or "").strip().split("\n\n")[0].split()))  # the first paragraph


def plain_text(text: str) -> str:
    """reStructuredText as a terminal shows it: ````k```` as ``k``, ``:class:`~a.B``` as ``B``,
    ``:func:`name <a.f>``` as ``name``."""
    def role(match) -> str:
        target = match.group(1)
        if "<" in target:
            return target.split("<", 1)[0].strip()
        return target[1:].rsplit(".", 1)[-1] if target.startswith("~") else target

    return re.sub(r"``(.+?)``", r"\1", re.sub(r":[\w:-]+:`([^`]+)`", role, text))


def _train(args) -> int:
    from .models import LongDocReranker, model_class

    if bool(args.valid_topics) != bool(args.valid_qrels):
        raise CliError("--valid-topics and --valid-qrels go together")
    if args.valid_run and not args.valid_topics:
        raise CliError("--valid-run needs --valid-topics and --valid-qrels")
    if args.valid_topics and args.run and not args.valid_run:
        raise CliError("--valid-topics with --run needs --valid-run (the validation candidates)")
    from .engine.chunking import Chunking
    from .training.arguments import fit_option_defaults

    cls: type[LongDocReranker] = model_class(args.model)
    chunking = {f.name: f.default for f in dataclasses.fields(Chunking)}
    settings = checked_settings(args.set, "--set", {**chunking, **cls.defaults})
    fit_defaults = {k: v for k, v in fit_option_defaults().items() if k not in _FIT_FLAGS and k != "callback"}
    fit_settings = checked_settings(args.fit, "--fit", fit_defaults, _FIT_FLAGS)
    check_model_source(args.backbone, "--backbone")
    topics, candidates = candidates_for(args, args.topics, args.run)
    qrels = read_qrels(args.qrels)
    fit_options = dict(epochs=args.epochs, checkpoint_dir=args.checkpoint_dir, **fit_settings)
    if args.top_k:
        fit_options["top_k"] = args.top_k
    _check_qrels(qrels, topics, args.qrels, args.topics)
    if args.valid_topics:
        valid_topics, valid_candidates = candidates_for(args, args.valid_topics, args.valid_run)
        valid_qrels = read_qrels(args.valid_qrels)
        _check_qrels(valid_qrels, valid_topics, args.valid_qrels, args.valid_topics)
        fit_options.update(valid_topics=valid_topics, valid_qrels=valid_qrels, valid_candidates=valid_candidates,
                           valid_metric=args.valid_metric)
    model = cls(args.backbone, batch_size=args.batch_size, device=args.device, dtype=args.dtype, verbose=True,
                **settings)
    history = model.fit(topics, qrels, candidates, **fit_options)
    import pandas as pd

    if args.valid_topics and isinstance(history, pd.DataFrame) and args.valid_metric in history.columns:
        for _, row in history.dropna(subset=[args.valid_metric]).iterrows():
            print(f"epoch {int(row['epoch']) + 1}: validation {args.valid_metric} {row[args.valid_metric]:.4f}")
    model.save_pretrained(args.output)
    print(f"saved {model!r} to {args.output}")
    return 0


def _check_qrels(qrels: pd.DataFrame, topics: pd.DataFrame, qrels_path: str, topics_path: str) -> None:
    if not (qrels["label"] > 0).any():
        raise CliError(f"{qrels_path}: no judgement has a label above 0, so nothing is relevant")
    if not qrels["qid"].isin(set(topics["qid"])).any():
        raise CliError(f"{qrels_path}: no qid is a topic of {topics_path} (qrels qids e.g. "
                       f"{sorted(qrels['qid'].unique())[:3]})")


def _rerank(args) -> int:
    from .models import LongDocReranker, model_class, registered_models

    check_run_name(args.name)
    cls: type[LongDocReranker]
    if args.backbone:
        cls, source = model_class(args.model), args.backbone
        check_model_source(source, "--backbone")
    else:
        cls, source = LongDocReranker, args.model
        if args.model in registered_models() and not Path(args.model).exists():
            raise CliError(f"--model {args.model}: no such directory; {args.model!r} is a model name, which "
                           f"starts from a trained cross-encoder: add --backbone DIR (a saved model is a directory)")
        check_model_source(source, "--model")
    _, candidates = candidates_for(args, args.topics, args.run)
    problem = run_id_problem(candidates)  # before the model loads: the run could not be written
    if problem:
        raise CliError(f"{args.run or args.lucene_index or args.pisa_index}: {problem}")
    # keywords as one dict: mypy reads a class held in a variable (type[...]) as taking none of its own (PEP 612)
    options = {"batch_size": args.batch_size, "device": args.device, "dtype": args.dtype, "verbose": True}
    model = cls.from_pretrained(source, **options, **parse_settings(args.set))
    write_run(model(candidates), args.output, args.name)
    print(f"wrote {args.output}")
    return 0


def _pairs(pairs: list[str], option: str) -> dict[str, str]:
    split = [pair.partition("=") for pair in pairs]
    bad = [pair for pair, (key, sep, value) in zip(pairs, split) if not (key and sep and value)]
    if bad:
        raise CliError(f"{option} takes NAME=VALUE, got {bad[0]!r}")
    return {key: value for key, _, value in split}


def _reproduce(args) -> int:
    from .reproduce import Sources, compare, find_rows, load_results, plan, run_row, with_recipe

    if args.compare:
        print(compare(load_results(args.compare)))
        return 0
    if args.paper is None:
        raise CliError("reproduce needs a PAPER (boytsov2022 or positional-bias), or --compare RESULTS")
    rows = find_rows(args.paper, args.table, args.row)
    if args.max_queries is not None and args.max_queries < 1:
        raise CliError(f"--max-queries must be at least 1, got {args.max_queries}")
    runs = _pairs(args.run, "--run")
    for name, path in runs.items():
        if not Path(path).is_file():
            raise CliError(f"--run {name}={path}: no such file")
    if args.plan:
        print("\n\n".join(plan(row) for row in rows))
        return 0
    options = {k: v for k, v in dict(device=args.device, dtype=args.dtype, batch_size=args.batch_size).items() if v}
    for row in rows:
        if args.seeds:
            row = with_recipe(row, seeds=tuple(args.seeds))
        if args.fold_validation:
            row = with_recipe(row, fold_validation=True)
        if args.passage_steps and row.recipe.warm_start == "none":
            row = with_recipe(row, warm_start="passage stage", passage_steps=args.passage_steps)
        folder = Path(args.output) / f"{row.paper.key}-table{row.table}-{row.name}"
        sources = Sources(folder, _pairs(args.dataset, "--dataset"), runs, args.max_queries)
        run_row(row, folder, sources, backbone=args.backbone, warm_start=args.warm_start,
                passage_steps=args.passage_steps, model_options=options)
        print(f"wrote {folder / 'results.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

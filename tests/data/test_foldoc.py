"""The FOLDOC loader on small dictd files written here (Debian's dict-foldoc is not needed)."""

import pytest
from helpers.dictionaries import random_dictionary, write_dictd

from pyterrier_longdoc.data.foldoc import foldoc_entries, foldoc_task

ENTRIES = [
    ("compiler", "   <language> A program that translates source code written in a {high-level language}\n"
                 "   into {machine code}; a compiler usually runs before the program (see\n"
                 "   {http://example.org/cc}). Compilers check types, allocate registers and emit\n"
                 "   object files that a linker joins into one executable for the machine.\n\n"
                 "   [Aho et al, 1986].\n\n   (1995-01-01)"),
    ("Compilers", "   <language> The plural entry, which must not stay as a non-relevant passage since it\n"
                  "   defines the very same thing as the queried term does in other words here."),
    ("linker", "   <programming> A tool that joins {object files} produced by a compiler into an executable\n"
               "   program or a library, resolving the symbols each file refers to, placing code and data\n"
               "   at their final addresses and writing the result out to disk for the loader."),
    ("beta reduction", "   <theory> The rule of the lambda calculus that replaces a function applied to an\n"
                       "   argument with the body of the function in which the argument is substituted."),
    ("x", "   A name too short to be queried, with a long enough definition of twenty words or more for\n"
          "   every other rule of the task to accept it here."),
]


def test_entries_are_cleaned_first_paragraphs(tmp_path):
    entries = foldoc_entries(write_dictd(tmp_path, ENTRIES)).set_index("headword")["text"]
    assert "00-database-short" not in entries.index
    compiler = entries["compiler"]
    assert compiler.startswith("A program that translates source code written in a high-level language")
    assert "<language>" not in compiler and "{" not in compiler and "http" not in compiler
    assert "Aho" not in compiler and "1995" not in compiler  # references and dates are later paragraphs


def test_plain_dict_files_load_too(tmp_path):
    entries = foldoc_entries(write_dictd(tmp_path, ENTRIES, compress=False))
    assert "linker" in set(entries["headword"])


def test_task_hides_the_term_and_drops_its_variants(tmp_path):
    task = foldoc_task(write_dictd(tmp_path, ENTRIES), vocabulary={"compiler", "linker"}, min_words=10)
    queries = task.queries.set_index("term")
    assert set(queries.index) == {"compiler", "linker", "beta reduction"}
    assert queries.loc["compiler", "query"] == "what is compiler"
    assert bool(queries.loc["compiler", "known"]) and not bool(queries.loc["beta reduction", "known"])
    text = dict(zip(task.passages["docno"], task.passages["text"]))
    relevant = task.qrels.merge(task.queries, on="qid").set_index("term")["docno"]
    hidden = text[relevant["compiler"]]
    assert "compiler" not in hidden.lower() and "this usually runs" in hidden  # "Compilers check" too
    # the linker's definition mentions "compiler": a passage that names the term but is not relevant
    assert "compiler" in text[relevant["linker"]]
    assert not any("very same thing" in t for t in text.values())  # "Compilers" defines a queried term
    assert task.qrels["label"].eq(1).all() and len(task.qrels) == len(task.queries)


def test_entries_as_printed_keep_the_term_and_the_same_queries(tmp_path):
    path = write_dictd(tmp_path, ENTRIES)
    hidden = foldoc_task(path, vocabulary={"compiler", "linker"}, min_words=10)
    printed = foldoc_task(path, vocabulary={"compiler", "linker"}, min_words=10, hide_term=False)
    assert printed.queries.equals(hidden.queries) and printed.qrels.equals(hidden.qrels)
    assert printed.passages["docno"].tolist() == hidden.passages["docno"].tolist()
    text = dict(zip(printed.passages["docno"], printed.passages["text"]))
    relevant = printed.qrels.merge(printed.queries, on="qid").set_index("term")["docno"]
    assert text[relevant["compiler"]].startswith("compiler: ") and "Compilers check" in text[relevant["compiler"]]
    assert all(": " in t for t in text.values())  # every entry headword first, not only the queried ones


def test_known_only_and_max_queries(tmp_path):
    path = write_dictd(tmp_path, ENTRIES)
    known = foldoc_task(path, vocabulary={"compiler", "linker"}, known_only=True, min_words=10)
    assert set(known.queries["term"]) == {"compiler", "linker"}
    one = foldoc_task(path, vocabulary={"compiler", "linker"}, min_words=10, max_queries=1, seed=3)
    assert len(one.queries) == 1 and len(one.qrels) == 1
    assert one.subset(one.queries["qid"]).queries.equals(one.queries)


def test_missing_files_and_bad_index_lines_are_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="apt-get install dict-foldoc"):
        foldoc_entries(tmp_path / "foldoc.dict.dz")
    path = write_dictd(tmp_path, ENTRIES)
    (tmp_path / "foldoc.index").write_text("compiler\tA\tB\nbroken line\n")
    with pytest.raises(ValueError, match="line 2"):
        foldoc_entries(path)


def test_random_dictionary_gives_a_task(tmp_path):
    syllables = "ka lo mi ne ru sa ti vo".split()
    words = [a + b + c for a in syllables for b in syllables for c in syllables][:100]
    task = foldoc_task(random_dictionary(tmp_path, words), vocabulary=set(words), known_only=True)
    assert len(task.queries) > 20 and len(task.passages) > 300

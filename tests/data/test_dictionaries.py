"""The Devil's Dictionary and Jargon File parsers on small made-up dictd files written as Debian's
dict-devil and dict-jargon print their entries (the packages are not needed)."""

import pytest
from helpers.dictionaries import write_dictd

from pyterrier_longdoc.data.dictionaries import DICTIONARIES, dictd_path, dictionary_entries, dictionary_task

FILLER = " ".join(["Words of a definition long enough for a query, about lanterns and keys."] * 3)
DEVIL = [
    ("abasement", f"ABASEMENT, n.  A decent and customary mental attitude in the presence\nof wealth. {FILLER}"),
    ("abridge", "ABRIDGE, v.t.  To shorten.\n\n    When in the course of _human_ events\n    it becomes needful\n"
                "                                                  G.J."),
    ("babe", "BABE or BABY, n.  A misshapen creature of no particular age."),
    ("tsetse fly", "TZETZE (or TSETSE) FLY, n.  An African insect whose bite is regarded\nas incurable."),
    ("impostor", "IMPOSTOR n.  A rival aspirant to public honors."),
    ("cui bono", "CUI BONO?  [Latin]  What good would that do _me_?"),
    ("abracadabra", "ABRACADABRA.\n\n    By _Abracadabra_ we signify\n        An infinite number of things."),
    ("i", "I is the first letter of the alphabet, the first word of the language."),
]
JARGON = [
    ("/me", "/me\n //\n\n    [IRC; common] Under most IRC, /me is the pose command; others watching the\n"
            "    channel will see it.\n\n"),
    ("control-c", "control-C\n vi.\n\n    1. Stop whatever you are doing. Considered silly.\n\n"
                  "    2. interj. Among BSD hackers, the response to {Give me a break!}\n\n"),
    ("lantern", f"lantern\n /lan'tern/, n.\n\n    [Unix] A {{light}} that a hacker carries. {FILLER}\n\n"),
]


def devil(tmp_path):
    return write_dictd(tmp_path, DEVIL, name="devil", headword_line=False)


def test_devil_entries_lose_their_printed_headword_and_part_of_speech(tmp_path):
    entries = dictionary_entries("devil", devil(tmp_path)).set_index("headword")["text"]
    assert "00-database-short" not in entries.index
    assert entries["abasement"].startswith("A decent and customary mental attitude")
    assert entries["babe"] == "A misshapen creature of no particular age."
    assert entries["tsetse fly"] == "An African insect whose bite is regarded as incurable."
    assert entries["impostor"] == "A rival aspirant to public honors."
    assert entries["cui bono"] == "What good would that do me?"  # italics' underscores go
    # a verse and its author's initials are the entry's prose; a letter's entry starts with its letter
    assert entries["abridge"] == "To shorten. When in the course of human events it becomes needful G.J."
    assert entries["abracadabra"] == "By Abracadabra we signify An infinite number of things."
    assert entries["i"].startswith("I is the first letter")


def test_jargon_entries_keep_definitions_that_open_with_a_usage_label(tmp_path):
    path = write_dictd(tmp_path, JARGON, name="jargon", headword_line=False)
    entries = dictionary_entries("jargon", path).set_index("headword")["text"]
    # the label goes, the definition after it stays (it was dropped with its paragraph)
    assert entries["/me"] == "Under most IRC, /me is the pose command; others watching the channel will see it."
    assert entries["control-c"] == ("1. Stop whatever you are doing. Considered silly. 2. interj. Among BSD hackers, "
                                    "the response to Give me a break!")
    assert entries["lantern"].startswith("A light that a hacker carries.")


def test_devil_gives_a_task_of_its_prose(tmp_path):
    task = dictionary_task("devil", devil(tmp_path), vocabulary={"abasement"}, hide_term=False)
    assert list(task.queries["query"]) == ["what is abasement"]
    relevant = task.passages.set_index("docno").loc[task.qrels["docno"].iloc[0], "text"]
    assert relevant.startswith("abasement: A decent and customary mental attitude")


def test_devil_is_a_known_dictionary_with_debians_path(tmp_path):
    assert "devil" in DICTIONARIES and dictd_path("devil") == "/usr/share/dictd/devil.dict.dz"
    with pytest.raises(FileNotFoundError, match="apt-get install dict-devil"):
        dictionary_entries("devil", tmp_path / "devil.dict.dz")

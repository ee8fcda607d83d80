"""Rebuilds the real prose that ships with the package, ``pyterrier_longdoc/data/wordnet/wordnet.tsv.gz``.

    apt-get install dict-wn        # Debian's WordNet 3.0 in dictd format (/usr/share/dictd/wn.dict.dz)
    python scripts/build_shipped_prose.py [--path /usr/share/dictd/wn.dict.dz]

The file holds ``headword<TAB>gloss`` lines of WordNet 3.0 (Princeton University; its license, which
allows redistribution with its notice, is ``LICENSE-WordNet.txt`` beside the file): every entry whose
headword can be a query of ``pyterrier_longdoc.data.prose`` (a single word that is a whole token of the
packaged MiniLM's BERT uncased vocabulary, with a gloss of at least 20 words; up to ``QUERY_ENTRIES``,
drawn with seed 0) and ``FILLER_ENTRIES`` other entries of at least 15 words (drawn with seed 0), the
passages the FarRelevant documents are filled with. Glosses are cleaned of markup and cut to their first
120 words by ``pyterrier_longdoc.data.dictionaries``, as the dictionary tasks read them. The same
input gives the same bytes (no timestamp in the gzip header).
"""
from __future__ import annotations

import argparse
import gzip
import io
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

QUERY_ENTRIES = 1500
FILLER_ENTRIES = 10000
FILLER_WORDS = 15
TARGET = ROOT / "pyterrier_longdoc" / "data" / "wordnet" / "wordnet.tsv.gz"


def main(argv=None) -> None:
    from pyterrier_longdoc.data.dictionaries import _cut, dictd_path, dictionary_entries, dictionary_task
    from pyterrier_longdoc.packaged import packaged_minilm

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--path", default=dictd_path("wn"), help="WordNet's .dict.dz file (dictd format)")
    parser.add_argument("--output", default=str(TARGET))
    args = parser.parse_args(argv)

    entries = dictionary_entries("wn", args.path)
    entries["text"] = entries["text"].map(lambda t: _cut(t, 120))
    task = dictionary_task("wn", args.path, vocabulary=packaged_minilm(), known_only=True, hide_term=False,
                           max_queries=QUERY_ENTRIES, seed=0)
    queried = entries.iloc[[int(docno[1:]) for docno in task.qrels["docno"]]]
    others = entries.drop(queried.index)
    others = others[others["text"].str.split().str.len() >= FILLER_WORDS]
    fillers = others.sample(n=FILLER_ENTRIES, random_state=0)
    shipped = entries.loc[sorted([*queried.index, *fillers.index])]
    lines = "".join(f"{_one_line(h)}\t{_one_line(t)}\n" for h, t in zip(shipped["headword"], shipped["text"]))
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0, compresslevel=9) as out:
        out.write(lines.encode("utf8"))
    Path(args.output).write_bytes(buffer.getvalue())
    print(f"{args.output}: {len(shipped)} entries ({len(queried)} queryable, {len(fillers)} fillers), "
          f"{len(buffer.getvalue()) / 1e6:.2f} MB")


def _one_line(text: str) -> str:
    return " ".join(text.replace("\t", " ").split())


if __name__ == "__main__":
    main()

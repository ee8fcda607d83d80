"""dictd dictionaries written here (FOLDOC stand-ins): Debian's dict-foldoc is not needed."""
import gzip
import random


_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def b64(value: int) -> str:
    digits = ""
    while True:
        digits = _ALPHABET[value % 64] + digits
        value //= 64
        if not value:
            return digits


def write_dictd(path, entries, compress=True, name="foldoc", headword_line=True):
    """A dictd pair: ``NAME.dict(.dz)`` with the entries and ``NAME.index`` pointing into it; each entry
    is its headword's line and its body, or (``headword_line=False``, as The Devil's Dictionary prints
    them) its body alone."""
    data, index = b"", []
    for headword, body in [("00-database-short", "\n     A test dictionary\n"), *entries]:
        chunk = (f"{headword}\n\n{body}\n\n" if headword_line or headword.startswith("00") else f"{body}\n\n").encode()
        index.append(f"{headword}\t{b64(len(data))}\t{b64(len(chunk))}")
        data += chunk
    dict_path = path / (f"{name}.dict.dz" if compress else f"{name}.dict")
    dict_path.write_bytes(gzip.compress(data) if compress else data)
    (path / f"{name}.index").write_text("\n".join(index) + "\n")
    return dict_path


def random_dictionary(path, words, n_entries=400, seed=0, name="foldoc"):
    """Entries named by ``words`` and filler entries, with definitions made of ``words``: a
    FOLDOC stand-in large enough to build FarRelevant documents from (``name="devil"``: printed
    as The Devil's Dictionary prints them, "HEADWORD, n.  definition"; the Jargon File reads
    FOLDOC's form)."""
    rng = random.Random(seed)
    entries = []
    for i in range(n_entries):
        headword = words[i] if i < len(words) // 2 else f"entry{i} name"
        body = " ".join(rng.choice(words) for _ in range(rng.randint(25, 45)))
        entries.append((headword, f"{headword.upper()}, n.  {body}." if name == "devil" else "   " + body + "."))
    return write_dictd(path, entries, name=name, headword_line=name != "devil")

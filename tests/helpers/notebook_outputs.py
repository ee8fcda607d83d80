"""Compares a notebook's saved outputs with a fresh run's: the same text, cell for cell, stream for
stream, with what legitimately differs between two runs left out.

Left out: progress bars (lines of tqdm's ``|...| n/m [..it/s]``, each line read as a terminal shows
it, after its last carriage return: a model's bar shows in a fresh run once a call has run a few
seconds, so a saved output without it still compares equal); the random part of temporary
folders' names (``tempfile.mkdtemp``: ``longdoc-training-cf_mwzbu``); the numbers of a cell that
measures time (its source calls ``perf_counter`` or names ``seconds`` or ``timings``: its text is
compared, its numbers are not); the numbers of a cell tagged ``varies-by-cpu`` (what a trained model
scores: another CPU's kernels round floats otherwise, and training carries the difference on, e.g. a
validation RR of 0.896 on one CPU and 0.927 on another; its text is compared, with runs of spaces
collapsed, since a table's columns widen with its numbers; the notebook asserts the conclusions that
hold on any CPU); figures (their text, ``<Figure size ...>``, is compared) and HTML
(the same tables as the plain text compared).

Every other number is compared within ``ABSOLUTE + RELATIVE * max(|saved|, |fresh|)``: 0.005 and 1%,
float noise (another CPU's kernels, a last digit rounded the other way), not a changed result (a
count, a verdict, an RR moved by one query of fifty: 0.01 or more)."""
from __future__ import annotations

import re

ABSOLUTE = 0.005
RELATIVE = 0.01

_PROGRESS_BAR = re.compile(r"\|.*\| *\d+/\d+ *\[|\d+(\.\d+)?(it/s|s/it)\]")
_TEMPORARY = re.compile(r"\b(longdoc-[a-z-]*?-|tmp)[a-z0-9_]{8}\b")
_MEASURES_TIME = re.compile(r"perf_counter|seconds|timings")
VARIES_BY_CPU = "varies-by-cpu"  # a cell's tag: its numbers come from training, which another CPU's rounding moves
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?!\w|\.\d)")


def comparable(cell) -> dict[str, tuple[str, list[float]]]:
    """A code cell's outputs by kind (``stdout``, ``stderr``, ``result``: displayed values' plain
    text): the text with its numbers replaced by ``#``, and the numbers (none for a cell that
    measures time or is tagged ``varies-by-cpu``)."""
    texts: dict[str, list[str]] = {}
    for output in cell.outputs:
        if output["output_type"] == "stream":
            texts.setdefault(output["name"], []).append(output["text"])
        elif output["output_type"] in ("execute_result", "display_data"):
            texts.setdefault("result", []).append(output.get("data", {}).get("text/plain", ""))
        elif output["output_type"] == "error":
            texts.setdefault("error", []).append(f"{output['ename']}: {output['evalue']}")
    times = bool(_MEASURES_TIME.search(cell.source))
    trained = VARIES_BY_CPU in (getattr(cell, "metadata", None) or {}).get("tags", [])
    compared = {}
    for kind, parts in texts.items():
        # each line as a terminal shows it: what follows its last carriage return (a bar redrawn in
        # place), so that a bar between two lines of text leaves no line behind
        shown = (line.rstrip("\r").rsplit("\r", 1)[-1] for line in "".join(parts).split("\n"))
        lines = [_TEMPORARY.sub(r"\1<random>", line) for line in shown if not _PROGRESS_BAR.search(line)]
        if trained:
            lines = [re.sub(r"\s+", " ", line) for line in lines]
        text = "\n".join(line.rstrip() for line in lines).strip()
        numbers = [] if times or trained else [float(n) for n in _NUMBER.findall(text)]
        compared[kind] = (_NUMBER.sub("#", text), numbers)
    return compared


def differences(saved_cells, fresh_cells) -> list[str]:
    """Where a fresh run's outputs differ from the saved ones (code cells, in order): one line per
    cell and kind of output, naming the cell by its first line; empty when they agree."""
    if len(saved_cells) != len(fresh_cells):
        return [f"{len(saved_cells)} code cells saved, {len(fresh_cells)} run"]
    found = []
    for number, (saved, fresh) in enumerate(zip(saved_cells, fresh_cells), start=1):
        where = f"code cell {number} ({saved.source.splitlines()[0][:60] if saved.source else ''!r})"
        before, after = comparable(saved), comparable(fresh)
        for kind in sorted(set(before) | set(after)):
            (text_before, numbers_before), (text_after, numbers_after) = before.get(kind, ("", [])), after.get(kind, ("", []))
            if text_before != text_after:
                found.append(f"{where}, {kind}: the text differs:\n--- saved\n{text_before[:1500]}\n--- this run\n"
                             f"{text_after[:1500]}")
                continue
            off = [(a, b) for a, b in zip(numbers_before, numbers_after)
                   if abs(a - b) > ABSOLUTE + RELATIVE * max(abs(a), abs(b))]
            if off:
                found.append(f"{where}, {kind}: {len(off)} numbers beyond the tolerance (saved, this run): {off[:8]}")
    return found

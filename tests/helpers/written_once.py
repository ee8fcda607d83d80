"""``written_once``: a tiny backbone is built once per test session and copied where it is asked for.

A test asking for ``write_tiny_bert(tmp_path / "x")`` still gets a folder of its own at that path, the
same files, and torch's random state as the write leaves it (a model built next gets the same random
head): only the building (tokenizer training, model init, save) is not repeated for the same arguments.
"""
from __future__ import annotations

import atexit
import functools
import os
import shutil
import tempfile
from pathlib import Path

_root: list[Path] = []
_written: dict = {}


def _cache_root() -> Path:
    if not _root:
        _root.append(Path(tempfile.mkdtemp(prefix="longdoc-tiny-backbones-")))
        atexit.register(_remove, _root[0], os.getpid())
    return _root[0]


def _remove(root: Path, owner: int) -> None:
    if os.getpid() == owner:  # a process forked from the session's leaves the session's copies in place
        shutil.rmtree(root, ignore_errors=True)


def written_once(write):
    """Decorate ``write(path, *args, **kwargs)``, which builds a folder at ``path`` and returns it
    (or a folder inside it) as a str or a Path, seeding torch itself."""

    @functools.wraps(write)
    def copied(path, *args, **kwargs):
        import torch

        path = Path(path)
        key = (write.__qualname__, args, tuple(sorted(kwargs.items())))
        if key not in _written:
            source = Path(tempfile.mkdtemp(dir=_cache_root())) / path.name  # the same folder name as asked
            result = write(source, *args, **kwargs)
            _written[key] = (source, Path(result).relative_to(source), type(result), torch.get_rng_state())
        source, inner, result_type, random_state = _written[key]
        shutil.copytree(source, path, dirs_exist_ok=True)
        for saved in path.rglob("*.json"):  # a file that names its own folder names the one asked for
            text = saved.read_text()
            if str(source) in text:
                saved.write_text(text.replace(str(source), str(path)))
        torch.set_rng_state(random_state)
        return result_type(path / inner)

    return copied

"""Checks of the files the library reads (models, documents, topics), and the error naming a bad one."""
from __future__ import annotations

import contextlib
import ctypes
import errno
import hashlib
import json
import os
import shutil
import struct
import sys
import tempfile
from pathlib import Path


class MalformedInputError(ValueError):
    """A file the library cannot read; the message starts with ``FILE:LINE:`` (or ``FILE:``)."""

    def __init__(self, path, line: int | None, problem: str):
        self.path, self.line, self.problem = str(path), line, problem
        super().__init__(f"{path}:{line}: {problem}" if line is not None else f"{path}: {problem}")


def check_safetensors(directory: Path) -> None:
    """A clear error naming the file when a ``*.safetensors`` file of ``directory`` is truncated
    or its header is damaged; reads only the header (the size the header promises is compared
    with the file's size)."""
    if not directory.is_dir():
        return
    for file in sorted(directory.glob("*.safetensors")):
        problem = _safetensors_problem(file)
        if problem:
            raise ValueError(f"{file} is corrupt or truncated and cannot be loaded: {problem}")


def _safetensors_problem(file: Path) -> str | None:
    size = file.stat().st_size
    with open(file, "rb") as stream:
        head = stream.read(8)
        if len(head) < 8:
            return f"{size} bytes, shorter than a safetensors header"
        (header_size,) = struct.unpack("<Q", head)
        if header_size > size - 8:
            return f"its header claims {header_size} bytes but the file has {size}"
        try:
            header = json.loads(stream.read(header_size))
            end = max((int(t["data_offsets"][1]) for k, t in header.items() if k != "__metadata__"), default=0)
        except (ValueError, TypeError, KeyError, IndexError) as error:
            return f"unreadable header ({type(error).__name__}: {error})"
    if 8 + header_size + end != size:
        return f"the tensors need {8 + header_size + end} bytes but the file has {size}"
    return None


def damaged_json(directory: Path, names: tuple[str, ...]) -> MalformedInputError | None:
    """The error naming the first file of ``names`` in ``directory`` that is not valid JSON (a file
    cut short by a full disk or a broken copy), or None: called after a load failed, to say which."""
    for name in names:
        file = Path(directory) / name
        if not file.is_file():
            continue
        try:
            json.loads(file.read_bytes())
        except json.JSONDecodeError as error:
            return MalformedInputError(file, error.lineno, f"not valid JSON ({error.msg}, column {error.colno}); the "
                                       "file may have been cut short: save or download it again")
        except UnicodeDecodeError as error:
            return MalformedInputError(file, None, f"not UTF-8 text ({error})")
    return None


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


SAVING_PREFIX = ".saving-"


@contextlib.contextmanager
def replaced_folder(path: Path):
    """Yields a new, empty folder beside ``path`` to write a saved model into; when the block
    finishes, that folder becomes ``path`` in one step, so that a kill at any moment leaves the old
    folder or the complete new one at ``path``, never a mix of the two. Entries of the old folder
    the new one does not have (a recipe's ``passage-stage``, files of the user's) are moved into the
    new folder, as writing in place would have kept them. If the block fails, ``path`` is untouched."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and not path.is_dir():
        raise NotADirectoryError(f"{path} is a file: a model is saved as a folder; choose another path")
    new = Path(tempfile.mkdtemp(prefix=f"{SAVING_PREFIX}{path.name}-", dir=path.parent))
    try:
        yield new
        if not path.exists():
            os.replace(new, path)
            return
        _exchange(new, path)  # `new` now holds the old folder
        for entry in sorted(new.iterdir()):
            if not os.path.lexists(path / entry.name):
                os.replace(entry, path / entry.name)
    except BaseException:
        shutil.rmtree(new, ignore_errors=True)
        raise
    shutil.rmtree(new, ignore_errors=True)


def _exchange(a: Path, b: Path) -> None:
    """Swaps two folders atomically (Linux's renameat2 with RENAME_EXCHANGE); where that is missing
    (another system, or a file system without it), two renames, the old folder kept until the second
    one is done: only a kill between them leaves ``b`` missing, with both versions beside it."""
    if _renameat2 is not None:
        if _renameat2(-100, os.fsencode(a), -100, os.fsencode(b), 2) == 0:  # AT_FDCWD, RENAME_EXCHANGE
            return
        if ctypes.get_errno() not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
            raise OSError(ctypes.get_errno(), f"cannot replace {b} by {a}: {os.strerror(ctypes.get_errno())}")
    parked = Path(tempfile.mkdtemp(prefix=f"{SAVING_PREFIX}{b.name}-old-", dir=b.parent))
    os.rmdir(parked)
    os.replace(b, parked)
    os.replace(a, b)
    os.replace(parked, a)


def _libc_renameat2():
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    return function


_renameat2 = _libc_renameat2()

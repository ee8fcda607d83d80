"""Checks of the files the library reads (models, documents, topics), and the error naming a bad one."""
from __future__ import annotations

import contextlib
import ctypes
import errno
import hashlib
import json
import os
import re
import secrets
import shutil
import stat
import struct
import sys
import tempfile
from pathlib import Path

from .._warn import warn

if sys.platform == "win32":  # no folder locks, so a killed save's folder is not told from a live one's, and kept
    fcntl = None
else:
    import fcntl


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
    the new one does not have (a recipe's ``passage-stage``, files of the user's) are hard-linked
    into the new folder before that step, so they are at ``path`` whenever a kill comes. If the
    block fails, ``path`` is untouched; a full disk is an OSError naming ``path``.

    A symbolic link (``current -> v1``) is followed: the model is saved into ``v1``, the link kept.
    The new folder has the old one's permissions (the umask's for a new path). Folders left beside
    ``path`` by killed saves are cleared first (see :func:`_clear_killed_saves`)."""
    path = Path(path)
    if path.is_symlink():
        path = path.resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and not path.is_dir():
        raise NotADirectoryError(f"{path} is a file: a model is saved as a folder; choose another path")
    _clear_killed_saves(path)
    new, lock = _locked_new_folder(path.parent, f"{SAVING_PREFIX}{path.name}-",
                                   stat.S_IMODE(path.stat().st_mode) if path.exists() else None)
    try:
        with os_errors_naming(path, "not saved: the folder is as it was"):
            try:
                yield new
                _link_other_entries(path, new)
                if path.exists():
                    _exchange(new, path)  # `new` now holds the old folder
                else:
                    _create(new, path)
            except BaseException:
                shutil.rmtree(new, ignore_errors=True)
                raise
        shutil.rmtree(new, ignore_errors=True)
    finally:
        if lock is not None:
            os.close(lock)  # a killed process releases it too: its folder is then a killed save's


@contextlib.contextmanager
def os_errors_naming(path: Path, outcome: str, inner: Path | None = None):
    """An OS error of a write in the block that names no file (Python's for a full disk on a
    write, or safetensors' and tokenizers' "No space left on device (os error 28)", which is not
    even an OSError), or names ``inner`` (a temporary folder of the write), raised as an OSError of
    that errno naming ``path``, with ``outcome`` (what became of it)."""
    try:
        yield
    except Exception as error:
        code = error.errno if isinstance(error, OSError) else _rust_os_error(error)
        named = getattr(error, "filename", None)
        if code is None or (named is not None and named != str(inner)):
            raise
        raise OSError(code, f"{os.strerror(code)} ({outcome})", str(path)) from error


def _rust_os_error(error: Exception) -> int | None:
    found = re.search(r"\(os error (\d+)\)", str(error))
    return int(found.group(1)) if found else None


def new_folder(parent: Path, prefix: str) -> Path:
    """A new folder ``prefix`` + 8 random hex digits in ``parent``, with the umask's permissions
    (``tempfile.mkdtemp``'s are 0700: a model saved through it could not be read by other users)."""
    while True:
        folder = parent / f"{prefix}{secrets.token_hex(4)}"
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder)
            return folder


def _locked_new_folder(parent: Path, prefix: str, mode: int | None) -> tuple[Path, int | None]:
    """:func:`new_folder` (with ``mode``, or the umask's) and a descriptor of it holding its lock
    (``flock``, released when the process ends, however it ends), which tells other saves that it
    is not a killed save's."""
    while True:
        folder = new_folder(parent, prefix)
        lock = None
        if fcntl is not None:
            with contextlib.suppress(FileNotFoundError):  # cleared as a killed save's before it was opened
                lock = os.open(folder, os.O_RDONLY)
                fcntl.flock(lock, fcntl.LOCK_EX)
            if lock is None or os.fstat(lock).st_nlink == 0:  # ... or before it was locked
                if lock is not None:
                    os.close(lock)
                continue
        if mode is not None:
            os.chmod(folder, mode)
        return folder, lock


def _clear_killed_saves(path: Path) -> None:
    """Clears the folders that killed saves of ``path`` left beside it (see :func:`_clear_killed_save`);
    a folder a live process holds is a save in progress, and left alone."""
    if fcntl is None or not path.parent.is_dir():
        return
    name = re.compile(re.escape(f"{SAVING_PREFIX}{path.name}-") + r"(old-)?[a-z0-9_]{8}")
    for folder in sorted(path.parent.iterdir()):
        found = name.fullmatch(folder.name)
        if found is None or folder.is_symlink() or not folder.is_dir():
            continue
        try:
            lock = os.open(folder, os.O_RDONLY)
        except FileNotFoundError:  # cleared by another save
            continue
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            _clear_killed_save(folder, path, parked=found.group(1) is not None)
        except BlockingIOError:
            pass
        finally:
            os.close(lock)


def _clear_killed_save(folder: Path, path: Path, parked: bool) -> None:
    """The old folder parked while ``path`` was missing (a kill between :func:`_exchange`'s two
    renames) is put back; another folder is removed, unless it holds entries ``path`` lacks (left
    by a version that moved the old folder's other entries only after the swap): it is then kept,
    and named."""
    if parked and not path.exists():
        os.replace(folder, path)
        warn(f"{path} was missing after a save was killed while replacing it; its previous folder, parked as "
             f"{folder.name}, is back")
        return
    only_there = sorted(e.name for e in folder.iterdir() if not os.path.lexists(path / e.name)) if path.exists() else []
    if only_there:
        warn(f"{folder} was left by a save of {path} that was killed; it holds {', '.join(only_there)}, which {path} "
             f"lacks: move what you need into {path}, then delete it")
    else:
        shutil.rmtree(folder, ignore_errors=True)


def _link_other_entries(old: Path, new: Path) -> None:
    """The entries of ``old`` that ``new`` lacks, hard-linked (copied where the file system has no
    hard links) into ``new``: they then survive the swap, and the removal of the old folder after it."""
    if not old.is_dir():
        return
    for entry in sorted(old.iterdir()):
        target = new / entry.name
        if os.path.lexists(target):
            continue
        if entry.is_symlink():
            os.symlink(os.readlink(entry), target)
        elif entry.is_dir():
            shutil.copytree(entry, target, symlinks=True, copy_function=_link_or_copy)
        else:
            _link_or_copy(entry, target)


def _link_or_copy(source, target) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def _create(new: Path, path: Path) -> None:
    """``new`` becomes ``path``, which did not exist when the save began."""
    try:
        os.replace(new, path)
    except OSError as error:
        if error.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise
        raise FileExistsError(errno.EEXIST, f"another save created {path} while this one was writing it, and finished "
                              "first: this save was not kept (save again to replace that one)", str(path)) from error


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

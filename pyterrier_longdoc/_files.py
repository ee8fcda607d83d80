"""Checks of the files the library reads (models, documents, topics), and the error naming a bad one."""
from __future__ import annotations

import hashlib
import json
import struct
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


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()

"""Result arrays on disk: the one place that names a block's files and writes .npy, .npz and CSV.

The worker's result files, ``gradviz check --save``, ``Report.save`` and the window's exports all
write through here, so a block's key (``o{output}_i{input}``), the no-pickle rule and the way a
file is replaced are decided once:

- ``exclusive=True`` creates the file or fails (``FileExistsError``), so a file another program
  made meanwhile is never replaced;
- otherwise the new bytes replace the file all at once (``atomic_writer``): a full disk leaves the
  old file whole, never half an array. Not fsynced: these are results one can compute again.

NumPy and the standard library only (no torch, no Qt); arrays load back with
``np.load(path, allow_pickle=False)``.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Protocol

import numpy as np

from gradviz.schema.atomic_write import atomic_writer

__all__ = ["ARRAYS", "block_key", "npz_bytes", "write_csv", "write_file", "write_npy", "write_npz"]

ARRAYS = ("analytic", "numerical", "error", "failing")  # what every block has, named as BlockComparison's fields


class _Block(Protocol):
    output: int
    input: int


def block_key(block: _Block) -> str:
    """``o0_i1``: output 0, input 1; the part of every file name that says which block."""
    return f"o{block.output}_i{block.input}"


def write_npy(path: str | Path, array: np.ndarray, *, exclusive: bool = False) -> Path:
    """One array as ``.npy`` (no pickles); the path written."""
    return _write(Path(path), lambda f: np.save(f, array, allow_pickle=False), exclusive)


def npz_bytes(arrays: Mapping[str, np.ndarray]) -> bytes:
    """Named arrays as the bytes of a compressed ``.npz`` (for a caller that writes them with
    other files)."""
    buffer = io.BytesIO()
    named: dict[str, Any] = dict(arrays)  # (no allow_pickle=: numpy < 2.1 would store it as an array)
    np.savez_compressed(buffer, **named)
    return buffer.getvalue()


def write_npz(path: str | Path, arrays: Mapping[str, np.ndarray], *, exclusive: bool = False) -> Path:
    """Named arrays in one compressed ``.npz``; the path written."""
    return write_file(path, npz_bytes(arrays), exclusive=exclusive)


def write_csv(
    path: str | Path, table: np.ndarray, *, fmt: Sequence[str], header: str, exclusive: bool = False
) -> Path:
    """A 2-D table as comma-separated UTF-8 text under a ``header`` line; ``fmt``: one format per column."""
    text = io.StringIO()
    np.savetxt(text, table, delimiter=",", fmt=list(fmt), header=header, comments="")
    return write_file(path, text.getvalue().encode("utf-8"), exclusive=exclusive)


def write_file(path: str | Path, data: bytes, *, exclusive: bool = False) -> Path:
    """Bytes already made (a report's JSON, a figure) written the same way as the arrays."""
    return _write(Path(path), lambda f: f.write(data), exclusive)


def _write(path: Path, fill: Callable[[IO[bytes]], object], exclusive: bool) -> Path:
    if exclusive:
        with open(path, "xb") as f:
            fill(f)
        return path
    with atomic_writer(path, durable=False) as f:
        fill(f)
    return path

"""Results as JSON plus .npy files: the only form in which results leave the worker.

Arrays travel as .npy files loaded with ``allow_pickle=False`` and everything else as JSON,
so nothing a user's code produced can execute code in the process that reads a result.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gradviz.core.report import result_to_dict
from gradviz.schema.results import CheckResult

ARRAYS = ("analytic", "numerical", "error", "failing")


def write_check_result(result: CheckResult, directory: str | Path) -> dict:
    """Write every block's arrays to ``directory``; return the JSON summary naming them."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    summary = result_to_dict(result)
    for entry, block in zip(summary["blocks"], result.blocks):
        files = {}
        for kind in ARRAYS:
            path = directory / f"{kind}_o{block.output}_i{block.input}.npy"
            np.save(path, getattr(block, kind), allow_pickle=False)
            files[kind] = str(path)
        entry["files"] = files
        entry["out_shape"] = list(block.out_shape)
        entry["in_shape"] = list(block.in_shape)
    return summary


def read_block_arrays(entry: dict) -> dict[str, np.ndarray]:
    """Load one block's arrays, refusing pickled objects."""
    return {kind: np.load(path, allow_pickle=False) for kind, path in entry["files"].items()}

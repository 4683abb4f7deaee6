"""Results as JSON plus .npy files: the only form in which results leave the worker.

Arrays travel as .npy files loaded with ``allow_pickle=False`` and everything else as JSON,
so nothing a user's code produced can execute code in the process that reads a result.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import numpy as np

from gradviz.schema.array_files import ARRAYS, block_key, write_npy
from gradviz.schema.precision import PrecisionCheck
from gradviz.schema.report import result_to_dict
from gradviz.schema.results import (
    BlockComparison,
    BlockRegion,
    CheckOutcome,
    CheckResult,
    FoundCell,
    LargeBlock,
    TensorInfo,
)
from gradviz.schema.settings import CheckSettings
from gradviz.schema.strict_json import decode, encode
from gradviz.schema.sweep import SweepResult


def write_check_result(result: CheckResult, directory: str | Path) -> dict[str, Any]:
    """Write every block's arrays to ``directory``; return the JSON summary naming them."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    # gradviz's own files, for the client to read: a umask the user's code set (0o777) must not
    # make them unreadable, so their modes are set, not left to it
    os.chmod(directory, stat.S_IRWXU)
    summary = result_to_dict(result)
    for key, prefix in (("blocks", ""), ("forward_blocks", "forward_")):
        for entry, block in zip(summary[key], getattr(result, key)):
            files = {}
            for kind in (*ARRAYS, "kinks"):
                array = getattr(block, kind)
                if array is None:  # kinks: only where failing cells were probed
                    continue
                path = write_npy(directory / f"{prefix}{kind}_{block_key(block)}.npy", array)
                os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)
                files[kind] = str(path)
            entry["files"] = files
            entry["out_shape"] = list(block.out_shape)
            entry["in_shape"] = list(block.in_shape)
    return summary


def read_check_result(summary: dict[str, Any]) -> CheckResult:
    """The CheckResult a summary describes, its arrays loaded from the files it names.

    What the worker wrote comes back as the very types the core made, so every front-end
    (window, notebook, API) works with one model.
    """
    settings = CheckSettings.from_dict(summary["settings"])
    blocks = [_block(entry) for entry in summary["blocks"]]
    paths = summary.get("paths", {})
    return CheckResult(
        function=summary["function"],
        device=summary["device"],
        dtype=summary["dtype"],
        inputs=[_tensor_info(t, t.get("name", f"in{t['index']}"), t.get("requires_grad", False)) for t in summary["inputs"]],
        outputs=[_tensor_info(t, f"out{t['index']}", t.get("differentiable", False)) for t in summary["outputs"]],
        blocks=blocks,
        settings=settings,
        warnings=list(summary.get("warnings", [])),
        notes=list(summary.get("notes", [])),
        seconds=dict(summary.get("seconds", {})),
        checks=[CheckOutcome(c["name"], c["status"], c["detail"]) for c in summary.get("checks", [])],
        analytic_path=paths.get("analytic", "batched"),
        numerical_path=paths.get("numerical", "batched"),
        functions=list(summary.get("functions", [])),
        precision=PrecisionCheck.from_dict(summary["precision"]) if summary.get("precision") else None,
        sweep=SweepResult.from_dict(summary["sweep"]) if summary.get("sweep") else None,
        large_blocks=[_large_block(b) for b in summary.get("large_blocks", [])],
        forward_blocks=[_block(entry) for entry in summary.get("forward_blocks", [])],
        deferred_maps=bool(summary.get("deferred_maps", False)),
    )


def _block(entry: dict[str, Any]) -> BlockComparison:
    """One entry of "blocks" or "forward_blocks" (or a region), its arrays loaded from the files it names."""
    arrays = read_block_arrays(entry)
    return BlockComparison(
        output=entry["output"],
        input=entry["input"],
        out_shape=tuple(entry["out_shape"]),
        in_shape=tuple(entry["in_shape"]),
        analytic=arrays["analytic"],
        numerical=arrays["numerical"],
        error=arrays["error"],
        failing=arrays["failing"],
        max_abs_error=decode(entry["max_abs_error"]),
        n_failing=entry["failing"],
        n_nonfinite=entry.get("nonfinite", 0),
        worst=tuple(entry["worst"]) if entry.get("worst") else None,
        hints=list(entry.get("hints", [])),
        kinks=arrays.get("kinks"),
    )


def write_region(region: BlockRegion, directory: str | Path) -> dict[str, Any]:
    """A region of a large block (``gradviz.core.region``): its four arrays as .npy files and
    the JSON naming them."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    c = region.comparison
    files = {}
    for kind in ARRAYS:
        path = write_npy(directory / f"region_{kind}_{block_key(c)}.npy", getattr(c, kind))
        files[kind] = str(path)
    return {
        "output": c.output,
        "input": c.input,
        "row0": region.row0,
        "col0": region.col0,
        "out_shape": list(c.out_shape),
        "in_shape": list(c.in_shape),
        "max_abs_error": encode(c.max_abs_error),
        "failing": c.n_failing,
        "nonfinite": c.n_nonfinite,
        "worst": list(c.worst) if c.worst else None,
        "files": files,
    }


def read_region(summary: dict[str, Any]) -> BlockRegion:
    """The region a ``write_region`` summary describes, its arrays loaded without pickles."""
    return BlockRegion(summary["row0"], summary["col0"], _block(summary))


def _large_block(entry: dict[str, Any]) -> LargeBlock:
    cells = [FoundCell(c["row"], c["col"], decode(c["analytic"]), decode(c["numerical"])) for c in entry["failing_cells"]]
    return LargeBlock(
        entry["output"], entry["input"], tuple(entry["out_shape"]), tuple(entry["in_shape"]), cells,
        entry["probes"], entry["complete"],
    )


def _tensor_info(entry: dict[str, Any], name: str, requires_grad: bool) -> TensorInfo:
    shape = entry.get("shape")
    return TensorInfo(entry["index"], name, None if shape is None else tuple(shape), entry.get("dtype"), requires_grad)


def read_block_arrays(entry: dict[str, Any]) -> dict[str, np.ndarray]:
    """Load one block's arrays, refusing pickled objects."""
    return {kind: np.load(path, allow_pickle=False) for kind, path in entry["files"].items()}

"""A report on disk: JSON for people and scripts, one .npz of every array, figures, a reproducer.

What ``Report.save`` and the pytest plugin's ``--gradviz-artifacts`` write; arrays load with
``np.load(path, allow_pickle=False)``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from gradviz.render.figure import KINDS, block_svg, heatmap_png
from gradviz.schema.report import result_to_dict
from gradviz.schema.result_files import ARRAYS

if TYPE_CHECKING:
    from gradviz.api.report import Report


def save_report(report: Report, directory: Path) -> list[Path]:
    """Write the report's files into ``directory`` (made if missing); the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    result = report.result
    summary = result_to_dict(result)
    arrays = {}
    for entry, block in zip(summary["blocks"], result.blocks):
        key = f"o{block.output}_i{block.input}"
        entry.update(out_shape=list(block.out_shape), in_shape=list(block.in_shape))
        entry["arrays"] = {kind: f"{kind}_{key}" for kind in ARRAYS}
        arrays.update({f"{kind}_{key}": getattr(block, kind) for kind in ARRAYS})
    written = [directory / "report.json", directory / "report.npz", directory / "message.txt"]
    written[0].write_text(json.dumps(summary, allow_nan=False, indent=1), encoding="utf-8")
    np.savez_compressed(written[1], **arrays)
    written[2].write_text(report.message() + "\n", encoding="utf-8")
    for block in result.blocks:
        key = f"o{block.output}_i{block.input}"
        figure = directory / f"figure_{key}.svg"
        figure.write_text(block_svg(result, block), encoding="utf-8")
        written.append(figure)
        for kind in KINDS:
            path = directory / f"{kind}_{key}.png"
            path.write_bytes(heatmap_png(result, block, kind))
            written.append(path)
    if report.fn is not None and report.inputs is not None:
        written.append(_write_reproducer(report, directory))
    return written


def _write_reproducer(report: Report, directory: Path) -> Path:
    """reproducer.py, or reproducer.txt saying why no script could be written."""
    try:
        script = report.reproducer()
    except ValueError as exc:
        path = directory / "reproducer.txt"
        path.write_text(f"No reproducer script: {exc}\n", encoding="utf-8")
        return path
    path = directory / "reproducer.py"
    path.write_text(script, encoding="utf-8")
    return path


def file_stem(text: str) -> str:
    """A name safe in any file system: ``tests/test_ops.py::test_cube[float64]`` ->
    ``tests_test_ops.py__test_cube_float64``."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text.replace("::", "__")).strip("_.") or "report"

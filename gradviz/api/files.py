"""A report on disk: JSON for people and scripts, one .npz of every array, figures, a reproducer.

What ``Report.save`` and the pytest plugin's ``--gradviz-artifacts`` write; arrays load with
``np.load(path, allow_pickle=False)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gradviz.render.figure import KINDS, block_svg, heatmap_png
from gradviz.schema.array_files import ARRAYS, block_key, npz_bytes, write_file
from gradviz.schema.json_schemas import stamp
from gradviz.schema.report import ALREADY_HOLDS, result_to_dict
from gradviz.schema.strict_json import dumps

if TYPE_CHECKING:
    from gradviz.api.checked import CheckedReport as Report  # what a writer reads of a Report


class ExistingFiles(FileExistsError):
    """The folder already holds files a save would replace; ``paths`` lists them. Nothing was written."""

    def __init__(self, message: str, paths: list[Path]) -> None:
        super().__init__(message)
        self.paths = paths


def existing_files(directory: Path, names: list[str], how: str) -> list[Path]:
    """The files of ``names`` already in ``directory``; ExistingFiles naming them when there
    are some, ``how`` saying how to replace them (``overwrite=True``, ``--overwrite``)."""
    found = [directory / n for n in names if (directory / n).exists() or (directory / n).is_symlink()]
    if found:
        shown = ", ".join(p.name for p in found[:6]) + (f" and {len(found) - 6} more" if len(found) > 6 else "")
        raise ExistingFiles(ALREADY_HOLDS.format(directory=directory, files=shown, how=how), found)
    return found


def report_names(report: Report) -> list[str]:
    """Every name ``save_report`` may write (both reproducer.py and reproducer.txt: one of them)."""
    names = ["report.json", "report.npz", "message.txt"]
    for block in report.result.blocks:
        key = block_key(block)
        names += [f"figure_{key}.svg", *(f"{kind}_{key}.png" for kind in KINDS)]
    if report.fn is not None and report.inputs is not None:
        names += ["reproducer.py", "reproducer.txt"]
    return names


def save_report(report: Report, directory: Path, *, overwrite: bool = False) -> list[Path]:
    """Write the report's files into ``directory`` (made if missing); the paths written.

    A file of the same name already there is never replaced silently: ExistingFiles (a
    FileExistsError) names them all before anything is written, unless ``overwrite``; then the
    reproducer of the other kind (.py or .txt) from an earlier save goes too, so the folder
    holds one report, not parts of two. Without ``overwrite`` each file is created exclusively,
    so one made meanwhile by another program is not replaced either.
    """
    directory.mkdir(parents=True, exist_ok=True)
    if not overwrite:
        existing_files(directory, report_names(report), "overwrite=True")
    result = report.result
    summary = stamp(result_to_dict(result))  # the check document (schema "check") and where the arrays are
    arrays = {}
    for group, prefix in (("blocks", ""), ("forward_blocks", "forward_")):  # forward: check_forward_ad
        for entry, block in zip(summary[group], getattr(result, group)):
            key = f"{prefix}{block_key(block)}"
            entry.update(out_shape=list(block.out_shape), in_shape=list(block.in_shape))
            entry["arrays"] = {kind: f"{kind}_{key}" for kind in ARRAYS}
            arrays.update({f"{kind}_{key}": getattr(block, kind) for kind in ARRAYS})
    files: dict[str, bytes] = {
        "report.json": dumps(summary, indent=1).encode("utf-8"),
        "report.npz": npz_bytes(arrays),
        "message.txt": (report.message() + "\n").encode("utf-8"),
    }
    for block in result.blocks:
        key = block_key(block)
        files[f"figure_{key}.svg"] = block_svg(result, block).encode("utf-8")
        for kind in KINDS:
            files[f"{kind}_{key}.png"] = heatmap_png(result, block, kind)
    if report.fn is not None and report.inputs is not None:
        name, text = _reproducer(report, directory)
        files[name] = text.encode("utf-8")
        if overwrite:
            other = directory / ("reproducer.txt" if name == "reproducer.py" else "reproducer.py")
            other.unlink(missing_ok=True)
    written = []
    for name, data in files.items():
        written.append(write_file(directory / name, data, exclusive=not overwrite))
    return written


def _reproducer(report: Report, directory: Path) -> tuple[str, str]:
    """reproducer.py's text (it finds the user's modules from ``directory``, where it is saved),
    or reproducer.txt saying why no script could be written."""
    from gradviz.api.reproducer import reproducer_script

    try:
        return "reproducer.py", reproducer_script(report, directory)
    except ValueError as exc:
        return "reproducer.txt", f"No reproducer script: {exc}\n"


"""``gradviz check``, ``sweep``, ``graph`` and ``list``: settings from the arguments, one request
to the worker, the verdict printed (the worker's table, or ``--json``'s document as it came)."""

from __future__ import annotations

import argparse
from pathlib import Path

from gradviz.cli_contract import ExitCode, json_document, short
from gradviz.cli_gradcheck import gradcheck_flags
from gradviz.cli_output import print_error, report_worker_error, write_stdout
from gradviz.cli_request import run_in_worker
from gradviz.schema.settings import CheckSettings


def tolerances(args: argparse.Namespace) -> dict[str, float]:
    """eps, atol and rtol: as given, else the dtype's defaults (float64: gradcheck's)."""
    from gradviz.schema.settings import dtype_defaults

    own = dtype_defaults(args.dtype)
    return {name: getattr(own, name) if getattr(args, name) is None else getattr(args, name) for name in ("eps", "atol", "rtol")}


def run_list() -> int:
    from gradviz.schema.library import builtin_functions

    category = None
    for entry in builtin_functions():
        if entry.category != category:
            category = entry.category
            print(f"{category}:")
        bug = "  [buggy]" if entry.bug else ""
        print(f"  {entry.name:<28} {entry.summary}{bug}")
    return ExitCode.PASS


def run_check(args: argparse.Namespace) -> int:
    """``gradviz check``: exit 0 when every block passes, 1 when a cell or check fails, 2 on errors."""
    from gradviz.schema.settings import memory_limit_bytes

    def settings() -> CheckSettings:
        return CheckSettings(
            device=args.device,
            dtype=args.dtype,
            **tolerances(args),
            seed=args.seed,
            jitter=args.jitter,
            max_jacobian_bytes=memory_limit_bytes(args.max_memory_mb) if args.max_memory_mb is not None else None,
            jacobian_only=args.jacobian_only,
            all_checks=args.all_checks,
            nondet_tol=args.nondet_tol,
            **gradcheck_flags(args),
        )

    if args.save and not args.overwrite:
        refused = refuse_saved_arrays(Path(args.save))
        if refused:
            print_error("io", refused, "", args.json, None)
            return ExitCode.ERROR
    extra = {
        "arrays": False,  # the CLI reads the report; --save writes the .npy files directly
        "graph": False,
        "report": True,
        # resolved here: the user's code may os.chdir before the arrays are written
        "save": str(Path(args.save).resolve()) if args.save else None,
        "overwrite": args.overwrite,
        "sweep": args.sweep,
    }
    if args.parameters is not None:  # True: all; NAME,NAME: those
        extra["parameters"] = args.parameters if args.parameters is True else args.parameters.split(",")
    reply = run_in_worker("check", args, settings, extra)
    if reply is None:
        return ExitCode.ERROR
    report = reply.result["report"]
    text = json_document(report) if args.json else reply.result["table"]
    if not write_stdout(text):
        return ExitCode.ERROR
    return ExitCode.PASS if report["passed"] else ExitCode.MISMATCH


def refuse_saved_arrays(folder: Path) -> str | None:
    """``--save DIR`` without ``--overwrite`` when DIR already holds arrays of a save: refused
    before anything runs (the blocks, and so the exact names, are known only after the check;
    the worker refuses again, file by file, if one appears meanwhile)."""
    from gradviz.schema.report import SAVED_ARRAYS

    try:
        found = sorted(p.name for kind in SAVED_ARRAYS for p in folder.glob(f"{kind}_o*_i*.npy"))
    except OSError:
        return None  # unreadable: the worker's write says why
    if not found:
        return None
    shown = ", ".join(found[:6]) + (f" and {len(found) - 6} more" if len(found) > 6 else "")
    return f"--save {short(str(folder))} already holds {shown}; pass --overwrite to replace them, or save into another folder."


def run_sweep(args: argparse.Namespace) -> int:
    """``gradviz sweep``: exit 0 with the curves and the verdict, 2 when the code or the arguments fail."""
    from gradviz.schema.errors import GradvizError
    from gradviz.schema.settings import SweepOptions, parse_block

    try:
        options = SweepOptions(
            block=parse_block(args.block) if args.block else None, max_columns=args.max_columns
        ).to_dict()
        SweepOptions.from_dict(options)
    except GradvizError as exc:
        report_worker_error(exc.to_dict(), args.json)
        return ExitCode.ERROR

    def settings() -> CheckSettings:
        return CheckSettings(device=args.device, dtype=args.dtype, **tolerances(args), seed=args.seed, jitter=args.jitter)

    reply = run_in_worker("sweep", args, settings, {"options": options})
    if reply is None:
        return ExitCode.ERROR
    sweep = reply.result["sweep"]
    text = json_document(sweep) if args.json else reply.result["table"]
    return ExitCode.PASS if write_stdout(text) else ExitCode.ERROR


def run_graph(args: argparse.Namespace) -> int:
    """``gradviz graph``: the graph read once into a ``GraphModel`` and printed from it; ``--json``
    prints the worker's document as it came."""
    from gradviz.schema.graph import GraphModel
    from gradviz.schema.report import format_graph

    def settings() -> CheckSettings:
        return CheckSettings(device=args.device, dtype=args.dtype, seed=args.seed)

    reply = run_in_worker("graph", args, settings, {})
    if reply is None:
        return ExitCode.ERROR
    graph = reply.result["graph"]
    text = json_document(graph) if args.json else format_graph(GraphModel.from_dict(graph))
    return ExitCode.PASS if write_stdout(text) else ExitCode.ERROR

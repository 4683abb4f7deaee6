"""``gradviz check``, ``sweep``, ``graph`` and ``list``: settings from the arguments, one request
to the worker, the verdict printed (the worker's table, or ``--json``'s document as it came)."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

from gradviz.cli.contract import ExitCode, json_document, short
from gradviz.cli.gradcheck_flags import gradcheck_flags
from gradviz.cli.output import print_error, report_worker_error, stdout_usable, write_stdout
from gradviz.cli.request import (
    WorkerSession,
    code_request,
    function_list,
    refuse_for_several,
    run_in_worker,
    save_bases,
    save_name,
    validated_timeout,
)
from gradviz.schema.requests import CheckRequest, GraphRequest, SweepRequest
from gradviz.schema.settings import CheckSettings, SweepOptions


def tolerances(args: argparse.Namespace) -> dict[str, float]:
    """eps, atol and rtol: as given, else the dtype's defaults (float64: gradcheck's)."""
    from gradviz.schema.settings import dtype_defaults

    own = dtype_defaults(args.dtype)
    return {name: getattr(own, name) if getattr(args, name) is None else getattr(args, name) for name in ("eps", "atol", "rtol")}


def run_list() -> int:
    from gradviz.schema.library import builtin_functions

    lines, category = [], None
    for entry in builtin_functions():
        if entry.category != category:
            category = entry.category
            lines.append(f"{category}:")
        bug = "  [buggy]" if entry.bug else ""
        lines.append(f"  {entry.name:<28} {entry.summary}{bug}")
    return ExitCode.PASS if write_stdout("\n".join(lines)) else ExitCode.ERROR


def run_check(args: argparse.Namespace) -> int:
    """``gradviz check``: exit 0 when every block passes, 1 when a cell or check fails, 2 on errors;
    with several targets (or ``--all``), one worker checks them all and the exit status is the
    worst of theirs."""
    from gradviz.schema.errors import GradvizError
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

    several = len(args.targets) > 1 or args.all
    if not stdout_usable(args.json):
        return ExitCode.ERROR
    try:
        timeout = validated_timeout(args, settings)
        if several:
            refuse_for_several(args)
            bases = save_bases(args.targets) if args.save else {}
    except GradvizError as exc:
        report_worker_error(exc.to_dict(), args.json)
        return ExitCode.ERROR
    if not several:  # refused before any worker starts, as the one target's error
        if args.save and not args.overwrite and (refused := refuse_saved_arrays(Path(args.save))):
            print_error("io", refused, "", args.json, None)
            return ExitCode.ERROR
    # each target's request but its code and --save folder; the CLI reads the report, --save
    # writes the .npy files directly
    base = partial(
        CheckRequest,
        settings=settings(),
        timeout=timeout,
        sweep=SweepOptions() if args.sweep else None,
        arrays=False,
        maps="failing" if args.save else "deferred",  # fast mode: the verdict first, the maps for --save
        graph=False,
        report=True,
        overwrite=args.overwrite,
    )
    codes: list[tuple[str, int]] = []
    with WorkerSession(args.json) as session:
        for text in args.targets:
            listed = function_list(text) if args.all else None  # None: the target names one Function
            expand = listed is not None
            names: list[str | None] = ([*listed] if listed else [None]) if listed is not None else [args.function]
            tried: set[str | None] = set()
            while names:  # one name, or (--all) every Function of the file, the worker's list once known
                name = names.pop(0)
                tried.add(name)
                label = f"{text}:{name}" if expand and name else text
                save = None
                if args.save and several:  # each target into its own subfolder (save_bases)
                    save = Path(args.save) / bases[text]
                    save = save / save_name(name) if expand and name else save
                elif args.save:
                    save = Path(args.save)
                # no Function found by reading the file: a first check lists them; with --save it is
                # only that (its folder needs the name), and each is then checked by name
                listing = bool(save) and expand and name is None
                shown = None if listing else save
                code, report = check_one(session, text, name, label if several else None, shown, base, args, not listing)
                if listing and report is not None:
                    names = list(report["functions"])
                    continue
                if report is not None:
                    label = f"{text}:{report['function']}" if expand else text
                    tried.add(report["function"])
                    if expand:
                        names = [f for f in report["functions"] if f not in tried]
                codes.append((label, code))
    if several:
        summarize(codes, session.pids, args.json)
    return max(code for _, code in codes) if codes else ExitCode.ERROR


def check_one(
    session: WorkerSession,
    text: str,
    name: str | None,
    label: str | None,
    save: Path | None,
    base: Callable[..., CheckRequest],
    args: argparse.Namespace,
    show: bool = True,
) -> tuple[int, dict | None]:
    """One target checked and printed (under ``label`` when there are several; not at all without
    ``show``): its exit code and its report (None when it gave no verdict: the error is printed,
    naming ``label``). ``base``: the request, given this target's ``code`` and ``save``."""
    from gradviz.schema.errors import ErrorKind, GradvizError

    try:
        if label and save is not None and not args.overwrite and (refused := refuse_saved_arrays(save)):
            error = GradvizError(refused)
            error.kind = ErrorKind.IO
            raise error
        code = code_request(text, name, args.inputs, parameters(args))
    except GradvizError as exc:
        report_worker_error(exc.to_dict(), args.json, label)
        return ExitCode.ERROR, None
    # resolved here: the user's code may os.chdir before the arrays are written
    saved = SavedFolder(save.resolve()) if save else None
    reply = session.ask(base(code=code, save=str(saved.folder) if saved else None), label)
    if saved is not None:
        saved.fix_modes()
    if reply is None:
        return ExitCode.ERROR, None
    report = reply.result["report"]
    if not show:
        return ExitCode.PASS, report
    if args.json:
        text = json_document(report, label)
    else:
        text = f"==> {label} <==\n{reply.result['table']}\n" if label else reply.result["table"]
    if not write_stdout(text):
        return ExitCode.ERROR, None
    return (ExitCode.PASS if report["passed"] else ExitCode.MISMATCH), report


def parameters(args: argparse.Namespace) -> bool | tuple[str, ...] | None:
    """``--parameters``: True for all of a module's, NAME,NAME for those; None without it."""
    if args.parameters is None or args.parameters is True:
        return args.parameters
    return tuple(args.parameters.split(","))


def summarize(codes: list[tuple[str, int]], pids: list[int], as_json: bool) -> None:
    """After several targets: each one's verdict (stdout, in text), and on stderr how many there
    were and which worker processes checked them (one, unless a worker died on the way)."""
    words = {ExitCode.PASS: "pass", ExitCode.MISMATCH: "FAIL", ExitCode.ERROR: "error"}
    if not as_json:
        write_stdout("\n".join(f"{words[ExitCode(code)]:<6} {label}" for label, code in codes))
    counts = ", ".join(f"{sum(c == code for _, c in codes)} {words[code].lower()}" for code in words)
    workers = f"{len(pids)} worker process{'es' if len(pids) != 1 else ''} (pid {', '.join(map(str, pids)) or 'none'})"
    print(f"gradviz: {len(codes)} targets checked by {workers}: {counts}", file=sys.stderr)


class SavedFolder:
    """``--save DIR`` written with this process's umask, whatever the user's code set in the
    worker (``os.umask(0o777)`` left a mode-000 folder and files): the folder is made here, and
    each file the worker added is given the mode a file of ours would have."""

    def __init__(self, folder: Path) -> None:
        from gradviz.schema.atomic_write import current_umask

        self.folder, self.umask = folder, current_umask()
        self.before = self._arrays()
        self.made = False
        with contextlib.suppress(OSError):  # cannot: the worker's write says why
            self.made = not folder.exists()
            folder.mkdir(parents=True, exist_ok=True)

    def _arrays(self) -> set[Path]:
        try:
            return set(self.folder.glob("*_o*_i*.npy"))
        except OSError:
            return set()

    def fix_modes(self) -> None:
        """The files that were not there before: 0o666 less our umask (replaced ones kept theirs);
        the folder made for a check that saved nothing is removed again."""
        added = self._arrays() - self.before
        for path in added:
            with contextlib.suppress(OSError):
                if path.is_file() and not path.is_symlink():
                    os.chmod(path, 0o666 & ~self.umask)
        if self.made and not added:
            with contextlib.suppress(OSError):
                self.folder.rmdir()  # only if empty


def refuse_saved_arrays(folder: Path) -> str | None:
    """``--save DIR`` without ``--overwrite`` when DIR already holds arrays of a save: refused
    before anything runs (the blocks, and so the exact names, are known only after the check;
    the worker refuses again, file by file, if one appears meanwhile)."""
    from gradviz.schema.report import ALREADY_HOLDS, SAVED_ARRAYS

    try:
        found = sorted(p.name for kind in SAVED_ARRAYS for p in folder.glob(f"{kind}_o*_i*.npy"))
    except OSError:
        return None  # unreadable: the worker's write says why
    if not found:
        return None
    shown = ", ".join(found[:6]) + (f" and {len(found) - 6} more" if len(found) > 6 else "")
    return ALREADY_HOLDS.format(directory=f"--save {short(str(folder))}", files=shown, how="--overwrite")


def run_sweep(args: argparse.Namespace) -> int:
    """``gradviz sweep``: exit 0 with the curves and the verdict, 2 when the code or the arguments fail."""
    from gradviz.schema.errors import GradvizError
    from gradviz.schema.settings import parse_block

    try:
        options = SweepOptions(block=parse_block(args.block) if args.block else None, max_columns=args.max_columns)
        SweepOptions.from_dict(options.to_dict())  # validated as the worker reads it
    except GradvizError as exc:
        report_worker_error(exc.to_dict(), args.json)
        return ExitCode.ERROR

    def settings() -> CheckSettings:
        return CheckSettings(device=args.device, dtype=args.dtype, **tolerances(args), seed=args.seed, jitter=args.jitter)

    reply = run_in_worker(args, settings, partial(SweepRequest, options=options))
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

    reply = run_in_worker(args, settings, GraphRequest)
    if reply is None:
        return ExitCode.ERROR
    graph = reply.result["graph"]
    text = json_document(graph) if args.json else format_graph(GraphModel.from_dict(graph))
    return ExitCode.PASS if write_stdout(text) else ExitCode.ERROR

"""``gradviz`` on the command line: the same core as the app, for CI and scripts.

Exit codes (``cli_contract.ExitCode``, listed by ``--help``): 0 every block passes, 1 some cell
fails, 2 a usage error or the user code failed, 130 Ctrl+C, 143 SIGTERM. ``--json`` documents
follow the schemas shipped in ``gradviz/schema/json``.

``gradviz check``, ``sweep``, ``graph`` and ``memory`` run in the worker (``gradviz.worker``), as
the app does, under its memory limit (a memory study too large for it is refused before it
starts): an endless loop is stopped at ``--timeout``, and ``sys.exit``, ``os._exit``, ``abort()``
or a segfault inside the Function end only the process running it, so they are reported as
errors naming the line and can never read as a pass. What the Function prints goes to stderr.
Files are never replaced silently: ``--save DIR`` over arrays of an earlier save needs
``--overwrite``.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from gradviz._version import __version__
from gradviz.cli_contract import (
    ExitCode,
    add_exit_codes,
    error_document,
    json_document,
    misplaced_options,
    short,
)
from gradviz.cli_gradcheck import add_gradcheck_flags, gradcheck_flags
from gradviz.cli_window import launch_window
from gradviz.schema.settings import DTYPE_DEFAULTS, DTYPES, CheckSettings, SweepOptions

DEFAULTS = CheckSettings()
SWEEP_DEFAULTS = SweepOptions()

EXIT_PASS, EXIT_FAIL, EXIT_ERROR, EXIT_INTERRUPTED = ExitCode.PASS, ExitCode.MISMATCH, ExitCode.ERROR, ExitCode.INTERRUPTED
COMMANDS = ("check", "sweep", "memory", "graph", "list", "app")
DOCUMENTS = (".py", ".gradviz")  # `gradviz FILE.py` and `gradviz SESSION.gradviz` open them in the window
TARGET_HELP = (
    "a .py file (FILE.py:Name picks a Function or a function calling one), a module target "
    "package.module:Name (imported with the current folder first on sys.path, as python -m does), or "
    "the name of a built-in example (see 'gradviz list')"
)
INPUTS_HELP = (
    "the arguments of apply, saved with torch.save (a tensor or a tuple), loaded with weights_only=True "
    "instead of the file's example_inputs; moved to --device and --dtype"
)
MAX_TRACEBACK_FRAMES = 12  # a RecursionError has a thousand identical frames: show both ends


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gradviz",
        description="A gradient debugger for custom torch.autograd.Function classes. "
        "Without a command, the desktop app starts.",
    )
    parser.add_argument("--version", action="version", version=f"gradviz {__version__}")
    commands = parser.add_subparsers(dest="command")

    check = commands.add_parser("check", help="compare the analytic and numerical Jacobians of a Function")
    check.add_argument("file", metavar="TARGET", help=TARGET_HELP)
    check.add_argument("--function", help="which Function to check when the file defines several")
    check.add_argument("--inputs", metavar="FILE", help=INPUTS_HELP)
    _add_run_arguments(check)
    check.add_argument(
        "--max-memory-mb", type=float, help="refuse Jacobians larger than this (default: RAM/4)"
    )
    check.add_argument(
        "--jacobian-only",
        action="store_true",
        help="compare the Jacobians only: skip gradcheck's other default checks (reentrancy, backward "
        "multiplied by grad_output, undefined output gradients)",
    )
    check.add_argument(
        "--all-checks", action="store_true", help="also check double backward (gradgradcheck)"
    )
    check.add_argument("--nondet-tol", type=float, default=0.0, help="tolerance of the reentrancy check")
    add_gradcheck_flags(check)
    check.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    check.add_argument("--save", metavar="DIR", help="save both Jacobians of every block as .npy files")
    check.add_argument(
        "--overwrite",
        action="store_true",
        help="with --save: replace .npy files of the same names (without it, a DIR holding any is refused)",
    )
    check.add_argument(
        "--sweep",
        action="store_true",
        help="also sweep eps: Taylor-remainder slopes and a verdict per block (backward wrong, eps too small or "
        "too large, non-differentiable) in the table and the JSON",
    )
    check.add_argument(
        "--parameters",
        nargs="?",
        const=True,
        metavar="NAMES",
        help="TARGET is a callable returning an nn.Module: also check its parameters' gradients, all of them or "
        "those named (layer.weight,layer.bias); off by default, each parameter element adds a Jacobian column",
    )
    check.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help="stop the check when the Function's code runs longer than this, not counting the worker's "
        "start-up (default: no limit)",
    )

    sweep = commands.add_parser(
        "sweep", help="why a check fails: the error against eps, Taylor-remainder slopes and a verdict per block"
    )
    sweep.add_argument("file", help="a .py file, or the name of a built-in example (see 'gradviz list')")
    sweep.add_argument("--function", help="which Function to sweep when the file defines several")
    sweep.add_argument(
        "--block", metavar="O,I", help="sweep only this block (output O, input I) cell by cell (default: every block)"
    )
    _add_run_arguments(sweep)
    sweep.add_argument(
        "--max-columns",
        type=int,
        default=SWEEP_DEFAULTS.max_columns,
        help="wider inputs are swept on this many columns: the worst quarter at eps, the rest at random "
        f"(default: {SWEEP_DEFAULTS.max_columns})",
    )
    sweep.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    sweep.add_argument(
        "--timeout", type=float, metavar="SECONDS", help="stop the Function's code after this long (default: no limit)"
    )

    memory = commands.add_parser("memory", help="saved-tensor memory of fused vs unfused conv-BN")
    memory.add_argument("--layers", type=int, default=1, help="number of conv-BN layers (default: 1)")
    memory.add_argument("--shape", default="8,3,32,32", help="input shape N,C,H,W (default: 8,3,32,32)")
    memory.add_argument("--out-channels", type=int, default=16, help="conv output channels (default: 16)")
    memory.add_argument("--kernel", type=int, default=3, help="conv kernel size (default: 3)")
    memory.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default: cpu)")
    memory.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    memory.add_argument("--json", action="store_true", help="print one JSON object on stdout")

    graph = commands.add_parser("graph", help="the autograd graph of one forward, its saved tensors and backward order")
    graph.add_argument("file", metavar="TARGET", help=TARGET_HELP)
    graph.add_argument("--function", help="which Function to use when the file defines several")
    graph.add_argument("--inputs", metavar="FILE", help=INPUTS_HELP)
    graph.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default: cpu)")
    graph.add_argument("--dtype", default="float64", choices=["float64", "float32"])
    graph.add_argument("--seed", type=int, default=DEFAULTS.seed, help=f"seed for example_inputs (default: {DEFAULTS.seed})")
    graph.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    graph.add_argument(
        "--timeout", type=float, metavar="SECONDS", help="stop the Function's code after this long (default: no limit)"
    )

    commands.add_parser("list", help="list the built-in example Functions")
    app = commands.add_parser("app", help="start the desktop app (the default)")
    app.add_argument("app_args", nargs=argparse.REMAINDER)
    add_exit_codes(parser, *commands.choices.values())
    return parser


def _add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """Device, dtype, the dtype's eps/atol/rtol (unless given), seed and jitter: shared by check and sweep."""
    defaults = ", ".join(f"{d} {t.eps:g}/{t.atol:g}/{t.rtol:g}" for d, t in DTYPE_DEFAULTS.items())
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default: cpu)")
    parser.add_argument(
        "--dtype",
        default=DEFAULTS.dtype,
        choices=list(DTYPES),
        help=f"dtype of the inputs (default: {DEFAULTS.dtype}); eps/atol/rtol default per dtype: {defaults}",
    )
    parser.add_argument("--eps", type=float, help=f"finite-difference step (default: the dtype's; float64: {DEFAULTS.eps:g})")
    parser.add_argument("--atol", type=float, help=f"absolute tolerance (default: the dtype's; float64: {DEFAULTS.atol:g})")
    parser.add_argument("--rtol", type=float, help=f"relative tolerance (default: the dtype's; float64: {DEFAULTS.rtol:g})")
    parser.add_argument("--seed", type=int, default=DEFAULTS.seed, help=f"seed for example_inputs (default: {DEFAULTS.seed})")
    parser.add_argument(
        "--jitter",
        type=float,
        default=0.0,
        help="move each input element by up to this much times (1+|x|), away from kinks (default: 0)",
    )


def _tolerances(args: argparse.Namespace) -> dict[str, float]:
    """eps, atol and rtol: as given, else the dtype's defaults (float64: gradcheck's)."""
    from gradviz.schema.settings import dtype_defaults

    own = dtype_defaults(args.dtype)
    return {name: getattr(own, name) if getattr(args, name) is None else getattr(args, name) for name in ("eps", "atol", "rtol")}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if misplaced_options(argv, COMMANDS):
        build_parser().parse_args(argv)  # argparse's usage error (exit 2) for the unknown option
    if not argv or (argv[0].startswith("--") and argv[0] not in ("--version", "--help")):
        return launch_window(argv)
    if argv[0] == "app":  # its options belong to the app's own parser
        return launch_window(argv[1:])
    if argv[0] not in COMMANDS and argv[0].endswith(DOCUMENTS):
        return launch_window(argv)  # a file or session to open in the window
    args = build_parser().parse_args(argv)
    if args.command == "check":
        return run_check(args)
    if args.command == "sweep":
        return run_sweep(args)
    if args.command == "list":
        return run_list()
    if args.command == "memory":
        return run_memory(args)
    if args.command == "graph":
        return run_graph(args)
    return launch_window(getattr(args, "app_args", []))


def run_list() -> int:
    from gradviz.schema.library import builtin_functions

    category = None
    for entry in builtin_functions():
        if entry.category != category:
            category = entry.category
            print(f"{category}:")
        bug = "  [buggy]" if entry.bug else ""
        print(f"  {entry.name:<28} {entry.summary}{bug}")
    return EXIT_PASS


def run_memory(args: argparse.Namespace) -> int:
    """``gradviz memory``: the conv-BN study, run in the worker like every other request (its
    memory limit, its process), after a size that cannot fit in that limit is refused here."""
    from gradviz.schema.errors import GradvizError
    from gradviz.schema.memory import check_study_fits
    from gradviz.schema.settings import MemoryOptions
    from gradviz.worker.client import WorkerStartError, run_request
    from gradviz.worker.supervisor import default_memory_limit

    try:
        shape = tuple(int(v) for v in args.shape.split(","))
        if len(shape) != 4:
            raise ValueError
    except ValueError:
        _print_error(
            "settings", f"--shape must be four integers N,C,H,W, not {short(args.shape)!r}.", "", args.json, None
        )
        return EXIT_ERROR
    if not _stdout_usable(args.json):
        return EXIT_ERROR
    try:
        options = MemoryOptions(args.layers, shape, args.out_channels, args.kernel, args.device, args.dtype)
        options.validate()
        check_study_fits(
            options.layers, options.shape, options.out_channels, options.kernel, options.dtype, options.device,
            default_memory_limit(),
        )
    except GradvizError as exc:
        _print_error(exc.kind, exc.message, "", args.json, exc.to_dict())
        return EXIT_ERROR
    try:
        reply = run_request("memory", {"options": options.to_dict(), "sweep": False}, output=sys.stderr)
    except WorkerStartError as exc:
        _print_error("worker", str(exc), "", args.json, None)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("gradviz: interrupted", file=sys.stderr)
        raise SystemExit(EXIT_INTERRUPTED) from None
    if not reply.ok:
        _report_worker_error(reply.error or {"kind": "internal", "message": "No answer."}, args.json)
        return EXIT_ERROR
    data = reply.result["study"]
    text = json_document(data) if args.json else format_memory(data)
    return EXIT_PASS if _write_stdout(text) else EXIT_ERROR


def format_memory(data: dict) -> str:
    unfused, fused = data["variants"]["unfused"], data["variants"]["fused"]
    n, c, h, w = data["shape"]
    lines = [
        f"conv-BN, {data['layers']} layer(s), input {n}x{c}x{h}x{w} on {data['device']}",
        f"  unfused (Conv2d + BatchNorm2d)   saved {_kib(unfused['saved_bytes'])}",
        f"  fused (FusedConvBN2DFunction)    saved {_kib(fused['saved_bytes'])}"
        f" + {_kib(fused['ctx_attribute_bytes'])} on ctx",
        f"  difference {_kib(data['saved_difference_bytes'])}  (formula: {_kib(data['formula_bytes'])})",
    ]
    for name in ("peak_bytes", "end_of_forward_bytes"):
        if name in unfused:
            lines.append(
                f"  CUDA {name.removesuffix('_bytes').replace('_', ' ')}: unfused {_kib(unfused[name])}, "
                f"fused {_kib(fused[name])}"
            )
    lines.append(f"  outputs match: {data['outputs_match']}, gradients match: {data['grads_match']}")
    lines += _tensor_tables(data)
    return "\n".join(lines)


def _tensor_tables(data: dict) -> list[str]:
    """Each variant's saved tensors, one aligned row each: why one variant saves more."""
    from gradviz.schema.memory import TENSOR_COLUMNS, tensor_rows

    tables = {name: tensor_rows(data["variants"][name]) for name in ("unfused", "fused")}
    widths = [max(len(row[k]) for rows in [[TENSOR_COLUMNS], *tables.values()] for row in rows) for k in range(5)]
    right = TENSOR_COLUMNS.index("bytes")  # numbers line up on the right

    def line(row) -> str:
        cells = [cell.rjust(w) if k == right else cell.ljust(w) for k, (cell, w) in enumerate(zip(row, widths))]
        return "    " + "  ".join(cells).rstrip()

    lines = []
    for name, rows in tables.items():
        lines += ["", f"  {name}: what it saves for backward", line(TENSOR_COLUMNS), *(line(row) for row in rows)]
    return lines


def _kib(n: float) -> str:
    return f"{n / 1024:,.1f} KiB"


def _resolve_file(name: str) -> Path:
    """The file a target names: a path that exists or ends in .py, else a built-in example's.
    A name the OS refuses to look up (over 255 bytes, say) is neither: opening it says why."""
    from gradviz.schema.library import find_builtin
    from gradviz.schema.targets import path_exists

    path = Path(name)
    if path_exists(path) or path.suffix == ".py":
        return path
    try:
        return find_builtin(name) or path
    except (OSError, ValueError):
        return path


def run_check(args: argparse.Namespace) -> int:
    from gradviz.schema.settings import memory_limit_bytes

    def settings() -> CheckSettings:
        return CheckSettings(
            device=args.device,
            dtype=args.dtype,
            **_tolerances(args),
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
            _print_error("io", refused, "", args.json, None)
            return EXIT_ERROR
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
    reply = _run_in_worker("check", args, settings, extra)
    if reply is None:
        return EXIT_ERROR
    report = reply.result["report"]
    text = json_document(report) if args.json else reply.result["table"]
    if not _write_stdout(text):
        return EXIT_ERROR
    return EXIT_PASS if report["passed"] else EXIT_FAIL


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
        _report_worker_error(exc.to_dict(), args.json)
        return EXIT_ERROR

    def settings() -> CheckSettings:
        return CheckSettings(device=args.device, dtype=args.dtype, **_tolerances(args), seed=args.seed, jitter=args.jitter)

    reply = _run_in_worker("sweep", args, settings, {"options": options})
    if reply is None:
        return EXIT_ERROR
    sweep = reply.result["sweep"]
    text = json_document(sweep) if args.json else reply.result["table"]
    return EXIT_PASS if _write_stdout(text) else EXIT_ERROR


def run_graph(args: argparse.Namespace) -> int:
    def settings() -> CheckSettings:
        return CheckSettings(device=args.device, dtype=args.dtype, seed=args.seed)

    reply = _run_in_worker("graph", args, settings, {})
    if reply is None:
        return EXIT_ERROR
    graph = reply.result["graph"]
    text = json_document(graph) if args.json else reply.result["table"]
    return EXIT_PASS if _write_stdout(text) else EXIT_ERROR


def code_request(text: str, function: str | None, inputs: str | None) -> dict:
    """The part of a request that names the user's code: a file by ``path`` (with ``function``), or
    a ``target`` (a module, a file's named object, or a file with ``inputs_path``); refused here
    (GradvizError) when the file or the inputs file is not there."""
    from gradviz.schema.source_files import check_source_file
    from gradviz.schema.targets import (
        check_inputs_path,
        is_module_target,
        locate_module,
        parse_target,
        path_exists,
    )

    request: dict = {"function": function}
    if inputs is not None:
        request["inputs_path"] = str(check_inputs_path(inputs).resolve())
    if is_module_target(text) and not path_exists(text):
        module, _, name = text.partition(":")
        located = locate_module(module, Path.cwd())
        if located is not None:
            request["filename"] = str(located.resolve())  # to quote its lines if a run hangs or crashes
        return {**request, "target": text, "function": _one_name(name, function)}
    target = parse_target(text)
    path = check_source_file(_resolve_file(target.path)).resolve()
    request["path"] = str(path)
    if target.attribute or inputs is not None:
        name = _one_name(target.attribute, function)
        request.update(target=f"{path}:{name}" if name else str(path), function=name)
    return request


def _one_name(in_target: str | None, flag: str | None) -> str | None:
    from gradviz.schema.errors import SettingsError

    if in_target and flag and in_target != flag:
        raise SettingsError(f"Two names for the Function: {in_target} (in the target) and --function {flag}; give one.")
    return in_target or flag


def _run_in_worker(op: str, args: argparse.Namespace, settings, extra: dict):
    """Validate, send one request to a fresh worker, and report its failure; the Reply or None.

    Every bad value and bad file is refused here, before a worker starts or user code runs.
    """
    from gradviz.schema.errors import GradvizError
    from gradviz.schema.settings import check_timeout
    from gradviz.terminal_progress import TerminalProgress
    from gradviz.worker.client import WorkerStartError, run_request

    if not _stdout_usable(args.json):
        return None
    try:
        timeout = check_timeout(args.timeout)
        checked = settings()
        checked.validate()
        code = code_request(args.file, args.function, getattr(args, "inputs", None))
    except GradvizError as exc:
        _report_worker_error(exc.to_dict(), args.json)
        return None
    request = {**code, "settings": checked.to_dict(), **extra}
    try:  # a progress line on stderr when it is a terminal (with --json too: stdout stays the JSON)
        with TerminalProgress(sys.stderr) as progress:
            reply = run_request(op, request, timeout=timeout, output=progress, progress=progress)
    except WorkerStartError as exc:
        _print_error("worker", str(exc), "", args.json, None)
        return None
    except KeyboardInterrupt as exc:  # Ctrl+C, or SIGTERM (Terminated): the worker's tree is gone by now
        print(f"gradviz: {str(exc) or 'interrupted'}", file=sys.stderr)
        raise SystemExit(getattr(exc, "exit_code", EXIT_INTERRUPTED)) from None
    if not reply.ok:
        _report_worker_error(reply.error or {"kind": "internal", "message": "No answer."}, args.json)
        return None
    return reply


def _stdout_usable(as_json: bool) -> bool:
    """A closed stdout cannot carry a verdict: say so before doing any work."""
    if sys.stdout is None:
        _print_error("output", "Standard output is closed, so the verdict cannot be printed.", "", False, None)
        return False
    return True


def _write_stdout(text: str) -> bool:
    """Print the verdict; a full or broken stdout is an error (exit 2), never a silent pass."""
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        with contextlib.suppress(OSError, ValueError):
            sys.stdout = None  # nothing more to flush at exit
        _print_error("output", f"Cannot write the result to standard output: {reason}.", "", False, None)
        return False
    return True


def _report_worker_error(error: dict, as_json: bool) -> None:
    """A worker error as the in-process CLI printed it: message, where, the user's frames."""
    message = error.get("message", "")
    if "filename" in error:  # errors in the user's code: where, and their frames only
        where = f"{error['filename']}, line {error['lineno']}" if error.get("lineno") else error["filename"]
        text = f"{message} ({where})" if where and where not in message else message
        _print_error(error["kind"], text, _frames_text(error.get("traceback") or []), as_json, error)
    else:
        _print_error(error.get("kind", "error"), message, "", as_json, error)


def _frames_text(frames: list[dict]) -> str:
    if len(frames) > MAX_TRACEBACK_FRAMES:
        half = MAX_TRACEBACK_FRAMES // 2
        skipped = len(frames) - 2 * half
        frames = [*frames[:half], {"skipped": skipped}, *frames[-half:]]
    lines = []
    for f in frames:
        if "skipped" in f:
            lines.append(f"  [... {f['skipped']} more frames ...]")
            continue
        lines.append(f'  File "{f["filename"]}", line {f["lineno"]}, in {f["name"]}')
        if f.get("line"):
            lines.append(f"    {f['line']}")
    return "\n".join(lines)


def _print_error(kind: str, message: str, user_traceback: str, as_json: bool, detail: dict | None) -> None:
    print(f"gradviz: error: {message}", file=sys.stderr)
    if user_traceback:
        print("Traceback (your code only):", file=sys.stderr)
        print(user_traceback, file=sys.stderr)
    if as_json:
        print(error_document(detail or {"kind": kind, "message": message}))


if __name__ == "__main__":
    raise SystemExit(main())

"""``gradviz`` on the command line: the same core as the app, for CI and scripts.

Exit codes (``contract.ExitCode``, listed by ``--help``): 0 every block passes, 1 some cell
fails, 2 a usage error or the user code failed, 130 Ctrl+C, 143 SIGTERM. ``--json`` documents
follow the schemas shipped in ``gradviz/schema/json``. ``gradviz check`` with several targets (or
``--all``) checks them in one worker, one document a line, and exits with the worst status.

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
from typing import Any

from gradviz._version import DISTRIBUTION, __version__
from gradviz.cli.audit import add_audit_parser, run_audit
from gradviz.cli.commands import run_check, run_graph, run_list, run_sweep
from gradviz.cli.contract import ExitCode, add_exit_codes, error_document, misplaced_options
from gradviz.cli.gradcheck_flags import add_gradcheck_flags
from gradviz.cli.help_text import (
    ALL_CHECKS_HELP,
    JSON_HELP,
    MOVED_TO_DEVICE,
    NONDET_TOL_HELP,
    SEVERAL_TARGETS_HELP,
    per_dtype_defaults,
)
from gradviz.cli.memory import add_memory_parser, run_memory
from gradviz.cli.request import code_request
from gradviz.cli.streams import prepare_streams
from gradviz.cli.window import launch_window
from gradviz.schema.settings import DTYPES, CheckSettings, SweepOptions

__all__ = ["build_parser", "code_request", "main"]

DEFAULTS = CheckSettings()
SWEEP_DEFAULTS = SweepOptions()

COMMANDS = ("check", "sweep", "memory", "graph", "audit", "list", "app")
DOCUMENTS = (".py", ".gradviz")  # `gradviz FILE.py` and `gradviz SESSION.gradviz` open them in the window
TARGET_HELP = (
    "a .py file (FILE.py:Name picks a Function or a function calling one), a module target "
    "package.module:Name (imported with the current folder first on sys.path, as python -m does), or "
    "the name of a built-in example (see 'gradviz list')"
)
INPUTS_HELP = (
    "the arguments of apply, saved with torch.save (a tensor or a tuple), loaded with weights_only=True "
    f"instead of the file's example_inputs; {MOVED_TO_DEVICE}"
)


def version_text() -> str:
    """``gradviz --version``: the distribution's name and version, and any other installed
    distribution that also claims the ``gradviz`` import package (the project called ``gradviz``
    on the package index installs files there too, so the two overwrite each other)."""
    import importlib.metadata
    import re

    def normalized(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    claimants = importlib.metadata.packages_distributions().get("gradviz", [])
    others = sorted({name for name in claimants if normalized(name) != DISTRIBUTION})
    text = f"{DISTRIBUTION} {__version__}"
    for name in others:
        text += (
            f"\nalso installed: {name} {importlib.metadata.version(name)}, which has files in the same "
            f"gradviz package (pip show {name} says whose); to keep only this one: "
            f"pip uninstall {name} {DISTRIBUTION}, then pip install {DISTRIBUTION}"
        )
    return text


class VersionAction(argparse.Action):
    """argparse's ``version`` action, with the text made only when ``--version`` is given."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option_string: str | None = None
    ) -> None:
        print(version_text())
        parser.exit()


class UsageError(Exception):
    """argparse's usage error, raised instead of its exit so ``--json`` can print its document."""

    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.parser, self.message = parser, message


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser (its subcommands' too) whose usage errors raise ``UsageError``."""

    def error(self, message: str):  # type: ignore[override]
        raise UsageError(self, message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="gradviz",
        description="A gradient debugger for custom torch.autograd.Function classes. "
        "Without a command, the desktop app starts.",
    )
    parser.add_argument("--version", action=VersionAction, help="print the distribution's name and version, and exit")
    commands = parser.add_subparsers(dest="command")

    check = commands.add_parser("check", help="compare the analytic and numerical Jacobians of a Function")
    check.add_argument(
        "targets",
        nargs="+",
        metavar="TARGET",
        help=f"{TARGET_HELP}; {SEVERAL_TARGETS_HELP}",
    )
    check.add_argument("--function", help="which Function to check when the file defines several")
    check.add_argument(
        "--all",
        action="store_true",
        help="check every Function of each file TARGET (a TARGET naming one, FILE.py:Name or package.module:Name, "
        "is checked alone); with --save DIR, each into DIR/FILE/NAME",
    )
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
    check.add_argument("--all-checks", action="store_true", help=ALL_CHECKS_HELP)
    check.add_argument("--nondet-tol", type=float, default=0.0, help=NONDET_TOL_HELP)
    add_gradcheck_flags(check)
    check.add_argument(
        "--json",
        action="store_true",
        help=f"{JSON_HELP} (several targets: one a line, JSON Lines, each naming its target)",
    )
    check.add_argument(
        "--save",
        metavar="DIR",
        help="save both Jacobians of every block as .npy files (with --fast-mode: of a failing check only; "
        "several targets: each in a subfolder of DIR named after it, a.py -> DIR/a, pkg.mod:F -> DIR/pkg.mod.F)",
    )
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
    sweep.add_argument("--json", action="store_true", help=JSON_HELP)
    sweep.add_argument(
        "--timeout", type=float, metavar="SECONDS", help="stop the Function's code after this long (default: no limit)"
    )

    add_memory_parser(commands)

    graph = commands.add_parser("graph", help="the autograd graph of one forward, its saved tensors and backward order")
    graph.add_argument("file", metavar="TARGET", help=TARGET_HELP)
    graph.add_argument("--function", help="which Function to use when the file defines several")
    graph.add_argument("--inputs", metavar="FILE", help=INPUTS_HELP)
    graph.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default: cpu)")
    graph.add_argument("--dtype", default="float64", choices=["float64", "float32"])
    graph.add_argument("--seed", type=int, default=DEFAULTS.seed, help=f"seed for example_inputs (default: {DEFAULTS.seed})")
    graph.add_argument("--json", action="store_true", help=JSON_HELP)
    graph.add_argument(
        "--timeout", type=float, metavar="SECONDS", help="stop the Function's code after this long (default: no limit)"
    )

    add_audit_parser(commands)

    commands.add_parser("list", help="list the built-in example Functions")
    app = commands.add_parser("app", help="start the desktop app (the default)")
    app.add_argument("app_args", nargs=argparse.REMAINDER)
    add_exit_codes(parser, *commands.choices.values())
    return parser


def _add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """Device, dtype, the dtype's eps/atol/rtol (unless given), seed and jitter: shared by check and sweep."""
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default: cpu)")
    parser.add_argument(
        "--dtype",
        default=DEFAULTS.dtype,
        choices=list(DTYPES),
        help=f"dtype of the inputs (default: {DEFAULTS.dtype}); {per_dtype_defaults()}",
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


def main(argv: list[str] | None = None) -> int:
    """Run one command; its exit status (``ExitCode``). A usage error prints argparse's usage line
    and, with ``--json``, an error document on stdout; Ctrl+C and SIGTERM exit 130 and 143."""
    argv = sys.argv[1:] if argv is None else argv
    prepare_streams()
    try:
        return _run(argv)
    except UsageError as exc:
        exc.parser.print_usage(sys.stderr)
        print(f"{exc.parser.prog}: error: {exc.message}", file=sys.stderr)
        if "--json" in argv and sys.stdout is not None:
            with contextlib.suppress(OSError, ValueError):
                print(error_document({"kind": "settings", "message": exc.message}), flush=True)
        return ExitCode.ERROR
    except KeyboardInterrupt as exc:  # Ctrl+C (or SIGTERM: Terminated) before or between requests
        print(f"gradviz: {str(exc) or 'interrupted'}", file=sys.stderr)
        return int(getattr(exc, "exit_code", ExitCode.INTERRUPTED))


def _run(argv: list[str]) -> int:
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
    if args.command == "audit":
        return run_audit(args)
    return launch_window(getattr(args, "app_args", []))


if __name__ == "__main__":
    raise SystemExit(main())

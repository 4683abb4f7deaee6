"""``gradviz audit TARGET``: every custom node of a model's forward, checked at the inputs it sees.

The model is built and run in the worker, never here (this process imports no torch): the
target names an ``nn.Module`` class or a factory, its inputs come from ``example_inputs`` or
``--inputs``. The table lists the failing nodes first; ``--json`` prints one document per node
and then a summary document, one a line. Exit 0 when every checked node passes, 1 when some
node fails, 2 when there is no verdict (the model raised, no custom node, a bad target).
"""

from __future__ import annotations

import argparse
from functools import partial

from gradviz.cli.contract import ExitCode, json_document
from gradviz.cli.gradcheck_flags import add_gradcheck_flags, gradcheck_flags
from gradviz.cli.help_text import ALL_CHECKS_HELP, MOVED_TO_DEVICE, NONDET_TOL_HELP, per_dtype_defaults
from gradviz.cli.output import print_error, write_stdout
from gradviz.cli.request import run_in_worker
from gradviz.schema.requests import AuditRequest
from gradviz.schema.settings import DTYPES, CheckSettings

DEFAULTS = CheckSettings()
TARGET_HELP = (
    "the model: FILE.py:NAME or package.module:NAME, NAME an nn.Module class or a factory (no arguments) "
    "returning a module or a callable; its inputs from the file's example_inputs(device, dtype)"
)


def add_audit_parser(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The ``audit`` subcommand and its options (check's, but --jitter: the inputs are the model's)."""
    audit = commands.add_parser(
        "audit", help="check every custom Function and custom op of a model's forward at the inputs it really sees"
    )
    audit.add_argument("file", metavar="TARGET", help=TARGET_HELP)
    audit.add_argument(
        "--inputs",
        metavar="FILE",
        help="the forward's arguments saved with torch.save (a tensor or a tuple), loaded with weights_only=True "
        f"instead of example_inputs; {MOVED_TO_DEVICE}",
    )
    audit.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default: cpu)")
    audit.add_argument(
        "--dtype",
        default=DEFAULTS.dtype,
        choices=list(DTYPES),
        help=f"the model's and inputs' dtype (default: {DEFAULTS.dtype}); {per_dtype_defaults()}",
    )
    for name in ("eps", "atol", "rtol"):
        audit.add_argument(f"--{name}", type=float, help=f"gradcheck's {name} (default: the dtype's)")
    audit.add_argument(
        "--seed", type=int, default=DEFAULTS.seed, help=f"seed for building the model and example_inputs (default: {DEFAULTS.seed})"
    )
    audit.add_argument("--max-memory-mb", type=float, help="a node's Jacobians larger than this are searched, not held")
    audit.add_argument("--jacobian-only", action="store_true", help="compare the Jacobians only (skip gradcheck's other checks)")
    audit.add_argument("--all-checks", action="store_true", help=ALL_CHECKS_HELP)
    audit.add_argument("--nondet-tol", type=float, default=0.0, help=NONDET_TOL_HELP)
    audit.add_argument(
        "--max-checks",
        type=int,
        metavar="N",
        help="check at most N distinct calls (default: every one); a call with exactly the inputs of an earlier "
        "call of the same node shares its check",
    )
    add_gradcheck_flags(audit)
    audit.add_argument("--json", action="store_true", help="one JSON document per node, then a summary, one a line")
    audit.add_argument(
        "--timeout", type=float, metavar="SECONDS", help="stop the audit after this long (default: no limit)"
    )
    return audit


def run_audit(args: argparse.Namespace) -> int:
    """Send the audit to a fresh worker and print what it found; the exit status."""
    from gradviz.schema.settings import dtype_defaults, memory_limit_bytes

    def settings() -> CheckSettings:
        own = dtype_defaults(args.dtype)
        tolerances = {n: getattr(own, n) if getattr(args, n) is None else getattr(args, n) for n in ("eps", "atol", "rtol")}
        return CheckSettings(
            device=args.device,
            dtype=args.dtype,
            **tolerances,
            seed=args.seed,
            max_jacobian_bytes=memory_limit_bytes(args.max_memory_mb) if args.max_memory_mb is not None else None,
            jacobian_only=args.jacobian_only,
            all_checks=args.all_checks,
            nondet_tol=args.nondet_tol,
            **gradcheck_flags(args),
        )

    args.function = None  # the target names the model
    if args.max_checks is not None and args.max_checks < 1:
        print_error("settings", f"--max-checks must be at least 1, not {args.max_checks}.", "", args.json, None)
        return ExitCode.ERROR
    reply = run_in_worker(args, settings, partial(AuditRequest, max_checks=args.max_checks))
    if reply is None:
        return ExitCode.ERROR
    found = reply.result
    if args.json:
        text = "\n".join([*(json_document(node) for node in found["nodes"]), json_document({"audit": found["audit"]})])
    else:
        text = found["table"]
    if not write_stdout(text):
        return ExitCode.ERROR
    return ExitCode.PASS if found["audit"]["passed"] else ExitCode.MISMATCH

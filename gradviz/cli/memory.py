"""``gradviz memory``: the fused conv-BN study, run in the worker like every other request (its
memory limit, its process) after a size that cannot fit in that limit is refused here, and
printed from the typed ``ConvBNStudy`` (``--json`` prints the worker's document as it came)."""

from __future__ import annotations

import argparse
import sys

from gradviz.cli.contract import ExitCode, json_document, short
from gradviz.cli.help_text import JSON_HELP
from gradviz.cli.output import print_error, report_worker_error, stdout_usable, write_stdout
from gradviz.schema.memory import TENSOR_COLUMNS, ConvBNStudy, tensor_rows
from gradviz.schema.requests import MemoryRequest
from gradviz.schema.settings import MemoryOptions
from gradviz.schema.units import KIB, format_bytes

MEMORY_DEFAULTS = MemoryOptions()


def add_memory_parser(commands: argparse._SubParsersAction) -> None:
    """The ``memory`` command; every default is ``MemoryOptions``' own, as the window's."""
    d = MEMORY_DEFAULTS
    shape = ",".join(map(str, d.shape))
    memory = commands.add_parser("memory", help="saved-tensor memory of fused vs unfused conv-BN")
    memory.add_argument("--layers", type=int, default=d.layers, help=f"number of conv-BN layers (default: {d.layers})")
    memory.add_argument("--shape", default=shape, help=f"input shape N,C,H,W (default: {shape})")
    memory.add_argument(
        "--out-channels", type=int, default=d.out_channels, help=f"conv output channels (default: {d.out_channels})"
    )
    memory.add_argument("--kernel", type=int, default=d.kernel, help=f"conv kernel size (default: {d.kernel})")
    memory.add_argument("--device", default=d.device, help=f"cpu, cuda or cuda:N (default: {d.device})")
    memory.add_argument("--dtype", default=d.dtype, choices=["float32", "float64"])
    memory.add_argument("--json", action="store_true", help=JSON_HELP)


def run_memory(args: argparse.Namespace) -> int:
    """Refuse a bad shape or a study too large for the worker's limit, run it, print it."""
    from gradviz.schema.errors import GradvizError
    from gradviz.schema.memory import check_study_fits
    from gradviz.worker.client import WorkerStartError, run_request
    from gradviz.worker.supervisor import default_memory_limit

    try:
        shape = tuple(int(v) for v in args.shape.split(","))
        if len(shape) != 4:
            raise ValueError
    except ValueError:
        print_error("settings", f"--shape must be four integers N,C,H,W, not {short(args.shape)!r}.", "", args.json, None)
        return ExitCode.ERROR
    if not stdout_usable(args.json):
        return ExitCode.ERROR
    try:
        options = MemoryOptions(args.layers, shape, args.out_channels, args.kernel, args.device, args.dtype)
        options.validate()
        check_study_fits(
            options.layers, options.shape, options.out_channels, options.kernel, options.dtype, options.device,
            default_memory_limit(),
        )
    except GradvizError as exc:
        print_error(exc.kind, exc.message, "", args.json, exc.to_dict())
        return ExitCode.ERROR
    try:
        reply = run_request(MemoryRequest(options=options, sweep=False), output=sys.stderr)
    except WorkerStartError as exc:
        print_error(str(exc.kind), exc.message, "", args.json, None)
        return ExitCode.ERROR
    except KeyboardInterrupt as exc:  # Ctrl+C, or SIGTERM / SIGHUP (Terminated): the worker's tree is gone
        print(f"gradviz: {str(exc) or 'interrupted'}", file=sys.stderr)
        raise SystemExit(getattr(exc, "exit_code", ExitCode.INTERRUPTED)) from None
    if not reply.ok:
        report_worker_error(reply.error or {"kind": "internal", "message": "No answer."}, args.json)
        return ExitCode.ERROR
    data = reply.result["study"]
    text = json_document(data) if args.json else format_memory(ConvBNStudy.from_dict(data))
    return ExitCode.PASS if write_stdout(text) else ExitCode.ERROR


def _kib(n: int | None) -> str:
    return format_bytes(n or 0, KIB)  # one unit for every row, so the numbers line up


def format_memory(study: ConvBNStudy) -> str:
    """Both variants' saved bytes, the formula, CUDA's peaks where measured, then the tables."""
    unfused, fused = study.unfused, study.fused
    n, c, h, w = study.shape
    lines = [
        f"conv-BN, {study.layers} layer(s), input {n}x{c}x{h}x{w} on {study.device}",
        f"  unfused (Conv2d + BatchNorm2d)   saved {_kib(unfused.saved_bytes)}",
        f"  fused (FusedConvBN2DFunction)    saved {_kib(fused.saved_bytes)} + {_kib(fused.ctx_attribute_bytes)} on ctx",
        f"  difference {_kib(study.saved_difference_bytes)}  (formula: {_kib(study.formula_bytes)})",
    ]
    if unfused.on_cuda:
        for what, name in (("peak", "peak_bytes"), ("end of forward", "end_of_forward_bytes")):
            lines.append(f"  CUDA {what}: unfused {_kib(getattr(unfused, name))}, fused {_kib(getattr(fused, name))}")
    lines.append(f"  outputs match: {study.outputs_match}, gradients match: {study.grads_match}")
    lines += _tensor_tables(study)
    return "\n".join(lines)


def _tensor_tables(study: ConvBNStudy) -> list[str]:
    """Each variant's saved tensors, one aligned row each: why one variant saves more."""
    tables = {name: tensor_rows(variant) for name, variant in study.variants.items()}
    widths = [max(len(row[k]) for rows in [[TENSOR_COLUMNS], *tables.values()] for row in rows) for k in range(5)]
    right = TENSOR_COLUMNS.index("bytes")  # numbers line up on the right

    def line(row: tuple[str, ...]) -> str:
        cells = [cell.rjust(w) if k == right else cell.ljust(w) for k, (cell, w) in enumerate(zip(row, widths))]
        return "    " + "  ".join(cells).rstrip()

    lines = []
    for name, rows in tables.items():
        lines += ["", f"  {name}: what it saves for backward", line(TENSOR_COLUMNS), *(line(row) for row in rows)]
    return lines

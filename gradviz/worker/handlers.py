"""What each request does, run inside a fresh run process (never in the worker's own).

Each takes the typed request (``gradviz.schema.requests``) with its id and folder (an
``Envelope``), parsed once by the worker. ``check`` loads the user's source and compares both
Jacobians (plus the graph panel's data, and with ``sweep`` options the eps sweep); ``sweep``
runs the eps sweep alone (``gradviz sweep``, the window's "Why?" panel); ``graph`` extracts the
autograd graph alone (``gradviz graph``); ``memory`` runs the conv-BN study and its sweep; ``region`` computes a rectangle of a block too large to
hold, cell by cell, at the inputs the check of the same code and settings used. Each returns
the JSON payload of its ``result`` message.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from gradviz.protocol import messages
from gradviz.schema.errors import Cancelled, ErrorKind, GradvizError, SettingsError
from gradviz.schema.requests import (
    AuditRequest,
    CheckRequest,
    CodeSource,
    Envelope,
    GraphRequest,
    MemoryRequest,
    RegionRequest,
    Request,
    SweepRequest,
)
from gradviz.schema.settings import CheckSettings, SweepOptions
from gradviz.schema.sweep import SWEEP_FAILED

PROGRESS_INTERVAL_S = 0.05
BATCHED_CRASH = "The Function's process died inside a batched (vmap) call"  # the note a rerun without vmap opens with
Send = Callable[[dict[str, Any]], None]


R = TypeVar("R", CheckRequest, SweepRequest, GraphRequest, MemoryRequest, RegionRequest, AuditRequest)


def _job(job: Envelope | Request, kind: type[R]) -> tuple[Envelope, R]:
    """The request with its id and folder; a bare request (a test, a direct call) is request 0,
    its files written under the current folder."""
    envelope = job if isinstance(job, Envelope) else Envelope(0, ".", job)
    if not isinstance(envelope.request, kind):
        raise TypeError(f"a {kind.op} handler was given a {envelope.request.op} request")
    return envelope, envelope.request


def _load(code: CodeSource):
    """The user's code: a ``target`` (``pkg.mod:Name`` or ``file.py[:Name]``, with ``inputs_path``
    a file of arguments saved by torch.save), a file by ``path``, or editor text."""
    from gradviz.core.loader import load_file, load_source, load_target

    if code.node is not None:  # only a sweep or a region is of one audit node (``_node``)
        raise SettingsError("A node of a model audit is checked, and its graph drawn, by the audit itself.")
    if code.target:
        loaded = load_target(code.target, inputs_path=code.inputs_path)
    elif code.path:
        loaded = load_file(code.path)
    else:
        loaded = load_source(code.source or "", code.filename or "<editor>")
    if code.parameters:  # pkg.mod:factory --parameters: the module it returns, with them
        from gradviz.core.module_target import use_module_parameters

        use_module_parameters(loaded, code.function, code.parameters)
    return loaded


class _Progress:
    """A progress callback that sends at most one message per PROGRESS_INTERVAL_S (and the last),
    each naming what it counts: the core's tracker sets ``unit`` (``core.jacobian.Progress``)."""

    def __init__(self, job: Envelope, send: Send | None) -> None:
        self.job, self.send, self.last, self.unit = job, send, 0.0, ""

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if self.send is not None and (now - self.last >= PROGRESS_INTERVAL_S or done == total):
            self.last = now
            self.send(messages.progress(self.job.id, done, total, self.unit))


def handle_check(job: Envelope | CheckRequest, send: Send | None) -> dict[str, Any]:
    """Both Jacobians compared, with what the request adds: the sweep, the graph, the report
    and its table, the blocks as files in the run's folder or saved where the user said."""
    from gradviz.core.check import check_source
    from gradviz.schema.report import ExistingArrays, format_table, result_to_dict, save_blocks
    from gradviz.schema.result_files import write_check_result

    envelope, request = _job(job, CheckRequest)
    progress = _Progress(envelope, send)
    loaded = _load(request.code)
    settings = request.settings
    result = check_source(loaded, request.code.function, settings, progress=progress, maps=request.maps)
    if request.batched_crash:
        result.notes.append(
            f"{BATCHED_CRASH}, which some code does not survive (.data on a batched tensor, for one); "
            "gradviz ran the check again with one call per row and column, as gradcheck does."
        )
    if request.sweep is not None:
        result.sweep = _sweep_or_warning(loaded, request, request.sweep, result.warnings, progress)
    summary = write_check_result(result, envelope.out_dir) if request.arrays else result_to_dict(result)
    if request.graph:
        summary["graph"], summary["graph_error"] = _graph_or_error(loaded, request.code, settings)
    if request.report:
        summary["report"] = result_to_dict(result)
        summary["table"] = format_table(result)
    if request.save:
        try:
            save_blocks(result, request.save, overwrite=request.overwrite)
        except ExistingArrays as exc:  # its message names the files and says what to do
            error = GradvizError(str(exc))
            error.kind = ErrorKind.IO
            raise error from None
        except OSError as exc:
            error = GradvizError(f"Cannot write {request.save}: {exc.strerror or exc}")
            error.kind = ErrorKind.IO
            raise error from None
    return summary


def _sweep_or_warning(loaded, request: CheckRequest, options: SweepOptions, warnings: list[str], progress):
    """The eps sweep beside a check; a failure here is a warning, never a change to the check."""
    from gradviz.core.sweep import sweep_source

    try:
        return sweep_source(loaded, request.code.function, request.settings, options=options, progress=progress)
    except Cancelled:
        raise
    except GradvizError as exc:
        warnings.append(SWEEP_FAILED.format(why=exc.message))
        return None


def handle_sweep(job: Envelope | SweepRequest, send: Send | None) -> dict[str, Any]:
    """``gradviz sweep`` and the "Why?" panel: the eps sweep of one Function, as JSON and as a table."""
    from gradviz.core.sweep import sweep_source
    from gradviz.schema.report import format_sweep

    envelope, request = _job(job, SweepRequest)
    progress = _Progress(envelope, send)
    if request.code.node is not None:
        from gradviz.core.audit_node import find_node
        from gradviz.core.sweep import sweep_function

        node = find_node(request.code, request.settings)
        sweep = sweep_function(
            node.fn, node.inputs, node.settings, options=request.options, progress=progress, name=node.name,
            filename=node.filename,
        )  # fmt: skip
    else:
        sweep = sweep_source(
            _load(request.code), request.code.function, request.settings, options=request.options, progress=progress
        )
    if request.batched_crash:
        sweep.notes.append(
            f"{BATCHED_CRASH}; gradviz swept again with one call per perturbed input."
        )
    return {"sweep": sweep.to_dict(), "table": format_sweep(sweep)}


def _graph_or_error(loaded, code: CodeSource, settings: CheckSettings) -> tuple[dict | None, str | None]:
    """The graph panel's data for the checked Function; a failure here never spoils the check."""
    from gradviz.core.graph import graph_of_source
    from gradviz.worker.escaped import escaped_error

    try:
        graph = graph_of_source(loaded, code.function, settings)
    except GradvizError as exc:
        return None, exc.message
    except BaseException as exc:  # SystemExit, KeyboardInterrupt... from the user's code: still no graph
        return None, escaped_error(exc, code)["message"]
    return graph.to_dict(), None


def handle_graph(job: Envelope | GraphRequest, send: Send | None) -> dict[str, Any]:
    """``gradviz graph``: the autograd graph of one forward, its saved tensors, the backward order."""
    from gradviz.core.graph import graph_of_source
    from gradviz.schema.report import format_graph

    _, request = _job(job, GraphRequest)
    loaded = _load(request.code)
    graph = graph_of_source(loaded, request.code.function, request.settings)
    return {"graph": graph.to_dict(), "table": format_graph(graph)}


def handle_memory(job: Envelope | MemoryRequest, send: Send | None) -> dict[str, Any]:
    """The conv-BN study for the memory panel, plus a sweep over layers and batch sizes; progress
    after the study and after each depth of the sweep."""
    from gradviz.core.memory import conv_bn_study, memory_sweep
    from gradviz.schema.memory import check_study_fits
    from gradviz.worker.memory_limit import default_memory_limit

    envelope, request = _job(job, MemoryRequest)
    options, sweep_wanted = request.options, request.sweep
    n, c, h, w = options.shape
    # each conv (stride 1, no padding) shrinks H and W by kernel - 1: sweep only stacks that fit
    deepest = max(options.layers, min(8, (min(h, w) - 1) // max(options.kernel - 1, 1)))
    total = 1 + (deepest if sweep_wanted else 0)
    # refused before a byte is allocated: the sweep's largest batch (4N) too, when it runs
    batch = 4 * n if sweep_wanted else n
    check_study_fits(
        max(options.layers, deepest if sweep_wanted else 1),
        (batch, c, h, w),
        options.out_channels,
        options.kernel,
        options.dtype,
        options.device,
        default_memory_limit(),
    )

    def progress(done: int) -> None:
        if send is not None:
            send(messages.progress(envelope.id, done, total))

    study = conv_bn_study(
        options.layers, options.shape, options.out_channels, options.kernel, options.device, options.dtype
    )
    progress(1)
    if not sweep_wanted:
        return {"study": study.to_dict(), "sweep": []}
    rows = []
    for depth in range(1, deepest + 1):  # one depth at a time, so the window can show how far it is
        rows += memory_sweep(
            layers=[depth],
            batches=tuple(sorted({1, n, 4 * n})),
            image=(c, h, w),
            out_channels=options.out_channels,
            kernel=options.kernel,
            device=options.device,
            dtype=options.dtype,
        )
        progress(1 + depth)
    return {"study": study.to_dict(), "sweep": [row.to_dict() for row in rows]}


def handle_region(job: Envelope | RegionRequest, send: Send | None) -> dict[str, Any]:
    """The window's large-block page: a rectangle of one block, computed exactly; the arrays
    travel as .npy files, as a check's do. The inputs are the check's: the same code, Function
    and settings (seed, dtype, device, jitter) make them."""
    from gradviz.core.region import region_of_source
    from gradviz.schema.result_files import write_region

    envelope, request = _job(job, RegionRequest)
    spec = request.region
    rows = range(spec.row0, spec.row0 + spec.rows)
    cols = range(spec.col0, spec.col0 + spec.cols)
    block, progress = (spec.output, spec.input), _Progress(envelope, send)
    if request.code.node is not None:
        from gradviz.core.audit_node import find_node
        from gradviz.core.region import region_of_function

        node = find_node(request.code, request.settings)
        region = region_of_function(node.fn, node.inputs, node.settings, block, rows, cols, progress=progress)
    else:
        region = region_of_source(
            _load(request.code), request.code.function, request.settings, block, rows, cols, progress=progress
        )
    return write_region(region, envelope.out_dir)


def handle_audit(job: Envelope | AuditRequest, send: Send | None) -> dict[str, Any]:
    """``gradviz audit``: one forward of the model named by the target, every custom node call
    checked at its captured inputs; the summary, one document per node and the table."""
    from gradviz.core.audit import audit_callable
    from gradviz.core.audit_target import load_model_target
    from gradviz.schema.audit import format_audit_table

    envelope, request = _job(job, AuditRequest)
    code, settings = request.code, request.settings
    built = load_model_target(
        path=code.path, target=code.target, name=code.function, inputs_path=code.inputs_path, settings=settings
    )
    audit = audit_callable(
        built.model,
        built.inputs,
        settings,
        name=built.name,
        max_checks=request.max_checks,
        progress=_Progress(envelope, send),
        graphs=request.node_files,
        # fast mode: the verdict first; the CLI shows maps of failing nodes only, the window opens any node
        maps="eager" if request.node_files else "failing",
    )
    nodes = [node.to_dict() for node in audit.nodes]
    if request.node_files:  # the window opens a node's maps with its check-result loader, and its graph
        from gradviz.schema.result_files import write_check_result

        for place, (node, document) in enumerate(zip(audit.nodes, nodes), start=1):
            if node.result is not None:
                document["files"] = write_check_result(node.result, f"{envelope.out_dir}/node{place}")
                document["graph"], document["graph_error"] = node.graph, node.graph_error
                document["inputs"] = node.inputs  # its sweep and regions find the call again by it
    return {**audit.summary_dict(), "nodes": nodes, "table": format_audit_table(audit)}


HANDLERS = {
    "audit": handle_audit,
    "check": handle_check,
    "sweep": handle_sweep,
    "graph": handle_graph,
    "memory": handle_memory,
    "region": handle_region,
}

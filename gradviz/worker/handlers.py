"""What each request does, run inside a fresh run process (never in the worker's own).

``check`` loads the user's source and compares both Jacobians (plus the graph panel's data, and
with ``"sweep": true`` the eps sweep); ``sweep`` runs the eps sweep alone (``gradviz sweep``, the
window's "Why?" panel); ``graph`` extracts the autograd graph alone (``gradviz graph``); ``memory``
runs the conv-BN study and its sweep; ``region`` computes a rectangle of a block too large to
hold, cell by cell, at the inputs the check of the same code and settings used. Each returns the JSON payload of its ``result`` message.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from gradviz.protocol import messages
from gradviz.schema.errors import Cancelled, ErrorKind, GradvizError
from gradviz.schema.settings import CheckSettings, MemoryOptions, SweepOptions

PROGRESS_INTERVAL_S = 0.05
Send = Callable[[dict[str, Any]], None]


def _load(request: dict[str, Any]):
    """The user's code: a ``target`` (``pkg.mod:Name`` or ``file.py[:Name]``, with ``inputs_path``
    a file of arguments saved by torch.save), a file by ``path``, or editor text."""
    from gradviz.core.loader import load_file, load_source, load_target

    if request.get("target"):
        loaded = load_target(request["target"], inputs_path=request.get("inputs_path"))
        request.setdefault("filename", loaded.filename)  # so an escaped error names the module's lines
    elif request.get("path"):
        loaded = load_file(request["path"])
    else:
        loaded = load_source(request["source"], request.get("filename") or "<editor>")
    if request.get("parameters"):  # pkg.mod:factory --parameters: the module it returns, with them
        from gradviz.core.module_target import use_module_parameters

        use_module_parameters(loaded, request.get("function"), request["parameters"])
    return loaded


def _progress(request: dict[str, Any], send: Send) -> Callable[[int, int], None]:
    """A progress callback that sends at most one message per PROGRESS_INTERVAL_S (and the last)."""
    last = [0.0]

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= PROGRESS_INTERVAL_S or done == total:
            last[0] = now
            send(messages.progress(request["id"], done, total))

    return progress


def handle_check(request: dict[str, Any], send: Send) -> dict[str, Any]:
    from gradviz.core.check import check_source
    from gradviz.schema.report import ExistingArrays, format_table, result_to_dict, save_blocks
    from gradviz.schema.result_files import write_check_result

    progress = _progress(request, send)
    loaded = _load(request)
    settings = CheckSettings.from_dict(request.get("settings", {}))
    result = check_source(loaded, request.get("function"), settings, progress=progress)
    if request.get("batched_crash"):
        result.notes.append(
            "The Function's process died inside a batched (vmap) call, which some code does not survive "
            "(.data on a batched tensor, for one); gradviz ran the check again with one call per row and "
            "column, as gradcheck does."
        )
    if request.get("sweep"):
        result.sweep = _sweep_or_warning(loaded, request, settings, result.warnings, progress)
    summary = write_check_result(result, request["out_dir"]) if request.get("arrays", True) else result_to_dict(result)
    if request.get("graph", True):
        summary["graph"], summary["graph_error"] = _graph_or_error(loaded, request, settings)
    if request.get("report"):
        summary["report"] = result_to_dict(result)
        summary["table"] = format_table(result)
    if request.get("save"):
        try:
            save_blocks(result, request["save"], overwrite=bool(request.get("overwrite")))
        except ExistingArrays as exc:  # its message names the files and says what to do
            error = GradvizError(str(exc))
            error.kind = ErrorKind.IO
            raise error from None
        except OSError as exc:
            error = GradvizError(f"Cannot write {request['save']}: {exc.strerror or exc}")
            error.kind = ErrorKind.IO
            raise error from None
    return summary


def _sweep_or_warning(loaded, request: dict[str, Any], settings: CheckSettings, warnings: list[str], progress):
    """The eps sweep beside a check; a failure here is a warning, never a change to the check."""
    from gradviz.core.sweep import sweep_source

    try:
        options = SweepOptions.from_dict(request.get("sweep_options") or {})
        return sweep_source(loaded, request.get("function"), settings, options=options, progress=progress)
    except Cancelled:
        raise
    except GradvizError as exc:
        warnings.append(f"The eps sweep could not run: {exc.message}")
        return None


def handle_sweep(request: dict[str, Any], send: Send) -> dict[str, Any]:
    """``gradviz sweep`` and the "Why?" panel: the eps sweep of one Function, as JSON and as a table."""
    from gradviz.core.sweep import sweep_source
    from gradviz.schema.report import format_sweep

    settings = CheckSettings.from_dict(request.get("settings", {}))
    options = SweepOptions.from_dict(request.get("options") or {})
    loaded = _load(request)
    sweep = sweep_source(loaded, request.get("function"), settings, options=options, progress=_progress(request, send))
    if request.get("batched_crash"):
        sweep.notes.append(
            "The Function's process died inside a batched (vmap) call; gradviz swept again with one call "
            "per perturbed input."
        )
    return {"sweep": sweep.to_dict(), "table": format_sweep(sweep)}


def _graph_or_error(loaded, request: dict[str, Any], settings: CheckSettings) -> tuple[dict | None, str | None]:
    """The graph panel's data for the checked Function; a failure here never spoils the check."""
    from gradviz.core.graph import graph_of_source
    from gradviz.worker.escaped import escaped_error

    try:
        graph = graph_of_source(loaded, request.get("function"), settings)
    except GradvizError as exc:
        return None, exc.message
    except BaseException as exc:  # SystemExit, KeyboardInterrupt... from the user's code: still no graph
        return None, escaped_error(exc, request)["message"]
    return graph.to_dict(), None


def handle_graph(request: dict[str, Any], send: Send) -> dict[str, Any]:
    """``gradviz graph``: the autograd graph of one forward, its saved tensors, the backward order."""
    from gradviz.core.graph import graph_of_source
    from gradviz.schema.report import format_graph

    settings = CheckSettings.from_dict(request.get("settings", {}))
    loaded = _load(request)
    graph = graph_of_source(loaded, request.get("function"), settings)
    return {"graph": graph.to_dict(), "table": format_graph(graph)}


def handle_memory(request: dict[str, Any], send: Send) -> dict[str, Any]:
    """The conv-BN study for the memory panel, plus a sweep over layers and batch sizes; progress
    after the study and after each depth of the sweep."""
    from gradviz.core.memory import conv_bn_study, memory_sweep
    from gradviz.schema.memory import check_study_fits
    from gradviz.worker.memory_limit import default_memory_limit

    options = MemoryOptions.from_dict(request.get("options", {}))
    sweep_wanted = request.get("sweep", True)
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
        if send is not None and "id" in request:
            send(messages.progress(request["id"], done, total))

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


def handle_region(request: dict[str, Any], send: Send) -> dict[str, Any]:
    """The window's large-block page: ``region`` = {output, input, row0, col0, rows, cols} of the
    block, computed exactly; the arrays travel as .npy files, as a check's do. The inputs are the
    check's: the same code, Function and settings (seed, dtype, device, jitter) make them."""
    from gradviz.core.region import region_of_source
    from gradviz.schema.errors import SettingsError
    from gradviz.schema.result_files import write_region

    try:
        spec = request["region"]
        block = (int(spec["output"]), int(spec["input"]))
        rows = range(int(spec["row0"]), int(spec["row0"]) + int(spec["rows"]))
        cols = range(int(spec["col0"]), int(spec["col0"]) + int(spec["cols"]))
    except (KeyError, TypeError, ValueError):
        raise SettingsError(
            "A region request needs region = {output, input, row0, col0, rows, cols}, all integers."
        ) from None
    settings = CheckSettings.from_dict(request.get("settings", {}))
    loaded = _load(request)
    region = region_of_source(
        loaded, request.get("function"), settings, block, rows, cols, progress=_progress(request, send)
    )
    return write_region(region, request["out_dir"])


def handle_audit(request: dict[str, Any], send: Send) -> dict[str, Any]:
    """``gradviz audit``: one forward of the model named by the target, every custom node call
    checked at its captured inputs; the summary, one document per node and the table."""
    from gradviz.core.audit import audit_callable
    from gradviz.core.audit_target import load_model_target
    from gradviz.schema.audit import format_audit_table

    settings = CheckSettings.from_dict(request.get("settings", {}))
    built = load_model_target(
        path=request.get("path"),
        target=request.get("target"),
        name=request.get("function"),
        inputs_path=request.get("inputs_path"),
        settings=settings,
    )
    max_checks = request.get("max_checks")
    audit = audit_callable(
        built.model, built.inputs, settings, name=built.name, max_checks=max_checks, progress=_progress(request, send)
    )
    nodes = [node.to_dict() for node in audit.nodes]
    if request.get("node_files"):  # the window opens a node's maps with its check-result loader
        from gradviz.schema.result_files import write_check_result

        for place, (node, document) in enumerate(zip(audit.nodes, nodes), start=1):
            if node.result is not None:
                document["files"] = write_check_result(node.result, f"{request['out_dir']}/node{place}")
    return {**audit.summary_dict(), "nodes": nodes, "table": format_audit_table(audit)}


HANDLERS = {
    "audit": handle_audit,
    "check": handle_check,
    "sweep": handle_sweep,
    "graph": handle_graph,
    "memory": handle_memory,
    "region": handle_region,
}

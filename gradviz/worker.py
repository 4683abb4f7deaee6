"""The worker process: user code, torch and CUDA run here, never in the GUI process.

Run as ``python -m gradviz.worker``. It reads one JSON request per line on stdin and answers
with JSON lines on what was its stdout. Before any user code runs, file descriptor 1 is pointed
at stderr, so whatever the user's code prints (from Python or C) arrives on stderr and can
never corrupt the protocol. Arrays are written as .npy files into the directory each request
names; messages carry their paths.

Messages: ``ready`` (once, with torch's version and the CUDA devices), then per request
``progress`` (rate-limited), and finally ``result`` or ``error``.

Whatever the user's code does, the worker answers or dies; it never answers wrongly. Every
exception it raises, ``SystemExit`` and ``KeyboardInterrupt`` included, becomes an ``error``
naming the line, and the worker serves on. Reading stdin (``input()``) gets end-of-file
instead of the next request. What it cannot catch (``os._exit``, a segfault, an endless loop)
ends or stalls the process, and the client says so; for those, a client may set
``GRADVIZ_FAULT_FILE``: fatal signals, ``SIGUSR1`` and ``os._exit`` then write the Python
stack there, so the client can still name the line. ``GRADVIZ_PARENT_PID`` (Linux) makes the
worker die with the process that started it.

Check requests take optional fields besides ``source``/``filename``/``function``/``settings``/
``out_dir``: ``path`` (load this file instead of ``source``), ``graph`` (default true),
``arrays`` (write the .npy files, default true), ``report`` (add the CLI's JSON object as
``report`` and its table as ``table``) and ``save`` (a directory for ``gradviz check --save``).
"""

from __future__ import annotations

import faulthandler
import json
import os
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import IO, Any

PROGRESS_INTERVAL_S = 0.05


class Channel:
    """The protocol's end of the pipe: one JSON object per line, flushed at once."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def send(self, message: dict[str, Any]) -> None:
        self._stream.write(json.dumps(message, allow_nan=False) + "\n")
        self._stream.flush()


def take_stdout() -> IO[str]:
    """Keep the real stdout for the protocol and send fd 1 (user prints) to stderr."""
    sys.stdout.flush()
    protocol = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol


def take_stdin() -> IO[str]:
    """Keep the real stdin for requests; user code reading stdin gets end-of-file at once."""
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8", errors="replace")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdin = open(os.devnull, encoding="utf-8")  # lives as long as the process
    return requests


_FAULT_FILE: IO[str] | None = None


def watch_faults(path: str | None) -> None:
    """Stacks for what cannot be caught: fatal signals, SIGUSR1 (a client about to kill a hung
    worker asks for it) and os._exit, written to ``path`` for the client to read."""
    global _FAULT_FILE
    if not path:
        return
    _FAULT_FILE = open(path, "w", encoding="utf-8")  # faulthandler keeps its fd
    faulthandler.enable(_FAULT_FILE, all_threads=True)
    if hasattr(faulthandler, "register"):
        faulthandler.register(signal.SIGUSR1, _FAULT_FILE, all_threads=True)
    real_exit, worker = os._exit, os.getpid()

    def traced_exit(code: int) -> None:
        if _FAULT_FILE is not None and os.getpid() == worker:  # not a forked child of the user's code
            _FAULT_FILE.write(f"gradviz: os._exit({code!r}) called\n")
            _FAULT_FILE.flush()
            faulthandler.dump_traceback(_FAULT_FILE, all_threads=False)
        real_exit(code)

    os._exit = traced_exit


def die_with_parent(parent: str | None) -> None:
    """Linux: be killed when the client that started us dies (an orphan may spin forever)."""
    if not parent or not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != int(parent):  # the parent died before prctl took effect
        os._exit(1)


def devices() -> list[dict[str, Any]]:
    import torch

    found = [{"name": "cpu", "label": "CPU", "available": True, "reason": ""}]
    if torch.cuda.is_available():
        for k in range(torch.cuda.device_count()):
            found.append(
                {"name": f"cuda:{k}", "label": torch.cuda.get_device_name(k), "available": True, "reason": ""}
            )
    else:
        why = (
            "this PyTorch build has no CUDA support"
            if torch.version.cuda is None
            else "no CUDA device is visible"
        )
        found.append({"name": "cuda", "label": "CUDA", "available": False, "reason": why})
    return found


def handle_check(request: dict[str, Any], channel: Channel) -> dict[str, Any]:
    from gradviz.core.check import check_source
    from gradviz.core.loader import load_file, load_source
    from gradviz.core.report import format_table, result_to_dict, save_blocks
    from gradviz.core.serialize import write_check_result
    from gradviz.schema.errors import GradvizError
    from gradviz.schema.settings import CheckSettings

    last = [0.0]

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= PROGRESS_INTERVAL_S or done == total:
            last[0] = now
            channel.send({"id": request["id"], "type": "progress", "done": done, "total": total})

    if request.get("path"):
        loaded = load_file(request["path"])
    else:
        loaded = load_source(request["source"], request.get("filename") or "<editor>")
    settings = CheckSettings.from_dict(request.get("settings", {}))
    result = check_source(loaded, request.get("function"), settings, progress=progress)
    summary = write_check_result(result, request["out_dir"]) if request.get("arrays", True) else {}
    summary.setdefault("passed", result.passed)
    summary["functions"] = list(loaded.functions)
    if request.get("graph", True):
        summary["graph"], summary["graph_error"] = _graph_or_error(loaded, request, settings)
    if request.get("report"):
        summary["report"] = result_to_dict(result)
        summary["table"] = format_table(result)
    if request.get("save"):
        try:
            save_blocks(result, request["save"])
        except OSError as exc:
            error = GradvizError(f"Cannot write {request['save']}: {exc.strerror or exc}")
            error.kind = "io"
            raise error from None
    return summary


def _graph_or_error(loaded, request: dict[str, Any], settings) -> tuple[dict | None, str | None]:
    """The graph panel's data for the checked Function; a failure here never spoils the check."""
    from gradviz.core.graph import graph_of_source
    from gradviz.schema.errors import GradvizError

    try:
        graph = graph_of_source(
            loaded, request.get("function"), device=settings.device, dtype=settings.dtype, seed=settings.seed
        )
    except GradvizError as exc:
        return None, exc.message
    except BaseException as exc:  # SystemExit, KeyboardInterrupt... from the user's code: still no graph
        return None, escaped_error(exc, request)["message"]
    return graph.to_dict(), None


def handle_memory(request: dict[str, Any], channel: Channel) -> dict[str, Any]:
    """The conv-BN study for the memory panel, plus a sweep over layers and batch sizes."""
    from gradviz.core.memory import conv_bn_study, memory_sweep

    options = {
        "layers": 3,
        "shape": (8, 3, 32, 32),
        "out_channels": 16,
        "kernel": 3,
        "device": "cpu",
        "dtype": "float32",
        **request.get("options", {}),
    }
    options["shape"] = tuple(options["shape"])
    study = conv_bn_study(**options)
    n, c, h, w = options["shape"]
    # each conv (stride 1, no padding) shrinks H and W by kernel - 1: sweep only stacks that fit
    deepest = max(options["layers"], min(8, (min(h, w) - 1) // max(options["kernel"] - 1, 1)))
    sweep = memory_sweep(
        layers=range(1, deepest + 1),
        batches=tuple(sorted({1, n, 4 * n})),
        image=(c, h, w),
        out_channels=options["out_channels"],
        kernel=options["kernel"],
        device=options["device"],
        dtype=options["dtype"],
    )
    return {"study": study.to_dict(), "sweep": [row.to_dict() for row in sweep]}


HANDLERS = {"check": handle_check, "memory": handle_memory}


def serve(requests: IO[str], channel: Channel) -> None:
    from gradviz.schema.errors import GradvizError

    channel.send({"type": "ready", "pid": os.getpid(), "torch": _torch_version(), "devices": devices()})
    for line in requests:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            if not isinstance(request, dict):
                raise ValueError("not an object")
        except ValueError as exc:
            error = {"kind": "internal", "message": f"Bad request line ({exc}): {line[:200]!r}"}
            channel.send({"id": None, "type": "error", "op": None, "error": error})
            continue
        op = request.get("op")
        if op == "quit":
            return
        try:
            if op not in HANDLERS:
                raise GradvizError(f"Unknown request {op!r}.")
            payload = HANDLERS[op](request, channel)
            channel.send({"id": request.get("id"), "type": "result", "op": op, "result": payload})
        except GradvizError as exc:
            channel.send({"id": request.get("id"), "type": "error", "op": op, "error": exc.to_dict()})
        except BaseException as exc:  # user code: SystemExit, KeyboardInterrupt...
            error = escaped_error(exc, request)
            channel.send({"id": request.get("id"), "type": "error", "op": op, "error": error})


# The method gradviz called, named by the outermost frame in the user's file.
_PHASES = {"<module>": "import", "example_inputs": "example_inputs", "backward": "backward"}


def escaped_error(exc: BaseException, request: dict[str, Any]) -> dict[str, Any]:
    """An exception the core did not turn into a GradvizError, as a structured error.

    Raised in the user's file (SystemExit or KeyboardInterrupt anywhere, any exception in a
    place the core does not wrap) it names the line like any user-code error; otherwise it is
    a gradviz bug, or the machine running out of memory, and says so plainly.
    """
    from gradviz.schema.errors import from_exception, out_of_memory

    filename = _request_filename(request)
    tb, outermost = exc.__traceback__, None
    while tb is not None:
        if outermost is None and tb.tb_frame.f_code.co_filename == filename:
            outermost = tb.tb_frame.f_code
        tb = tb.tb_next
    if outermost is not None:
        kind = _PHASES.get(outermost.co_name, "forward")
        context = {"import": "Running the file", "example_inputs": "example_inputs(device, dtype)"}.get(
            kind, outermost.co_qualname
        )
        return from_exception(kind, exc, filename, context).to_dict()
    memory = out_of_memory(exc)
    if memory:
        return {"kind": "out_of_memory", "message": f"Out of memory: {memory}"}
    print("".join(traceback.format_exception(exc)), file=sys.stderr)
    if isinstance(exc, KeyboardInterrupt):
        return {"kind": "cancelled", "message": "Interrupted (KeyboardInterrupt)."}
    if isinstance(exc, SystemExit):
        message = f"Something called sys.exit({exc.code!r}) during the run; gradviz stopped it there."
        return {"kind": "crashed", "message": message}
    return {"kind": "internal", "message": f"Internal error in gradviz: {type(exc).__name__}: {exc}"}


def _request_filename(request: dict[str, Any]) -> str:
    """The file name user code runs under: what the loader gives the code it compiles."""
    if request.get("path"):
        return str(Path(request["path"]).resolve())
    return request.get("filename") or "<editor>"


def _torch_version() -> str:
    import torch

    return torch.__version__


def main() -> int:
    die_with_parent(os.environ.get("GRADVIZ_PARENT_PID"))
    watch_faults(os.environ.get("GRADVIZ_FAULT_FILE"))
    channel = Channel(take_stdout())
    serve(take_stdin(), channel)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

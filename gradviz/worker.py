"""The worker process: user code, torch and CUDA run here, never in the GUI process.

Run as ``python -m gradviz.worker``. It reads one JSON request per line on stdin and answers
with JSON lines on what was its stdout. Before any user code runs, file descriptor 1 is pointed
at stderr, so whatever the user's code prints (from Python or C) arrives on stderr and can
never corrupt the protocol. Arrays are written as .npy files into the directory each request
names; messages carry their paths.

Messages: ``ready`` (once, with torch's version and the CUDA devices), then per request
``progress`` (rate-limited), and finally ``result`` or ``error``.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
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
    from gradviz.core.check import CheckSettings, check_source
    from gradviz.core.loader import load_source
    from gradviz.core.serialize import write_check_result

    last = [0.0]

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= PROGRESS_INTERVAL_S or done == total:
            last[0] = now
            channel.send({"id": request["id"], "type": "progress", "done": done, "total": total})

    loaded = load_source(request["source"], request.get("filename") or "<editor>")
    settings = CheckSettings(**request.get("settings", {}))
    result = check_source(loaded, request.get("function"), settings, progress=progress)
    summary = write_check_result(result, request["out_dir"])
    summary["functions"] = list(loaded.functions)
    summary["graph"], summary["graph_error"] = _graph_or_error(loaded, request, settings)
    return summary


def _graph_or_error(loaded, request: dict[str, Any], settings) -> tuple[dict | None, str | None]:
    """The graph panel's data for the checked Function; a failure here never spoils the check."""
    from gradviz.core.errors import GradvizError
    from gradviz.core.graph import graph_of_source

    try:
        graph = graph_of_source(
            loaded, request.get("function"), device=settings.device, dtype=settings.dtype, seed=settings.seed
        )
    except GradvizError as exc:
        return None, exc.message
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
    sweep = memory_sweep(
        layers=range(1, 9),
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
    from gradviz.core.errors import GradvizError

    channel.send({"type": "ready", "pid": os.getpid(), "torch": _torch_version(), "devices": devices()})
    for line in requests:
        if not line.strip():
            continue
        request = json.loads(line)
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
        except Exception as exc:  # a gradviz bug: say so plainly, keep serving
            detail = "".join(traceback.format_exception(exc))
            print(detail, file=sys.stderr)
            message = f"Internal error in gradviz: {type(exc).__name__}: {exc}"
            channel.send(
                {
                    "id": request.get("id"),
                    "type": "error",
                    "op": op,
                    "error": {"kind": "internal", "message": message},
                }
            )


def _torch_version() -> str:
    import torch

    return torch.__version__


def main() -> int:
    channel = Channel(take_stdout())
    serve(sys.stdin, channel)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Getting torch ready in the worker before any run is forked from it.

Forking is only safe if the worker never started OpenMP's thread pool (a forked child would
hang in its first parallel op) and never initialised CUDA (a forked child cannot use it). So
the worker runs torch single-threaded, gives each run the thread count torch would have
chosen, and asks a throw-away process which CUDA devices exist (forked, or a fresh interpreter
where runs are spawned: ``start_method``). With ``warm``, the
first-call costs every check pays (module imports, vmap's first batch)
are paid here, once, on tiny tensors, before the user asks.
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any


def prepare_torch(*, warm: bool) -> tuple[int, list[dict[str, Any]], str]:
    """(threads for each run, devices, torch's version)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    if warm:
        from gradviz.worker.first_calls import warm_up

        warm_up()
    return threads, devices(), torch.__version__


def devices() -> list[dict[str, Any]]:
    """CPU, and the CUDA devices a forked run could use (found without initialising CUDA here)."""
    import torch

    from gradviz.schema.settings import NO_CUDA_DEVICE

    found = [{"name": "cpu", "label": "CPU", "available": True, "reason": ""}]
    if torch.version.cuda is None:
        reason = "this PyTorch build has no CUDA support"
        return [*found, {"name": "cuda", "label": "CUDA", "available": False, "reason": reason}]
    cuda = _probe_cuda()
    if not cuda:
        reason = NO_CUDA_DEVICE
        return [*found, {"name": "cuda", "label": "CUDA", "available": False, "reason": reason}]
    return found + [{"name": f"cuda:{k}", "label": name, "available": True, "reason": ""} for k, name in enumerate(cuda)]


PROBE_TIMEOUT_S = 120.0  # a fresh interpreter importing torch and initialising CUDA
STARTUP_WAIT_S = 120.0  # how long the worker's ready waits for its first spawned run to import torch


def _cuda_names() -> list[str]:
    try:
        import torch

        if torch.cuda.is_available():
            return [torch.cuda.get_device_name(k) for k in range(torch.cuda.device_count())]
    except Exception:
        pass
    return []


def _probe_cuda() -> list[str]:
    """Names of the CUDA devices, asked in another process so this one never initialises CUDA."""
    from gradviz.worker.start_method import cuda_probe_command

    command = cuda_probe_command()
    if command is not None:
        try:
            done = subprocess.run(command, stdout=subprocess.PIPE, timeout=PROBE_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return []
        return _names(done.stdout)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.write(write_end, json.dumps(_cuda_names()).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    data = b""
    while chunk := os.read(read_end, 65536):
        data += chunk
    os.close(read_end)
    os.waitpid(pid, 0)
    return _names(data)


def _names(data: bytes) -> list[str]:
    try:
        return [str(n) for n in json.loads(data or b"[]")]
    except ValueError:
        return []


if __name__ == "__main__":  # the probe, in a fresh interpreter (spawn)
    print(json.dumps(_cuda_names()))

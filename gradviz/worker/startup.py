"""Getting torch ready in the worker before any run is forked from it.

Forking is only safe if the worker never started OpenMP's thread pool (a forked child would
hang in its first parallel op) and never initialised CUDA (a forked child cannot use it). So
the worker runs torch single-threaded, gives each run the thread count torch would have
chosen, and asks a throw-away forked process which CUDA devices exist. With ``warm``, the
first-call costs every check pays (autograd's first VJP imports sympy, vmap's first batch)
are paid here, once, on tiny tensors, before the user asks.
"""

from __future__ import annotations

import json
import os
from typing import Any


def prepare_torch(*, warm: bool) -> tuple[int, list[dict[str, Any]], str]:
    """(threads for each run, devices, torch's version)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    if warm:
        warm_up()
    return threads, devices(), torch.__version__


def warm_up() -> None:
    """Pay the first-call costs of autograd and vmap on tiny tensors (no parallel region)."""
    import torch
    from torch._vmap_internals import _vmap

    x = torch.ones(2, 2, dtype=torch.float64, requires_grad=True)
    y = (x * x).sin()
    torch.autograd.grad(y, x, torch.ones_like(y), retain_graph=True)
    torch.autograd.grad(y, x, torch.eye(4, dtype=torch.float64).view(4, 2, 2), is_grads_batched=True)
    with torch.no_grad():
        _vmap(lambda v: v.sin() * 2)(torch.ones(3, 2, dtype=torch.float64))


def devices() -> list[dict[str, Any]]:
    """CPU, and the CUDA devices a forked run could use (found without initialising CUDA here)."""
    import torch

    found = [{"name": "cpu", "label": "CPU", "available": True, "reason": ""}]
    if torch.version.cuda is None:
        reason = "this PyTorch build has no CUDA support"
        return [*found, {"name": "cuda", "label": "CUDA", "available": False, "reason": reason}]
    cuda = _probe_cuda()
    if not cuda:
        reason = "no CUDA device is visible (driver missing or CUDA_VISIBLE_DEVICES empty)"
        return [*found, {"name": "cuda", "label": "CUDA", "available": False, "reason": reason}]
    return found + [{"name": f"cuda:{k}", "label": name, "available": True, "reason": ""} for k, name in enumerate(cuda)]


def _probe_cuda() -> list[str]:
    """Names of the CUDA devices, asked in a forked process so this one never initialises CUDA."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        names: list[str] = []
        try:
            import torch

            if torch.cuda.is_available():
                names = [torch.cuda.get_device_name(k) for k in range(torch.cuda.device_count())]
        except Exception:
            names = []
        finally:
            os.write(write_end, json.dumps(names).encode())
            os._exit(0)
    os.close(write_end)
    data = b""
    while chunk := os.read(read_end, 65536):
        data += chunk
    os.close(read_end)
    os.waitpid(pid, 0)
    try:
        return [str(n) for n in json.loads(data or b"[]")]
    except ValueError:
        return []

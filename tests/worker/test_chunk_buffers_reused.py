"""A fresh run process reuses its chunk buffers instead of faulting in new pages for each chunk.

glibc's malloc serves blocks of megabytes by mmap until the first one is freed, and trims the
heap's top at twice a block: in a run process, which is always fresh, every chunk of the finite
differences got new pages (each faulted in and zeroed by the kernel), and the slow chunks could
send the batched path down the loop. The worker's environment sets malloc's thresholds
(``protocol.launch.RUNTIME_ENVIRONMENT``), and the stack of perturbed inputs is one buffer kept
for every chunk: freed between chunks, a small allocation could take part of its hole and move
the next stack onto fresh pages (under load, 9 runs of 20 faulted one whole stack in again).
Measured for real: the Function logs the process's minor page faults at each forward, through
the CLI's own worker.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gradviz.protocol.launch import RUNTIME_ENVIRONMENT, worker_environment
from tests.paths import ROOT

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc: Linux")

ROW_SUMS = '''
import ctypes
import os
import resource
import torch
from torch.autograd import Function

LOG = os.environ["GRADVIZ_TEST_FAULT_LOG"]


class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


mallinfo2 = ctypes.CDLL(None).mallinfo2
mallinfo2.restype = MallInfo2


class RowSums(Function):
    """8 row sums of 8192 inputs: 64 columns a chunk, so 128 chunks with an 8 MiB input stack each."""

    @staticmethod
    def forward(ctx, x):
        with open(LOG, "a") as log:
            log.write(f"{resource.getrusage(resource.RUSAGE_SELF).ru_minflt} {mallinfo2().hblkhd}\\n")
        y = x.view(8, -1).sum(1)
        for _ in range(20):  # cheap batched, dear one column at a time: the batched path stays ahead
            y = y * 1.0
        return y

    @staticmethod
    def backward(ctx, g):
        return g.repeat_interleave(1024)


def example_inputs(device, dtype):
    return (torch.linspace(-1, 1, 8192, device=device, dtype=dtype, requires_grad=True),)
'''

CHUNK_PAGES = 8 * 2**20 // 4096  # one chunk's input stack, in pages


def test_chunks_after_the_first_fault_in_almost_no_new_pages(tmp_path):
    source, log = tmp_path / "row_sums.py", tmp_path / "faults.txt"
    source.write_text(ROW_SUMS, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in RUNTIME_ENVIRONMENT}  # the worker's own choice
    env.update(PYTHONPATH=str(ROOT), GRADVIZ_TEST_FAULT_LOG=str(log))
    done = subprocess.run(
        [sys.executable, "-m", "gradviz", "check", str(source), "--json", "--jacobian-only"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    report = json.loads(done.stdout)
    assert report["passed"] is True, done.stderr
    faults, mapped = zip(*(map(int, line.split()) for line in log.read_text().splitlines()))
    assert report["paths"]["numerical"] == "batched", f"{len(faults)} forwards: chunks were slow enough to loop"
    # the 8 MiB stack of perturbed inputs lives while a batched forward runs: from the heap, never mmap
    assert max(mapped) - mapped[0] < 2**20, f"{(max(mapped) - mapped[0]) / 2**20:.1f} MiB of blocks mmapped"
    # the last 64 forwards are 64 batched chunks: their buffers reuse pages faulted in before
    later = faults[-1] - faults[-65]
    assert later < CHUNK_PAGES // 4, f"{later} minor faults over 64 chunks: buffers were not reused"


def test_a_users_own_malloc_settings_win():
    env = worker_environment({"MALLOC_TRIM_THRESHOLD_": "0"})
    assert env["MALLOC_TRIM_THRESHOLD_"] == "0"
    assert env["MALLOC_MMAP_THRESHOLD_"] == RUNTIME_ENVIRONMENT["MALLOC_MMAP_THRESHOLD_"]

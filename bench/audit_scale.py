"""Cost of ``gradviz.audit`` on transformer-like layers, as nodes and their sizes grow.

Each layer has 4 custom nodes: RMSNorm, attention (q, k, v from a built-in nn.Linear), a custom-op
projection and the capped activation (``tests/core/audit_models.py``). A node's full Jacobians
have (B*S*d)^2 cells per input, so with full Jacobians the cost grows with the square of the
activations' size (attention, three such inputs, dominates), and linearly with the number of
nodes. ``--max-memory-mb`` small sends every node through the large-Jacobian path (random
projections, then bisection on a mismatch): then it grows about linearly with the size.

Run: .venv/bin/python bench/audit_scale.py [--sizes 16,1,8,1 32,1,8,1 64,4,16,2] [--max-memory-mb 1]
(each size: width,batch,sequence,layers)

The audit checks its nodes with one torch thread (``core.audit.checking_threads``): each check
is thousands of calls on one layer's activations, too small for OpenMP to pay, and with two
threads on a busy machine they spin against each other. Wall seconds depend on the machine's
load (8 jobs share its 2 cores), so CPU seconds are printed too; the Jacobians a node's report
keeps are fresh memory (16 bytes a cell: 3.7 GB for 64,4,16,2), and first-touching it in this VM
costs 3-6 s a GB of wall time (1.2 s of it system CPU), whoever checks the node.

Measured 2026-12-03 on the 2-core machine shared with other jobs, after a warm-up:
  before (two threads, the torch default): 64,4,16,1 9.9 s at load 1.2, 75 s at load 3.4;
                  64,4,16,2 92 s, and 237 s at load 5 (8 nodes; attention's 4096 x 12288 Jacobians dominate)
  after (one thread): 16,1,8,1 0.43 s (0.17 s CPU); 16,1,8,2 0.73 s (0.29 s CPU); 32,1,8,1 0.87 s (0.35 s CPU);
                  32,2,16,1 3.9 s (1.5 s CPU); 64,4,16,1 33 s (13 s CPU); 64,4,16,2 69 s (24 s CPU), all at
                  load 6.5-7 on the 2 cores (each process gets about a third of a core); 64,4,16,2 at load 3.9:
                  42 s (25 s CPU)
  --max-memory-mb 1 (projections, then bisection): 64,4,16,1 0.05 s; 64,4,16,2 0.16 s (0.08 s CPU)
So the cost grows linearly with the number of nodes (2 layers: twice 1 layer) and, with full
Jacobians, with the square of a node's activations (width 32 -> 64 with 4x the rows: 1.5 s -> 13 s
CPU for 4 nodes; attention's three inputs make it the slowest node); ``--max-memory-mb`` small
turns that square into about linear. The limit is the whole audit's (``core/audit_memory.py``):
once the kept Jacobians (21 bytes a cell with their maps) reach it, by default a quarter of RAM
(64,4,16,2 counts 4.9 GB of 5.9 GB here), every later node takes the projections, so a deeper
model grows linearly from there.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import gradviz  # noqa: E402
from tests.core import audit_models as models  # noqa: E402


class Layer(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.norm, self.qkv = models.RMSNorm(d), nn.Linear(d, 3 * d).double()
        self.proj, self.act = models.Linear(d, d), models.Activation(models.LeakyCapFn)

    def forward(self, x):
        q, k, v = self.qkv(self.norm(x)).chunk(3, -1)
        return x + self.act(self.proj(models.AttentionFn.apply(q, k, v)))


def time_audit(width: int, batch: int, seq: int, layers: int, max_memory_mb: float | None) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(*[Layer(width) for _ in range(layers)])
    x = torch.randn(batch, seq, width, dtype=torch.float64, requires_grad=True)
    options = {} if max_memory_mb is None else {"max_memory_mb": max_memory_mb}
    load = os.getloadavg()[0]
    start, cpu = time.perf_counter(), time.process_time()
    report = gradviz.audit(model, x, **options)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    slowest = max(report.nodes, key=lambda n: n.report.seconds.get("total", 0.0) if n.report else 0.0)
    print(
        f"width {width:>3} batch {batch} seq {seq:>2} layers {layers}: {len(report.nodes):>2} nodes "
        f"{seconds:7.2f} s ({cpu:6.2f} s CPU, load {load:.1f})  {'PASSED' if report.passed else 'FAILED'}  "
        f"slowest {slowest.node.title}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", nargs="+", default=["16,1,8,1", "16,1,8,2", "32,1,8,1", "16,2,8,1", "64,4,16,2"])
    parser.add_argument("--max-memory-mb", type=float, default=None)
    args = parser.parse_args()
    torch.set_num_threads(2)
    gradviz.audit(Layer(4), torch.randn(1, 2, 4, dtype=torch.float64, requires_grad=True))  # warm-up (vmap, imports)
    for size in args.sizes:
        time_audit(*(int(v) for v in size.split(",")), args.max_memory_mb)  # type: ignore[call-arg]


if __name__ == "__main__":
    main()

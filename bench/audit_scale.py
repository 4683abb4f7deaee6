"""Cost of ``gradviz.audit`` on transformer-like layers, as nodes and their sizes grow.

Each layer has 4 custom nodes: RMSNorm, attention (q, k, v from a built-in nn.Linear), a custom-op
projection and the capped activation (``tests/core/audit_models.py``). A node's full Jacobians
have (B*S*d)^2 cells per input, so with full Jacobians the cost grows with the square of the
activations' size (attention, three such inputs, dominates), and linearly with the number of
nodes. ``--max-memory-mb`` small sends every node through the large-Jacobian path (random
projections, then bisection on a mismatch): then it grows about linearly with the size.

Run: .venv/bin/python bench/audit_scale.py [--sizes 16,1,8,1 32,1,8,1 64,4,16,2] [--max-memory-mb 1]
(each size: width,batch,sequence,layers)

Measured 2026-12-03 on the 2-core machine shared with other jobs (so +-50%), after a warm-up:
  full Jacobians: 16,1,8,1 0.15 s; 16,1,8,2 0.26 s (8 nodes); 32,1,8,1 0.28 s; 32,2,16,1 1.0 s;
                  64,4,16,1 9.1 s; 64,4,16,2 92 s (8 nodes; attention's 4096 x 12288 Jacobians dominate)
  --max-memory-mb 1 (projections, then bisection): 64,4,16,1 0.03 s; 64,4,16,2 0.06 s
"""

from __future__ import annotations

import argparse
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
    start = time.perf_counter()
    report = gradviz.audit(model, x, **options)
    seconds = time.perf_counter() - start
    slowest = max(report.nodes, key=lambda n: n.report.seconds.get("total", 0.0) if n.report else 0.0)
    print(
        f"width {width:>3} batch {batch} seq {seq:>2} layers {layers}: {len(report.nodes):>2} nodes "
        f"{seconds:7.2f} s  {'PASSED' if report.passed else 'FAILED'}  slowest {slowest.node.title}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", nargs="+", default=["16,1,8,1", "16,1,8,2", "32,1,8,1", "16,2,8,1"])
    parser.add_argument("--max-memory-mb", type=float, default=None)
    args = parser.parse_args()
    torch.set_num_threads(2)
    gradviz.audit(Layer(4), torch.randn(1, 2, 4, dtype=torch.float64, requires_grad=True))  # warm-up (vmap, imports)
    for size in args.sizes:
        time_audit(*(int(v) for v in size.split(",")), args.max_memory_mb)  # type: ignore[call-arg]


if __name__ == "__main__":
    main()

"""Speed of the eps sweep: the 64x64 @ 64x64 matmul (float64, CPU) and an 8x8 @ 8x8 one (64x64 blocks).

The 64x64 matmul has two 4096x4096 Jacobian blocks. Swept cell by cell at all 19 default steps
plus the check's eps, one block costs 4096 x 40 forwards; by default a wide input is swept on
256 columns (the worst quarter at the check's eps, found by one central difference per column,
and the rest at random), so one block costs 2 x 4096 + 40 x 256 forwards, vmapped in chunks,
plus the block's analytic rows. Wall and CPU time are both printed: on a shared machine the
wall time includes other processes' load (the load average is printed too).

Run: .venv/bin/python bench/sweep_speed.py [--repeats 3] [--all-columns]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import torch
from torch.autograd import Function

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gradviz.core.inputs import prepare_inputs  # noqa: E402
from gradviz.core.sweep import sweep_function  # noqa: E402
from gradviz.schema.settings import CheckSettings, SweepOptions  # noqa: E402


class MatMul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g @ b.T, a.T @ g


def inputs(n: int):
    generator = torch.Generator().manual_seed(0)
    a, b = (torch.randn(n, n, generator=generator, dtype=torch.float64, requires_grad=True) for _ in range(2))
    return prepare_inputs((a, b), torch.device("cpu"), torch.float64, ["a", "b"])


def measure(n: int, block, options: SweepOptions, repeats: int) -> None:
    best_wall = best_cpu = float("inf")
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        sweep = sweep_function(MatMul, inputs(n), CheckSettings(), block=block, options=options)
        best_wall = min(best_wall, time.perf_counter() - wall)
        best_cpu = min(best_cpu, time.process_time() - cpu)
    what = f"block {block}" if block else "every block"
    columns = ", ".join(f"{b.title}: {b.columns} of {b.shape[1]} columns" for b in sweep.blocks if b.swept)
    print(
        f"{n}x{n} @ {n}x{n}, {what}: wall {best_wall:.2f} s, cpu {best_cpu:.2f} s (best of {repeats}; "
        f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores, {torch.get_num_threads()} threads) "
        f"[{columns}; {sweep.path}; {sweep.verdict.headline}]"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--all-columns", action="store_true", help="sweep every column of the 64x64 block too")
    args = parser.parse_args()
    options = SweepOptions()
    measure(8, (0, 0), options, args.repeats)
    measure(64, (0, 0), options, args.repeats)
    measure(64, None, options, 1)
    if args.all_columns:
        measure(64, (0, 0), SweepOptions(max_columns=4096), 1)


if __name__ == "__main__":
    main()

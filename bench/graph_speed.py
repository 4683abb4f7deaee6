"""Speed of the graph model on a ~500-node backward graph (target: under 0.5 s).

The graph is a residual chain of small blocks, each a custom Function (save_for_backward and a
ctx attribute), tanh, a bias add and, every fourth block, a skip connection: custom, builtin and
leaf nodes mixed, with joins for the layout to untangle. Times ``graph_from_outputs`` (walk,
saved tensors, the recorded backward with hooks on every node, layout), best of several runs on
a fresh forward each, after one warm-up (the first backward starts autograd's threads). Also
times the layout alone at 4x the size, to show it grows roughly linearly, not as N^3.

Run: .venv/bin/python bench/graph_speed.py [--blocks 90] [--repeats 5]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
from torch.autograd import Function

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gradviz.core.graph import graph_from_outputs, layered_layout  # noqa: E402

TARGET_SECONDS = 0.5


class Scale(Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        ctx.norm = w.abs() + 1  # a ctx attribute, as the fused conv-BN keeps
        return x * w / ctx.norm

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        n = ctx.norm
        return g * w / n, g * x * (1 / n - w * w.sign() / n**2)


def build(blocks: int, width: int = 8):
    """(output, leaves, names) of the residual chain; 5 nodes per block plus 2 per skip."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(width, generator=gen, requires_grad=True)
    leaves, names = [x], ["x"]
    h, skip = x, x
    for k in range(blocks):
        w = torch.randn(width, generator=gen, requires_grad=True)
        b = torch.randn(width, generator=gen, requires_grad=True)
        leaves += [w, b]
        names += [f"w{k}", f"b{k}"]
        h = torch.tanh(Scale.apply(h, w)) + b
        if k % 4 == 3:
            h, skip = h + 0.5 * skip, h
    return h.sum(), leaves, names


def best_of(repeats: int, blocks: int):
    times, model = [], None
    for _ in range(repeats):
        out, leaves, names = build(blocks)
        start = time.perf_counter()
        model = graph_from_outputs(out, leaves, names, retain_graph=False)
        times.append(time.perf_counter() - start)
    return min(times), model


def layout_seconds(model, times: int) -> float:
    """Layout alone on ``times`` disjoint copies of the model's graph, best of 3."""
    n = len(model.nodes)
    edges = torch.cat([torch.from_numpy(model.edges) + k * n for k in range(times)]).numpy()
    leaves = [i + k * n for k in range(times) for i, node in enumerate(model.nodes) if node.kind == "leaf"]
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        layered_layout(n * times, edges, leaves)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--blocks", type=int, default=90, help="residual blocks (5-6 nodes each)")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    best_of(1, 4)  # warm-up: autograd's worker threads, first-call caches
    seconds, model = best_of(args.repeats, args.blocks)
    parts = ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in model.seconds.items() if k != "total")
    print(
        f"graph_speed: {len(model.nodes)} nodes, {len(model.edges)} edges, "
        f"{sum(len(n.saved) for n in model.nodes)} saved tensors"
    )
    print(f"  extract + layout: {seconds:.3f} s (target < {TARGET_SECONDS} s) [last run: {parts}]")
    one, four = layout_seconds(model, 1), layout_seconds(model, 4)
    print(
        f"  layout alone: {one * 1000:.0f} ms at {len(model.nodes)} nodes, "
        f"{four * 1000:.0f} ms at {4 * len(model.nodes)} nodes ({four / one:.1f}x for 4x the nodes)"
    )
    ok = seconds < TARGET_SECONDS
    print("  PASS" if ok else "  FAIL: slower than the target")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""One ranking of cells: the headline's worst cell, JSON ``worst_cell``, ``failing_cells``, the
worst-N table, the CLI's table and the window's copied cells all name the same cells, worst first,
also where the errors differ only below float32's resolution (the error map would tie them).

The backward below is wrong by the same factor everywhere, plus an offset per cell of a few 1e-9:
every error is 1 + offset, far apart in float64 (the central differences' noise is ~1e-10), one
value in float32. The order the test expects is the offsets' order, and PyTorch's own Jacobians
(``tests/real_world/oracle.py``) rank the cells the same way.
"""

from __future__ import annotations

import json
import re

import numpy as np

import gradviz
from gradviz.schema.mismatch import worst_cells
from tests.real_world import oracle

# u's four cells, then v's: a permutation, so the worst cells are in neither row-major nor block order
RANKS = [5, 2, 7, 0, 3, 6, 1, 4]
STEP = 6e-9  # 8 steps stay inside float32's rounding interval around 1.0 (-3e-8, +6e-8)

SOURCE = f'''
import torch

RANKS = {RANKS}
STEP = {STEP!r}


class NearTie(torch.autograd.Function):
    """u + v whose backward is 2 (plus a few 1e-9) where it should be 1."""

    @staticmethod
    def forward(ctx, u, v):
        return u + v

    @staticmethod
    def backward(ctx, grad):
        offsets = torch.tensor(RANKS, dtype=grad.dtype) * STEP
        return grad * (2 + offsets[:4].view_as(grad)), grad * (2 + offsets[4:].view_as(grad))


def example_inputs(device=None, dtype=torch.float64):
    u = torch.linspace(0.5, 2.0, 4, dtype=torch.float64)
    return u.clone().requires_grad_(), (u + 1).requires_grad_()
'''


def _near_tie(tmp_path):
    path = tmp_path / "near_tie.py"
    path.write_text(SOURCE, encoding="utf-8")
    return path, oracle.load_module(path)


def _expected_labels() -> list[str]:
    """Worst first: the cell with the largest offset; u's cells are x[i] of input 0, v's of input 1."""
    names = [f"out0[{k}] / u[{k}]" for k in range(4)] + [f"out0[{k}] / v[{k}]" for k in range(4)]
    return [names[k] for k in np.argsort(RANKS)[::-1]]


def test_near_ties_below_float32_are_ranked_in_float64_everywhere(tmp_path):
    _, module = _near_tie(tmp_path)
    args = module.example_inputs()
    assert not oracle.gradcheck_passes(module.NearTie.apply, args, quiet=True)
    # PyTorch's Jacobians: float64 errors in the offsets' order, and one float32 value for all
    analytic, numerical = oracle.analytical_jacobian(module.NearTie, args), oracle.numerical_jacobian(module.NearTie, args)
    diagonal = np.concatenate([np.abs(np.diag(analytic[0, j]) - np.diag(numerical[0, j])) for j in (0, 1)])
    assert list(np.argsort(diagonal)[::-1]) == list(np.argsort(RANKS)[::-1])
    assert len(set(diagonal.astype(np.float32).tolist())) == 1

    report = gradviz.check(module.NearTie, args, raise_exception=False)
    for block in report.blocks:  # the error map ties them too
        assert len(set(np.diag(block.error).tolist())) == 1
    expected = _expected_labels()
    assert [c.label for c in report.failing_cells] == expected
    assert [c.label for c in report.worst_cells(5)] == expected[:5]
    errors = [c.error for c in report.failing_cells]
    assert errors == sorted(errors, reverse=True) and len(set(errors)) == len(errors)

    # each block's headline and JSON worst_cell: that block's first failing cell
    per_block = {j: next(label for label in expected if f"/ {'uv'[j]}[" in label) for j in (0, 1)}
    message = report.message()
    table = message.split("Worst 5 cells:", 1)[1]
    assert [line.split()[0] + " " + " ".join(line.split()[1:3]) for line in table.strip().splitlines()[1:]] == expected[:5]
    for j, label in per_block.items():
        name = "uv"[j]
        assert re.search(rf"w\.r\.t\. {name}; greatest \|a - n\| \S+ at {re.escape(label)} ", message), message
        assert report.to_dict()["blocks"][j]["worst_cell"] == label
        assert f"out0 / {name}" in str(report) and label in str(report)
        # the window's Edit > Copy worst cells picks them here
        assert [c.label for c in worst_cells(report.result, report.blocks[j])][:4] == [
            label for label in expected if f"/ {name}[" in label
        ]


def test_the_cli_names_the_same_worst_cells(cli, tmp_path):
    path, _ = _near_tie(tmp_path)
    out = cli("check", str(path), "--json")
    assert out.returncode == 1, out.stderr
    blocks = json.loads(out.stdout)["blocks"]
    expected = _expected_labels()
    assert [b["worst_cell"] for b in blocks] == [
        next(label for label in expected if f"/ {name}[" in label) for name in "uv"
    ]
    text = cli("check", str(path))
    for name in "uv":
        first = next(label for label in expected if f"/ {name}[" in label)
        assert re.search(rf"out0 / {name} .*  {re.escape(first)}  analytic", text.stdout), text.stdout

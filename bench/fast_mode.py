"""gradviz.check(fast_mode=True) against torch.autograd.gradcheck(fast_mode=True), side by side.

A user picks fast mode because gradcheck then answers in milliseconds; gradviz must answer at the
same cost. For each case of the scaling table it prints, in milliseconds, warm, in this process:
  gc pass / gv pass   a right backward: gradcheck's fast verdict, and gradviz's (the same
                      verdict, plus one more projection that would show a wrong cell)
  gc fail / gv fail   the same Function with the last input's first gradient element x3 (one
                      wrong Jacobian column): gradcheck's verdict builds both full Jacobians for its
                      message; gradviz's finds the wrong cells by bisection and builds no map
and the targets: passing <= 1.5 x gradcheck at every size, failing <= 20 x gradcheck where
gradcheck fails, each verdict gradcheck's, and the worst cell gradviz reports truly failing (its
analytic value from one backward, its numerical one from one central-difference column, judged
by gradcheck's rule). Where gradcheck's projections miss the wrong column, gradviz passes too
and warns with the cells it found: an info line, no target.

Run with the machine otherwise idle: .venv/bin/python bench/fast_mode.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gradviz.protocol.launch import RUNTIME_ENVIRONMENT  # noqa: E402 - torch-free

if __name__ == "__main__" and any(os.environ.get(name) != value for name, value in RUNTIME_ENVIRONMENT.items()):
    os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **RUNTIME_ENVIRONMENT})

import torch  # noqa: E402 - after the exec above

import gradviz  # noqa: E402
from bench.cases import scaling_cases  # noqa: E402
from bench.scaling import ATOL, EPS, RTOL, best  # noqa: E402
from bench.targets import report  # noqa: E402
from gradviz.core.quiet_warnings import warnings_ignored  # noqa: E402

PASSING_LIMIT = 1.5
FAILING_LIMIT = 20.0


def with_one_wrong_column(fn: type[torch.autograd.Function]) -> type[torch.autograd.Function]:
    """``fn`` whose backward returns the first element of its last gradient x3."""

    class OneColumnOff(fn):  # type: ignore[misc, valid-type]
        @staticmethod
        def backward(ctx, *grads):
            given = fn.backward(ctx, *grads)
            found = list(given) if isinstance(given, tuple) else [given]
            k = max(k for k, g in enumerate(found) if g is not None)  # the last input with a gradient
            wrong = found[k].contiguous().clone()
            wrong.view(-1)[0] *= 3
            found[k] = wrong
            return tuple(found)

    OneColumnOff.__name__ = f"{fn.__name__}OneColumnOff"
    return OneColumnOff


def gradcheck_fast(fn, args) -> bool:
    with warnings_ignored():
        return torch.autograd.gradcheck(
            fn.apply, args, eps=EPS, atol=ATOL, rtol=RTOL, fast_mode=True, raise_exception=False
        )


def gradviz_fast(fn, args) -> gradviz.Report:
    return gradviz.check(fn, args, eps=EPS, atol=ATOL, rtol=RTOL, fast_mode=True, raise_exception=False)


def truly_fails(fn, args: tuple, output: int, input: int, row: int, col: int) -> bool:
    """One cell by torch alone: a backward for its row, central differences for its column."""
    outs = fn.apply(*args)
    outs = outs if isinstance(outs, tuple) else (outs,)
    v = torch.zeros_like(outs[output]).reshape(-1)
    v[row] = 1
    (grad,) = torch.autograd.grad(outs[output], args[input], v.view_as(outs[output]), allow_unused=True)
    analytic = 0.0 if grad is None else float(grad.reshape(-1)[col])
    x, values = args[input], []
    with torch.no_grad():
        keep = x.clone()
        for step in (EPS, -EPS):
            x.view(-1)[col] += step
            moved = fn.apply(*args)
            values.append(float((moved if isinstance(moved, tuple) else (moved,))[output].reshape(-1)[row]))
            x.copy_(keep)
    numerical = (values[0] - values[1]) / (2 * EPS)
    return abs(analytic - numerical) > ATOL + RTOL * abs(numerical)


def worst_cell(result):
    """The (block, cell) gradviz reports worst among the cells its search found, or None."""
    cells = [(b, c) for b in result.large_blocks for c in b.cells]
    return max(cells, key=lambda bc: abs(bc[1].analytic - bc[1].numerical)) if cells else None


def measure(case, repeats: int) -> dict:
    fn, args = case.load()
    wrong = with_one_wrong_column(fn)
    row: dict = {"case": case.name}
    for label, f in (("pass", fn), ("fail", wrong)):
        row[f"gc_{label}"] = best(repeats, lambda f=f: gradcheck_fast(f, args))
        row[f"gv_{label}"] = best(repeats, lambda f=f: gradviz_fast(f, args))
        torch.manual_seed(0)
        expected = gradcheck_fast(f, args)
        torch.manual_seed(0)
        got = gradviz_fast(f, args)
        row[f"same_{label}"] = got.passed == expected
        row[f"gc_verdict_{label}"] = expected
        row[f"maps_{label}"] = bool(got.result.blocks)
        if label == "fail":
            found = worst_cell(got.result)
            row["worst_true"] = found is not None and truly_fails(
                wrong, args, found[0].output, found[0].input, found[1].row, found[1].col
            )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer sizes")
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} cores")
    print(
        f"{'case':<14} {'gc pass':>8} {'gv pass':>8} {'ratio':>6} {'gc fail':>8} {'gv fail':>8} {'ratio':>6}  "
        "verdicts  worst cell"
    )
    rows = []
    for case in scaling_cases(options.quick):
        r = measure(case, options.repeats)
        rows.append(r)
        print(
            f"{r['case']:<14} {r['gc_pass'] * 1e3:>8.2f} {r['gv_pass'] * 1e3:>8.2f} {r['gv_pass'] / r['gc_pass']:>6.2f} "
            f"{r['gc_fail'] * 1e3:>8.2f} {r['gv_fail'] * 1e3:>8.2f} {r['gv_fail'] / r['gc_fail']:>6.2f}  "
            f"{'same' if r['same_pass'] and r['same_fail'] else 'DIFFER':<8}  "
            f"{'truly fails' if r['worst_true'] else 'NOT FAILING'}",
            flush=True,
        )
    passing = max(rows, key=lambda r: r["gv_pass"] / r["gc_pass"])
    report(
        "fast mode, passing check / gradcheck(fast_mode=True), worst case",
        passing["gv_pass"] / passing["gc_pass"],
        PASSING_LIMIT,
        where=f"{passing['case']}; no map built: {not any(r['maps_pass'] for r in rows)}",
    )
    failed = [r for r in rows if not r["gc_verdict_fail"]]  # gradcheck fails the wrong column here
    missed = [r for r in rows if r["gc_verdict_fail"]]  # gradcheck's projections miss it: gradviz warns
    sound = all(r["same_pass"] and r["same_fail"] and r["worst_true"] for r in rows)
    if failed:
        failing = max(failed, key=lambda r: r["gv_fail"] / r["gc_fail"])
        report(
            "fast mode, failing check / gradcheck(fast_mode=True), worst case",
            failing["gv_fail"] / failing["gc_fail"] if sound else float("inf"),
            FAILING_LIMIT,
            where=f"{failing['case']}; verdicts gradcheck's and worst cell truly failing at every size: {sound}",
        )
    if missed:  # no target: gradcheck says nothing there, gradviz finds the cells
        worst = max(missed, key=lambda r: r["gv_fail"] / r["gc_fail"])
        print(
            f"info: gradcheck(fast_mode=True) passes the wrong column in {', '.join(r['case'] for r in missed)}; "
            f"gradviz passes it too and warns with the cells found, at up to "
            f"{worst['gv_fail'] / worst['gc_fail']:.0f}x gradcheck's time ({worst['case']})"
        )

if __name__ == "__main__":
    main()

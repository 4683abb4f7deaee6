"""Speed and memory of gradviz's Jacobians against torch.autograd.gradcheck, measured in one run.

Prints three things, each against its target:
  1. gradcheck slow-mode seconds / gradviz seconds, like for like: gradviz's default verdict
     (Jacobians + reentrancy + grad_output + undefined grads) against gradcheck's defaults, and
     gradviz --jacobian-only against gradcheck with check_undefined_grad=False (target >= 10x),
  2. gradviz numerical seconds / (2 * input elements * one forward) (target <= 1.5),
  3. peak RSS of a check whose two Jacobians take ~1 GB (target <= 2x their size + overhead).

Run: .venv/bin/python bench/jacobian_speed.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gradviz.core.check import check_function  # noqa: E402
from gradviz.core.inputs import prepare_inputs  # noqa: E402
from gradviz.core.loader import load_file  # noqa: E402
from gradviz.schema.library import find_builtin  # noqa: E402
from gradviz.schema.settings import CheckSettings  # noqa: E402

CPU = torch.device("cpu")


def linear_function():
    return load_file(find_builtin("linear")).functions["LinearFunction"]


def best_of(repeats: int, run) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def forward_seconds(fn, args, calls: int = 300) -> float:
    """Median seconds of one forward (no autograd), the unit of central differences."""
    samples = []
    with torch.inference_mode():
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(calls):
                fn.apply(*args)
            samples.append((time.perf_counter() - start) / calls)
    return statistics.median(samples)


def speed_case(fn, in_shape, w_shape, repeats: int, *, jacobian_only: bool) -> dict:
    torch.manual_seed(0)
    args = (
        torch.randn(*in_shape, dtype=torch.float64, requires_grad=True),
        torch.randn(*w_shape, dtype=torch.float64, requires_grad=True),
    )

    def gradcheck():
        torch.autograd.gradcheck(
            fn.apply,
            args,
            eps=1e-6,
            atol=1e-5,
            rtol=1e-3,
            raise_exception=False,
            check_undefined_grad=not jacobian_only,
            fast_mode=False,
        )

    def ours():
        prepared = prepare_inputs(args, CPU, torch.float64, ["input", "weight"])
        return check_function(fn, prepared, CheckSettings(jacobian_only=jacobian_only))

    ours()  # warm-up: vmap's first call compiles its batching rules
    gradcheck()
    t_gradcheck = best_of(repeats, gradcheck)
    results = [ours() for _ in range(repeats)]
    total = min(r.seconds["total"] for r in results)
    jacobians = min(r.seconds["analytic"] + r.seconds["numerical"] for r in results)
    numerical = min(r.seconds["numerical"] for r in results)
    t_forward = forward_seconds(fn, args)
    elements = sum(a.numel() for a in args)
    return {
        "case": f"LinearFunction {in_shape[0]}x{in_shape[1]} / {w_shape[0]}x{w_shape[1]}",
        "gradcheck_s": t_gradcheck,
        "gradviz_s": total,
        "jacobians_s": jacobians,
        "ratio_vs_gradcheck": t_gradcheck / total,
        "numerical_s": numerical,
        "forward_s": t_forward,
        "numerical_vs_blackbox": numerical / (2 * elements * t_forward),
        "paths": f"{results[0].analytic_path}/{results[0].numerical_path}",
    }


MEMORY_CHILD = """
import json, sys, torch
sys.path.insert(0, {root!r})
from gradviz.schema.settings import CheckSettings
from gradviz.core.check import check_function
from gradviz.core.inputs import prepare_inputs
from gradviz.schema.library import find_builtin
from gradviz.core.loader import load_file
fn = load_file(find_builtin("linear")).functions["LinearFunction"]
torch.manual_seed(0)
args = (torch.randn({n}, {k}, dtype=torch.float64, requires_grad=True),
        torch.randn({k}, {k}, dtype=torch.float64, requires_grad=True))
prepared = prepare_inputs(args, torch.device("cpu"), torch.float64, ["input", "weight"])
with torch.inference_mode():
    fn.apply(*args)
def high_water():
    # VmHWM belongs to this process image; ru_maxrss would carry the parent's peak over fork+exec
    line = next(l for l in open("/proc/self/status") if l.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024
baseline = high_water()
result = check_function(fn, prepared, CheckSettings())
peak = high_water()
jac = sum(b.analytic.nbytes + b.numerical.nbytes for b in result.blocks)
print(json.dumps({{"baseline": baseline, "peak": peak, "jacobians": jac, "seconds": result.seconds["total"]}}))
"""


def memory_case(n: int, k: int) -> dict:
    code = MEMORY_CHILD.format(root=str(ROOT), n=n, k=k)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    data = json.loads(out.stdout)
    data["case"] = f"LinearFunction {n}x{k} / {k}x{k}"
    data["growth_vs_jacobians"] = (data["peak"] - data["baseline"]) / data["jacobians"]
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="skip the ~1 GB memory case")
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args()
    fn = linear_function()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print("\n1-2. Whole check, float64, CPU (best of", options.repeats, "runs)")
    for jacobian_only, title in ((False, "default verdict vs gradcheck()"), (True, "--jacobian-only vs gradcheck(check_undefined_grad=False)")):
        print(f"  {title}")
        for in_shape, w_shape in (((20, 20), (30, 20)), ((64, 64), (64, 64))):
            r = speed_case(fn, in_shape, w_shape, options.repeats, jacobian_only=jacobian_only)
            print(
                f"    {r['case']:<34} gradcheck {r['gradcheck_s']:.3f} s  gradviz {r['gradviz_s']:.4f} s "
                f"(Jacobians {r['jacobians_s']:.4f} s)  "
                f"ratio {r['ratio_vs_gradcheck']:.1f}x (target >= 10)  "
                f"numerical/black-box {r['numerical_vs_blackbox']:.2f} (target <= 1.5)  [{r['paths']}]"
            )
    if not options.quick:
        print("\n3. Peak RSS, two Jacobians of ~1 GB together")
        m = memory_case(64, 80)
        gb = 2**30
        print(
            f"  {m['case']:<34} Jacobians {m['jacobians'] / gb:.2f} GB, fixed overhead (torch + inputs) "
            f"{m['baseline'] / gb:.2f} GB, peak {m['peak'] / gb:.2f} GB, growth {m['growth_vs_jacobians']:.2f}x the "
            f"Jacobians (target <= 2), {m['seconds']:.1f} s"
        )


if __name__ == "__main__":
    main()

"""gradviz against gradcheck and the best plain alternative, at every size, measured in one run.

For each case (matmul n x n @ n x n, an elementwise SiLU, the tutorial's Conv2D, the fused
conv-BN) it prints, in seconds:
  gc slow / gc fast  torch.autograd.gradcheck (fast_mode False / True), warm, in this process
  plain              functional.jacobian(vectorize=True) + vectorised central differences + one
                     isclose pass: the best a user writes by hand
  L                  this machine's achievable limit: all 2 x (input elements) forwards and all
                     (output elements) backwards, batched or looped, whichever is faster, plus
                     writing both Jacobians once and reading them once at measured bandwidth
                     (a copy between reused buffers)
  L′                 L with the Jacobians written into pages the process never touched (the
                     kernel faults in and zeroes each page first): what a check in a fresh
                     process, or any check that returns new Jacobians, cannot avoid
  warm               gradviz, Jacobians only (--jacobian-only), warm, in this process
  default            gradviz's default verdict (also reentrancy, grad_output, undefined grads)
  cold               a check in a fresh run process of a freshly started worker (every Run in
                     the window and every CLI check is one), a pre-forked spare that warmed up
                     while the worker idled, as between a window's Runs
  cold0              the same with GRADVIZ_WORKER_SPARE=0: a run forked when the request comes
  CLI / script       whole processes: `gradviz check FILE --json --jacobian-only` and a
                     `python script.py` that imports torch and calls gradcheck (slow mode)
and the targets as ratios: warm <= 1.3 L, warm faster than plain, cold <= 1.3 (L + the cold
worker's first-call cost), CLI <= 1.3 (torch import + L) and never slower than the script.

Run with the machine otherwise idle: .venv/bin/python bench/scaling.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gradviz.protocol.launch import RUNTIME_ENVIRONMENT  # noqa: E402 - torch-free

# Every peer runs with the runtime settings gradviz's worker runs with (protocol.launch: NumPy's
# huge pages, glibc's malloc thresholds, OpenMP's waits), read only when a process starts: the exec.
if __name__ == "__main__" and any(os.environ.get(name) != value for name, value in RUNTIME_ENVIRONMENT.items()):
    os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **RUNTIME_ENVIRONMENT})

import numpy as np  # noqa: E402 - after the exec above
import torch  # noqa: E402
from torch._vmap_internals import _vmap  # noqa: E402

from bench.cases import Case, scaling_cases  # noqa: E402
from bench.targets import report  # noqa: E402
from gradviz.core.check import check_function  # noqa: E402
from gradviz.core.inputs import prepare_inputs  # noqa: E402
from gradviz.schema.requests import CheckRequest, CodeSource  # noqa: E402
from gradviz.schema.settings import CheckSettings  # noqa: E402
from gradviz.worker.client import WorkerClient  # noqa: E402
from gradviz.worker.start_method import SPARE_ENV  # noqa: E402

EPS, ATOL, RTOL = 1e-6, 1e-5, 1e-3
CHUNK = 512


MIN_SECONDS = 0.25  # each side of a ratio runs at least this long in all...
MAX_TRIES = 500  # ...in at most this many tries


def best(repeats: int, run) -> float:
    """The fastest of at least ``repeats`` tries of ``run``, and of as many more as fit in
    ``MIN_SECONDS``: a check of a millisecond or two timed three times gave ratios of 0.78 and
    1.06 in two idle runs (the one-cell case); the same rule on every side keeps such ratios fair."""

    def timed() -> float:
        start = time.perf_counter()
        run()
        return time.perf_counter() - start

    return fastest_of(repeats, timed)


def fastest_of(repeats: int, measure) -> float:
    """The least of the seconds ``measure()`` returns, over ``best``'s number of tries."""
    times: list[float] = []
    while len(times) < repeats or (sum(times) < MIN_SECONDS and len(times) < MAX_TRIES):
        times.append(measure())
    return min(times)


def gradcheck_time(fn, args, *, fast: bool, repeats: int) -> float:
    return best(
        repeats,
        lambda: torch.autograd.gradcheck(
            fn.apply, args, eps=EPS, atol=ATOL, rtol=RTOL, fast_mode=fast, raise_exception=False
        ),
    )


def forwards(fn, args, *, batched: bool) -> None:
    """All 2 x (input elements) perturbed forwards, without autograd."""
    with torch.no_grad():
        for j, x in enumerate(args):
            flat = x.detach().reshape(-1)
            for c0 in range(0, flat.numel(), CHUNK if batched else 1):
                c1 = min(flat.numel(), c0 + (CHUNK if batched else 1))
                k = c1 - c0
                stacked = flat.repeat(2 * k, 1)
                rows = torch.arange(k)
                stacked[rows, torch.arange(c0, c1)] += EPS
                stacked[rows + k, torch.arange(c0, c1)] -= EPS
                if batched:
                    _vmap(lambda xj, j=j, x=x: fn.apply(*_with(args, j, xj.view(x.shape))))(stacked)
                else:
                    for row in stacked:
                        fn.apply(*_with(args, j, row.view(x.shape)))


def backwards(fn, args, *, batched: bool) -> None:
    """All (output elements) vector-Jacobian products through the Function's backward."""
    out = fn.apply(*args)
    n = out.numel()
    leaves = [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad]
    for r0 in range(0, n, CHUNK if batched else 1):
        r1 = min(n, r0 + (CHUNK if batched else 1))
        basis = torch.zeros(r1 - r0, n, dtype=out.dtype)
        basis[torch.arange(r1 - r0), torch.arange(r0, r1)] = 1
        if batched:
            torch.autograd.grad(
                out, leaves, basis.view(r1 - r0, *out.shape), retain_graph=True, is_grads_batched=True
            )
        else:
            for row in basis:
                torch.autograd.grad(out, leaves, row.view(out.shape), retain_graph=True)


def _with(args, j, value):
    call = list(args)
    call[j] = value
    return call


def bandwidth() -> float:
    """Bytes a second for a copy between two reused 256 MiB buffers (write and read)."""
    a = np.ones(2**25)
    b = np.empty_like(a)
    seconds = best(5, lambda: np.copyto(b, a))
    return 2 * a.nbytes / seconds


def fresh_bandwidth() -> float:
    """Bytes a second written into memory the process never touched: what creating a Jacobian
    costs in a fresh process (each page faulted in and zeroed by the kernel first)."""

    def write_fresh() -> None:
        np.empty(2**25).fill(1.0)

    return 8 * 2**25 / best(5, write_fresh)


def limit(fn, args, repeats: int) -> float:
    """Every forward and backward the check needs, batched or looped, whichever is faster."""

    def fastest(kind) -> float:
        options = [best(repeats, lambda: kind(fn, args, batched=True))]
        if sum(a.numel() for a in args if isinstance(a, torch.Tensor)) <= 4096:
            options.append(best(1, lambda: kind(fn, args, batched=False)))
        return min(options)

    return fastest(forwards) + fastest(backwards)


def plain_alternative(fn, args) -> None:
    """functional.jacobian(vectorize=True) + vectorised central differences + one isclose pass."""
    analytic = torch.autograd.functional.jacobian(lambda *a: fn.apply(*a), args, vectorize=True)
    with torch.no_grad():
        for j, x in enumerate(args):
            flat = x.detach().reshape(-1)
            columns = []
            for c0 in range(0, flat.numel(), CHUNK):
                c1 = min(flat.numel(), c0 + CHUNK)
                k = c1 - c0
                stacked = flat.repeat(2 * k, 1)
                rows = torch.arange(k)
                stacked[rows, torch.arange(c0, c1)] += EPS
                stacked[rows + k, torch.arange(c0, c1)] -= EPS
                out = _vmap(lambda xj, j=j, x=x: fn.apply(*_with(args, j, xj.view(x.shape))))(stacked)
                columns.append(((out[:k] - out[k:]) / (2 * EPS)).reshape(k, -1))
            numerical = torch.cat(columns).T
            a = analytic[j] if isinstance(analytic, tuple) else analytic
            torch.isclose(a.reshape(numerical.shape), numerical, rtol=RTOL, atol=ATOL).all()


def gradviz_time(case: Case, *, jacobian_only: bool, repeats: int) -> float:
    loaded = case.loaded()
    fn, args = case.load()
    names = [f"in{j}" for j in range(len(args))]

    def run():
        prepared = prepare_inputs(args, torch.device("cpu"), torch.float64, names)
        check_function(fn, prepared, CheckSettings(jacobian_only=jacobian_only), loaded=loaded)

    run()
    return best(repeats, run)


def cold_time(path: Path, repeats: int) -> float:
    """The check in a fresh run process of a freshly started worker (in the run's own seconds),
    the best of ``repeats`` workers: each one is cold, and the limit it is compared with is a best
    too. Every request a worker serves is a fresh fork of it, as cold as its first (each Run in the
    window is one), so a worker serves as many as fit in ``MIN_SECONDS``, as ``best`` tries the
    other sides; workers differ more than their runs do (matmul 16: 25 ms in one, 36 in the next)."""
    return min(_cold_checks(path, spare=True) for _ in range(repeats))


def cold_time_without_spare(path: Path, repeats: int) -> float:
    return min(_cold_checks(path, spare=False) for _ in range(repeats))


def _cold_checks(path: Path, *, spare: bool) -> float:
    request = CheckRequest(CodeSource(path=str(path)), CheckSettings(jacobian_only=True), arrays=False, graph=False)
    previous = os.environ.get(SPARE_ENV)
    os.environ[SPARE_ENV] = "1" if spare else "0"  # read by the worker when it starts
    try:
        with WorkerClient(output=None) as client:
            client.start()
            client.wait_ready()

            def one_check() -> float:
                if spare:
                    wait_for_warm_spare(client.pid)
                reply = client.request(request)
                assert reply.ok, reply.error
                return reply.result["seconds"]["total"]

            return fastest_of(1, one_check)
    finally:
        if previous is None:
            os.environ.pop(SPARE_ENV, None)
        else:
            os.environ[SPARE_ENV] = previous


def wait_for_warm_spare(worker: int, seconds: float = 10.0) -> bool:
    """Until a child of the worker waits on a pipe for its order (Linux /proc): the spare warmed up."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            children = open(f"/proc/{worker}/task/{worker}/children").read().split()
        except OSError:
            return False
        for pid in children:
            try:
                if "pipe" in open(f"/proc/{pid}/wchan").read():
                    return True
            except OSError:
                continue
        time.sleep(0.01)
    return False


GRADCHECK_SCRIPT = """
import sys, types, torch
module = types.ModuleType("case")
exec(open(sys.argv[1]).read(), module.__dict__)
fn = [v for v in vars(module).values() if isinstance(v, type) and issubclass(v, torch.autograd.Function) and v.__module__ == "case"][0]
args = module.example_inputs(torch.device("cpu"), torch.float64)
print(torch.autograd.gradcheck(fn.apply, tuple(args), eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=False))
"""


def process_time(command: list[str], repeats: int) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return best(repeats, lambda: subprocess.run(command, capture_output=True, check=False, env=env))


def torch_import_time(repeats: int) -> float:
    """A process that starts Python and imports torch, then leaves at once: the interpreter's
    teardown after torch (about 0.5 s here) is not charged, since gradviz's worker skips it too."""
    return process_time([sys.executable, "-c", "import os, torch; os._exit(0)"], repeats)


def measure(case: Case, folder: Path, bandwidths: tuple[float, float], options) -> dict:
    fn, args = case.load()
    rows = fn.apply(*args)
    outs = rows if isinstance(rows, tuple) else (rows,)
    cells = sum(o.numel() for o in outs if o.requires_grad) * sum(
        a.numel() for a in args if isinstance(a, torch.Tensor) and a.requires_grad
    )
    heavy = cells > 5_000_000
    # every side of a target ratio gets the same number of tries; on heavy cases the columns no
    # target reads there (gradcheck, the default verdict) run once
    repeats = min(2, options.repeats) if heavy else options.repeats
    once = 1 if heavy else options.repeats
    path = folder / f"{case.name.replace(' ', '_')}.py"
    path.write_text(case.source, encoding="utf-8")
    script = folder / "gradcheck_script.py"
    script.write_text(GRADCHECK_SCRIPT, encoding="utf-8")
    row = {
        "case": case.name,
        "cells": cells,
        "gc_slow": gradcheck_time(fn, args, fast=False, repeats=once),
        "gc_fast": gradcheck_time(fn, args, fast=True, repeats=once),
        "plain": best(repeats, lambda: plain_alternative(fn, args)),
        "calls": limit(fn, args, repeats),
        "warm": gradviz_time(case, jacobian_only=True, repeats=repeats),
        "default": gradviz_time(case, jacobian_only=False, repeats=once),
        "cold": cold_time(path, repeats),
        "cold0": cold_time_without_spare(path, repeats),
        "cli": process_time(
            [sys.executable, "-m", "gradviz", "check", str(path), "--json", "--jacobian-only"], repeats
        ),
        "script": process_time([sys.executable, str(script), str(path)], repeats),
    }
    jacobian_bytes = 2 * 8 * cells  # analytic and numerical, float64
    reused, fresh = bandwidths
    row["L"] = row["calls"] + 2 * jacobian_bytes / reused  # written and read once, at copy speed
    row["L_fresh"] = row["calls"] + jacobian_bytes / fresh + jacobian_bytes / reused  # written into new pages
    return row


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer sizes")
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} cores")
    bandwidths = bandwidth(), fresh_bandwidth()
    imported = torch_import_time(3)
    print(
        f"memory bandwidth {bandwidths[0] / 2**30:.1f} GiB/s (copy between reused buffers), "
        f"{bandwidths[1] / 2**30:.1f} GiB/s (writing fresh pages), torch import {imported:.2f} s\n"
    )
    header = (
        f"{'case':<14} {'cells':>10} {'gc slow':>8} {'gc fast':>8} {'plain':>7} {'L':>7} {'L′':>7} {'warm':>7} "
        f"{'default':>8} {'cold':>7} {'cold0':>7} {'CLI':>6} {'script':>7} | {'warm/L':>6} {'warm/L′':>7} {'plain/warm':>10} "
        f"{'slow/warm':>9} {'cold/(L+c)':>10} {'cold/(L′+c)':>11} {'CLI/(imp+L)':>11} {'script/CLI':>10}"
    )
    print(header)
    first_call, rows = None, []
    with tempfile.TemporaryDirectory() as folder:
        for case in scaling_cases(options.quick):
            r = measure(case, Path(folder), bandwidths, options)
            rows.append(r)
            if first_call is None:  # the one-cell case: its cold time is all first-call cost
                first_call = max(0.0, r["cold"] - r["warm"])
            print(
                f"{r['case']:<14} {r['cells']:>10,} {r['gc_slow']:>8.3f} {r['gc_fast']:>8.3f} {r['plain']:>7.3f} "
                f"{r['L']:>7.3f} {r['L_fresh']:>7.3f} {r['warm']:>7.3f} {r['default']:>8.3f} {r['cold']:>7.3f} {r['cold0']:>7.3f} "
                f"{r['cli']:>6.2f} {r['script']:>7.2f} | {r['warm'] / r['L']:>6.2f} {r['warm'] / r['L_fresh']:>7.2f} "
                f"{r['plain'] / r['warm']:>10.2f} {r['gc_slow'] / r['warm']:>9.1f} "
                f"{r['cold'] / (r['L'] + first_call):>10.2f} {r['cold'] / (r['L_fresh'] + first_call):>11.2f} "
                f"{r['cli'] / (imported + r['L']):>11.2f} {r['script'] / r['cli']:>10.2f}",
                flush=True,
            )
    print("\nL′: L with the Jacobians written into fresh pages, as any check that returns new Jacobians must")
    print_targets(rows, first_call, imported)


SMALL_CELLS = 10**5  # below: no ratio to L (L is about a millisecond; the guards matter more)
FIXED_OVERHEAD_S = 0.003  # warm, per check, below SMALL_CELLS


def print_targets(rows: list[dict], first_call: float, imported: float) -> None:
    """Each target once, on its worst case."""
    large = [r for r in rows if r["cells"] >= SMALL_CELLS]
    small = [r for r in rows if r["cells"] < SMALL_CELLS]

    def worst(ratio, cases, *, highest=True):
        pick = max if highest else min
        r = pick(cases, key=ratio)
        return ratio(r), r["case"]

    value, case = worst(lambda r: r["cold"] / (r["L_fresh"] + first_call), large)
    report(
        f"cold / (L′ + c), c = {first_call * 1000:.0f} ms, every case >= 10^5 cells",
        value,
        1.3,
        where=case,
    )
    value, case = worst(lambda r: r["cold0"] / (r["L_fresh"] + first_call), large)
    print(f"  (without the pre-forked spare: cold0 / (L′ + c) = {value:.2f} on {case})")
    value, case = worst(lambda r: r["warm"] / r["L_fresh"], large)
    report("warm / L′, every case >= 10^5 cells", value, 1.3, where=case)
    value, case = worst(lambda r: r["plain"] / r["warm"], large, highest=False)
    report(
        "plain alternative / warm, every case >= 10^5 cells", value, 1.0, at_most=False, where=case
    )
    if small:
        value, case = worst(lambda r: r["gc_slow"] / r["warm"], small, highest=False)
        report("gradcheck / warm, every case < 10^5 cells", value, 1.0, at_most=False, where=case)
        one_cell = rows[0]  # all fixed cost: its forward and backward take microseconds
        report(
            "fixed cost per check, warm - L in ms",
            (one_cell["warm"] - one_cell["calls"]) * 1000,
            FIXED_OVERHEAD_S * 1000,
            where=one_cell["case"],
        )
        extra = max(small, key=lambda r: r["warm"] - r["calls"])
        print(
            f"(not a target) warm - L on the other small cases: at most {(extra['warm'] - extra['calls']) * 1000:.1f} ms "
            f"({extra['case']}): the guards' own forwards (the reference, the probe columns, the no-grad forward) "
            "cost what the Function's forward costs"
        )
    value, case = worst(lambda r: r["cli"] / (imported + r["L"]), rows)
    report("CLI process / (torch import + L)", value, 1.3, where=case)
    value, case = worst(lambda r: r["script"] / r["cli"], rows, highest=False)
    report("gradcheck script / CLI process", value, 1.0, at_most=False, where=case)


if __name__ == "__main__":
    main()

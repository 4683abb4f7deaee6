"""Peak bytes a check holds, per case, against what the size guard promises.

Each case runs in a fresh process, as ``gradviz check --json`` does: the check, its JSON and its
table, nothing that asks for arrays; then the same result's error map and failing mask are read
(what the window's files, the API's arrays and a failing block's hints do). The peak of NumPy's
allocations (tracemalloc: the Jacobians and maps are NumPy arrays) and the growth of the
process's peak RSS (torch's own buffers included) are printed against ``held_bytes`` from
``gradviz.core.large``, without and with the maps, computed from the guard's own constants.

Run: .venv/bin/python bench/held_bytes.py [--full]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from bench.cases import scaling_cases  # noqa: E402
from bench.targets import report  # noqa: E402
from gradviz.core.check import check_function  # noqa: E402
from gradviz.core.inputs import prepare_inputs  # noqa: E402
from gradviz.core.large import held_bytes  # noqa: E402
from gradviz.protocol.launch import RUNTIME_ENVIRONMENT  # noqa: E402
from gradviz.schema.report import format_table, result_to_dict  # noqa: E402
from gradviz.schema.settings import CheckSettings  # noqa: E402


def _rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kilobytes on Linux


def measure_one(name: str, full: bool) -> dict:
    """One case in this (fresh) process: peaks without and with the maps read."""
    case = next(c for c in scaling_cases(quick=not full) if c.name == name)
    loaded = case.loaded()
    fn, args = case.load()
    names = [f"in{j}" for j in range(len(args))]
    settings = CheckSettings()
    small = scaling_cases(quick=True)[0]  # first-call costs, on a case too small to raise the peak RSS
    small_fn, small_args = small.load()
    check_function(
        small_fn, prepare_inputs(small_args, None, None, ["a", "b"]), settings, loaded=small.loaded()
    )
    prepared = prepare_inputs(args, None, None, names)
    rss0 = _rss()
    tracemalloc.start()
    result = check_function(fn, prepared, settings, loaded=loaded)
    result_to_dict(result)
    format_table(result)
    json_peak = tracemalloc.get_traced_memory()[1]
    rss_json = _rss() - rss0
    for block in result.blocks:
        block.error  # noqa: B018 - reading it builds both maps, as a path that asks for arrays does
    maps_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    cells = sum(b.analytic.size for b in result.blocks)
    return {
        "case": name,
        "cells": cells,
        "large": bool(result.large_blocks),
        "json_peak": json_peak,
        "rss_json": rss_json,
        "maps_peak": maps_peak,
        "promise": held_bytes(cells, settings.chunk_bytes, maps=False),
        "promise_maps": held_bytes(cells, settings.chunk_bytes),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--full", action="store_true", help="every size of the scaling table (slow)")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.one:
        print(json.dumps(measure_one(options.one, options.full)))
        return
    torch.set_num_threads(1)
    mib = 2**20
    print("peak bytes held by a check, fresh process per case (MiB; promise = the size guard's held_bytes)")
    print(
        f"{'case':<16} {'cells':>11} {'json peak':>10} {'rss grew':>9} {'promise':>9} {'ratio':>6} {'rss/pr':>6}   "
        f"{'maps read':>10} {'promise':>9} {'ratio':>6}"
    )
    worst = 0.0
    for case in scaling_cases(quick=not options.full):
        command = [sys.executable, __file__, "--one", case.name, *(["--full"] if options.full else [])]
        env = {**os.environ, **RUNTIME_ENVIRONMENT}  # each case's process allocates as a worker's run does
        out = subprocess.run(command, capture_output=True, text=True, check=True, env=env).stdout
        m = json.loads(out.strip().splitlines()[-1])
        if m["large"] or not m["cells"]:
            print(f"{m['case']:<16} too large to hold: searched by projections")
            continue
        ratio, ratio_maps = m["json_peak"] / m["promise"], m["maps_peak"] / m["promise_maps"]
        worst = max(worst, ratio, ratio_maps)
        print(
            f"{m['case']:<16} {m['cells']:>11,} {m['json_peak'] / mib:>10.1f} {m['rss_json'] / mib:>9.1f} "
            f"{m['promise'] / mib:>9.1f} {ratio:>6.2f} {m['rss_json'] / m['promise']:>6.2f}   {m['maps_peak'] / mib:>10.1f} {m['promise_maps'] / mib:>9.1f} "
            f"{ratio_maps:>6.2f}"
        )
    print("rss/pr: peak RSS growth (torch's chunk buffers and the allocator's retained pages too) / promise")
    report("NumPy peak of a check / the size guard's promise", worst, 1.0, where="worst case")


if __name__ == "__main__":
    main()

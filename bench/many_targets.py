"""``gradviz check T1 ... TN``: does one process pay torch's import once for N targets?

Measured in the same run, on the same N built-in examples:
  whole   the whole ``gradviz check T1 ... TN`` process, start to exit
  ideal   a fresh ``python -c "import torch"`` plus the sum of the N checks run warm in this
          process (each loaded and checked once before it is timed): what N checks cost at best
  apart   N separate ``gradviz check T`` processes, one after another (what a script that loops over targets does)
  spawn   ``whole`` under ``GRADVIZ_WORKER_START=spawn`` (macOS and Windows): every run is a fresh
          interpreter, started while the run before it works, so at best it costs one torch import
          for the worker and one a target
Targets: whole / ideal <= 1.3; spawn / ((N + 1) torch imports) <= 1.3. whole / apart says what a
script saves.

Run: .venv/bin/python bench/many_targets.py [--repeat R]  (medians over R rounds)
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.targets import report  # noqa: E402

TARGETS = ("abs_product", "kill_head", "mul_constant", "mul_constant_lazy_grads", "buggy_square_factor")
TARGET_RATIO = 1.3
SPAWN_RATIO = 1.3


def wall(command: list[str], **more_env: str) -> float:
    """Seconds a process takes, start to exit (its output dropped; exit 0 or 1 is a verdict)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), **more_env}
    start = time.perf_counter()
    done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr}")
    return seconds


def warm_checks(targets: tuple[str, ...]) -> float:
    """The sum of the N checks in this process, each timed on its second run (load and check)."""
    from gradviz.core.check import check_source
    from gradviz.core.loader import load_file
    from gradviz.schema.library import find_builtin
    from gradviz.schema.settings import CheckSettings

    total = 0.0
    for name in targets:
        path = find_builtin(name)
        for _ in range(2):
            start = time.perf_counter()
            check_source(load_file(path), None, CheckSettings())
            seconds = time.perf_counter() - start
        total += seconds
    return total


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    cli = [sys.executable, "-m", "gradviz", "check"]
    wholes, ideals, aparts, imports, warms, spawns = [], [], [], [], [], []
    for _ in range(options.repeat):
        wholes.append(wall([*cli, *TARGETS]))
        spawns.append(wall([*cli, *TARGETS], GRADVIZ_WORKER_START="spawn"))
        imports.append(wall([sys.executable, "-c", "import torch"]))
        warms.append(warm_checks(TARGETS))
        ideals.append(imports[-1] + warms[-1])
        aparts.append(sum(wall([*cli, name]) for name in TARGETS))
    whole, ideal, apart, spawn = (statistics.median(v) for v in (wholes, ideals, aparts, spawns))
    torch_import = statistics.median(imports)
    ratio = whole / ideal
    print(
        f"gradviz check with N={len(TARGETS)} targets (medians of {options.repeat} rounds, load: {os.getloadavg()[0]:.1f}):"
    )
    print(f"  one process, N targets   {whole:6.2f} s")
    print(f"  the same, under spawn    {spawn:6.2f} s")
    print(f"  import torch             {torch_import:6.2f} s")
    print(f"  N warm checks, summed    {statistics.median(warms):6.2f} s")
    print(f"  N separate processes     {apart:6.2f} s")
    report("N targets in one process / (torch import + N warm checks)", ratio, TARGET_RATIO)
    report("spawn: N targets in one command / ((N + 1) torch imports)", spawn / ((len(TARGETS) + 1) * torch_import), SPAWN_RATIO)
    print(f"  whole / N separate processes    {whole / apart:.2f}")


if __name__ == "__main__":
    main()

"""The real-world attacks in bench/robustness.py: every ``bench/attacks_*.py``.

Each of those modules exposes ``attack_cases()``: (name, case) pairs where a case performs one
attack for real (two windows killed, a full disk, a daemonizing Function, a stopped worker, a
forged verdict...) and returns "" when gradviz withstood it, else what went wrong. After all of
them, nothing may be left behind: no process below this one, and no new gradviz temp folder.
"""

from __future__ import annotations

import importlib
import os
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
LEFTOVER_PREFIXES = ("gradviz-worker-", "gradviz-runs-")


def _temp_folders() -> set[str]:
    tmp = Path(tempfile.gettempdir())
    return {p.name for prefix in LEFTOVER_PREFIXES for p in tmp.glob(f"{prefix}*")}


def _modules() -> list[str]:
    return sorted(f"bench.{p.stem}" for p in BENCH.glob("attacks_*.py"))


def run_attack_cases() -> tuple[int, int]:
    """Print a line per attack, then the leftover check; (passed, failed)."""
    from gradviz.protocol import process_tree

    passed = failed = 0
    folders_before = _temp_folders()
    for module_name in _modules():
        module = importlib.import_module(module_name)
        group = module_name.removeprefix("bench.attacks_")
        for name, case in module.attack_cases():
            started = time.monotonic()
            try:
                why = case()
            except Exception as exc:  # a case that crashes is a failure, named
                why = f"{type(exc).__name__}: {exc}"
            seconds = time.monotonic() - started
            passed += not why
            failed += bool(why)
            verdict = f"FAIL ({why})" if why else "ok"
            print(f"{group + ': ' + name:<50} {seconds:8.2f}  {verdict}")
    process_tree.reap_exited()
    left = [pid for pid in process_tree.descendants(os.getpid()) if not process_tree.is_zombie(pid)]
    new_folders = sorted(_temp_folders() - folders_before)
    for name, why in (("no process left behind", left), ("no temp folder left behind", new_folders)):
        passed += not why
        failed += bool(why)
        print(f"{'all: ' + name:<50} {'-':>8}  {'FAIL (' + str(why)[:120] + ')' if why else 'ok'}")
    return passed, failed

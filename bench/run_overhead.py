"""What a run costs beyond its own work: request to answer, minus the check's own seconds.

Every run now happens in a process forked from the warm worker (a clean interpreter state per
run). This measures the price of that against the check itself, over many runs of a small
Function through one worker, as the window uses it.

Run: .venv/bin/python bench/run_overhead.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gradviz.schema.library import find_builtin  # noqa: E402
from gradviz.schema.requests import CheckRequest, CodeSource  # noqa: E402
from gradviz.worker.client import WorkerClient  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--example", default="mul_constant")
    options = parser.parse_args()
    request = CheckRequest(CodeSource(path=str(find_builtin(options.example))), arrays=True, graph=True)
    with WorkerClient(output=None, warm=True) as client:
        client.start()
        client.wait_ready()
        client.request(request)  # first run: page cache, imports in the worker
        round_trips, work = [], []
        for _ in range(options.runs):
            start = time.perf_counter()
            reply = client.request(request)
            round_trips.append(time.perf_counter() - start)
            assert reply.ok, reply.error
            work.append(reply.result["seconds"]["total"])
    overhead = [r - w for r, w in zip(round_trips, work)]
    print(f"{options.example}, {options.runs} runs through one worker (with the graph and the .npy files):")
    print(f"  request to answer  median {statistics.median(round_trips) * 1000:.1f} ms")
    print(f"  the check itself   median {statistics.median(work) * 1000:.1f} ms")
    print(f"  per-run overhead   median {statistics.median(overhead) * 1000:.1f} ms  (fork, load, graph, files, relay)")


if __name__ == "__main__":
    main()

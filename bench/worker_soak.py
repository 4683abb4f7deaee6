"""The worker's memory over many runs of a file that holds a 64 MB global.

Each run happens in a process forked from the warm worker, so whatever a run's module keeps
(a big global, a cache, a patched torch) leaves with that process. Target: the
worker's resident memory is flat over 200 such runs (within 10 % and a few MiB), and every
run's verdict is the same.

Run: .venv/bin/python bench/worker_soak.py [--runs 200] [--mb 64]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gradviz.schema.requests import CheckRequest, CodeSource  # noqa: E402
from gradviz.worker.client import WorkerClient  # noqa: E402

SOURCE = '''
import torch
from torch.autograd import Function

HELD = bytearray({nbytes})  # a module-level global the size of a small dataset
HELD[::4096] = b"x" * len(HELD[::4096])  # touched, so it is resident


class Double(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2
'''


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--mb", type=int, default=64)
    options = parser.parse_args()
    path = Path(tempfile.mkdtemp()) / "big_global.py"
    path.write_text(SOURCE.format(nbytes=options.mb * 2**20), encoding="utf-8")
    request = CheckRequest(CodeSource(path=str(path)), arrays=True, graph=True)
    with WorkerClient(output=None, warm=True) as client:
        client.start()
        client.wait_ready()
        for _ in range(5):  # first runs: page cache and the allocator settle
            assert client.request(request).ok
        before = rss_mib(client.pid)
        samples, verdicts = [], set()
        start = time.perf_counter()
        for k in range(options.runs):
            reply = client.request(request)
            assert reply.ok, reply.error
            verdicts.add(reply.result.get("passed"))
            if k % 50 == 49:
                samples.append(rss_mib(client.pid))
        seconds = time.perf_counter() - start
        after = rss_mib(client.pid)
    growth = after - before
    print(f"{options.runs} runs of a file with a {options.mb} MB global in {seconds:.1f} s ({1000 * seconds / options.runs:.0f} ms a run)")
    print(f"  worker RSS MiB  before {before:.1f}  every 50 runs {', '.join(f'{s:.1f}' for s in samples)}  after {after:.1f}")
    print(f"  growth {growth:+.1f} MiB ({growth / before:+.1%}); verdicts {sorted(map(str, verdicts))}")
    ok = growth <= max(0.10 * before, 4.0) and len(verdicts) == 1
    print("ok" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

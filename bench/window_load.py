"""The window under load: launch-to-verdict against a bare window + torch peer.

Targets: launch-to-verdict / peer < 1.5, and a frame on screen (the splash) within 1 s of
launch, with every core busy with other work, the way the window starts on a 2-core machine
running a build or another test suite. Idle is printed for reference.

gradviz: a fresh ``python main.py`` on the default example, from launch until its verdict and
heatmaps are drawn (``launch_timing``: the window's own ``result_shown``).

The peer is what any PySide6 app that checks gradients with torch must do at least, laid out the
way gradviz is: one process that starts a child importing torch (``python -P -c "import torch"``,
as the worker is ``python -P -m gradviz.worker``), then imports Qt and shows a bare QMainWindow, and
is done once the window is shown and the child has answered. torch is imported in a separate
process because that is gradviz's architecture (the GUI never imports torch; the worker does); a
peer importing torch in the window's own process would run the two imports one after the other on
one core and make the target easier under load, not fairer. What gradviz does beyond the peer (its
real widgets, the worker's set-up, the first check and drawing it) is what the ratio measures.

Load: ``os.cpu_count()`` busy-looping processes, started here and killed at the end (each also
dies with this process: the parent-death signal). gradviz and the peer alternate, after one
unmeasured pair that warms the OS caches; medians are printed, idle first, then loaded.

Run: .venv/bin/python bench/window_load.py [--pairs N]   (offscreen without a display)
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.launch_timing import ROOT, fresh_user_env, launch_to_verdict, read_marks
from bench.targets import report

TARGET = 1.5
FRAME_SECONDS = 1.0  # something on screen (the splash) within a second of launch, whatever the load

PEER = r"""
import subprocess, sys, time
LAUNCHED = float(sys.argv[1])

def mark(name):
    print(f"MARK {name} {time.monotonic() - LAUNCHED:.4f}", flush=True)

child = subprocess.Popen(
    [sys.executable, "-P", "-c", "import torch; print(torch.__version__, flush=True)"],
    stdout=subprocess.PIPE, text=True,
)
from PySide6.QtWidgets import QApplication, QMainWindow
app = QApplication(["peer"])
window = QMainWindow()
window.setWindowTitle("peer")
window.resize(1280, 800)
window.show()
app.processEvents()
mark("window")
child.stdout.readline()
mark("ready")
child.wait()
window.close()
"""

# a busy loop that dies with the bench (PR_SET_PDEATHSIG), even if the bench is killed with -9
HOG = r"""
import ctypes, os, signal, sys
ctypes.CDLL(None).prctl(1, signal.SIGKILL)
if os.getppid() != int(sys.argv[1]):
    sys.exit()
while True:
    pass
"""


def peer_seconds() -> float:
    """A bare window shown and a child that imported torch: seconds since launch until both."""
    with tempfile.TemporaryDirectory(prefix="gradviz-peer-") as tmp:
        launched = time.monotonic()
        out = subprocess.run(
            [sys.executable, "-c", PEER, repr(launched)], cwd=ROOT, env=fresh_user_env(Path(tmp)),
            capture_output=True, text=True, timeout=300, check=True,
        )  # fmt: skip
    return read_marks(out.stdout)["ready"]


@contextlib.contextmanager
def cpu_hogs(count: int) -> Iterator[list[subprocess.Popen]]:
    """``count`` processes spinning on a core each, for the duration of the block."""
    hogs: list[subprocess.Popen] = []
    try:
        for _ in range(count):
            hogs.append(subprocess.Popen([sys.executable, "-c", HOG, str(os.getpid())]))
        time.sleep(0.5)  # let them get going (and the scheduler see them as busy)
        yield hogs
    finally:
        for hog in hogs:
            hog.kill()
        for hog in hogs:
            hog.wait()


def alternate(pairs: int) -> tuple[list[dict[str, float]], list[float]]:
    """gradviz, peer, gradviz, peer, ..."""
    launches, peers = [], []
    for _ in range(pairs):
        launches.append(launch_to_verdict())
        peers.append(peer_seconds())
    return launches, peers


def summarize(label: str, launches: list[dict[str, float]], peers: list[float]) -> float:
    verdict = statistics.median(m["verdict"] for m in launches)
    peer = statistics.median(peers)
    ratio = verdict / peer
    phases = ", ".join(
        f"{name} {statistics.median(m[name] for m in launches):.2f} s" for name in ("splash", "window", "ready")
    )
    print(
        f"{label}: launch-to-verdict {verdict:.2f} s (median of {len(launches)}; {phases}), "
        f"peer (bare window + torch) {peer:.2f} s: ratio {ratio:.2f}"
    )
    return ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3, help="measured gradviz/peer pairs each, idle and loaded")
    parser.add_argument("--hogs", type=int, default=os.cpu_count() or 2, help="busy processes for the load")
    args = parser.parse_args()
    alternate(1)  # warms the OS caches: every measured launch finds the files read before
    idle = alternate(args.pairs)
    summarize("idle", *idle)
    with cpu_hogs(args.hogs):
        loaded = alternate(args.pairs)
    ratio = summarize(f"under load ({args.hogs} busy processes, {os.cpu_count()} cores)", *loaded)
    report(f"window launch-to-verdict / (bare window + torch), {args.hogs} busy processes", ratio, TARGET)
    frame = statistics.median(m["splash"] for m in loaded[0])
    report(f"seconds from launch to a frame on screen, {args.hogs} busy processes", frame, FRAME_SECONDS)


if __name__ == "__main__":
    main()

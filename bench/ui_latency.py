"""UI latency of the real window: time to first window and the longest event-loop gap.

Targets: first window <= 1.0 s on a warm machine; no event-loop gap over 50 ms
during a large run nor while a 2000x2000 result is drawn (2000x2000 redraw under 25 ms).

Run: .venv/bin/python bench/ui_latency.py   (uses QT_QPA_PLATFORM=offscreen without a display)
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
if not os.environ.get("DISPLAY"):
    os.environ["QT_QPA_PLATFORM"] = "offscreen"

from bench.launch_timing import launch_to_verdict  # noqa: E402

LARGE = '''
import torch
from torch.autograd import Function

class Tanh2000(Function):
    """y = tanh(W x) with a fixed 2000x2000 W: a 2000x2000 Jacobian."""

    @staticmethod
    def forward(ctx, x, w):
        y = torch.tanh(w @ x)
        ctx.save_for_backward(y, w)
        return y

    @staticmethod
    def backward(ctx, g):
        y, w = ctx.saved_tensors
        return w.T @ (g * (1 - y * y)), None

def example_inputs(device, dtype):
    x = torch.randn(2000, device=device, dtype=dtype, requires_grad=True)
    w = torch.randn(2000, 2000, device=device, dtype=dtype) / 45
    return x, w
'''

FIRST_WINDOW = """
import time, sys
start = time.perf_counter()
from PySide6.QtWidgets import QApplication
from PySide6.QtCore import QSettings
from gradviz.app.main_window import MainWindow
app = QApplication([])
window = MainWindow(QSettings({ini!r}, QSettings.Format.IniFormat), auto_run=False)
window.show()
app.processEvents()
print(time.perf_counter() - start)
window.close()
from gradviz.app.launch import release_window
release_window(window)
"""


def time_to_verdict() -> tuple[float, float]:
    """Launch to the default example's verdict and heatmaps drawn, and to the memory study drawn
    (a fresh ``python main.py``, as a user starts the app; the OS caches warmed by one run first)."""
    launch_to_verdict(memory=True)
    marks = launch_to_verdict(memory=True)
    return marks["verdict"], marks["memory"]


def time_to_first_window(tmp: Path) -> float:
    code = FIRST_WINDOW.format(ini=str(tmp / "first.ini"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, check=True)  # warm the OS caches
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    import tempfile

    from PySide6.QtCore import QElapsedTimer, QEventLoop, QSettings, QTimer
    from PySide6.QtWidgets import QApplication

    from gradviz.app.main_window import MainWindow

    tmp = Path(tempfile.mkdtemp())
    first = time_to_first_window(tmp)
    print(f"time to first window: {first:.3f} s (target <= 1.0 s)")
    verdict, memory = time_to_verdict()
    print(f"launch to the default example's verdict drawn: {verdict:.2f} s (target <= 1.5 s); memory study drawn: {memory:.2f} s")

    app = QApplication.instance() or QApplication([])
    window = MainWindow(QSettings(str(tmp / "bench.ini"), QSettings.Format.IniFormat), auto_run=False)
    window.show()
    loop = QEventLoop()
    window.worker.ready.connect(loop.quit)
    if not window.worker.is_ready:
        loop.exec()

    gaps: list[float] = []
    clock = QElapsedTimer()
    clock.start()
    last = [clock.elapsed()]

    def tick() -> None:
        now = clock.elapsed()
        gaps.append(now - last[0])
        last[0] = now

    ticker = QTimer()
    ticker.setInterval(5)
    ticker.timeout.connect(tick)

    window.editor.set_text(LARGE)
    done = QEventLoop()
    shown: set[str] = set()

    def seen(what: str) -> None:  # the memory study is measured right after the first check
        shown.add(what)
        if shown >= {"result", "memory"}:
            done.quit()

    window.result_shown.connect(lambda: seen("result"))
    window.memory_shown.connect(lambda: seen("memory"))
    window.run_failed.connect(lambda m: (print("run failed:", m), done.quit()))
    ticker.start()
    start = time.perf_counter()
    window.run()
    done.exec()
    run_seconds = time.perf_counter() - start
    ticker.stop()
    run_gap = max(gaps) - 5 if gaps else float("nan")
    print(f"large run (2000x2000 Jacobian, then the memory study; {run_seconds:.1f} s): max event-loop gap {run_gap:.0f} ms (target <= 50)")

    panel = window.jacobians
    times = []
    for _ in range(5):
        t = time.perf_counter()
        panel.set_block(0)
        app.processEvents()
        times.append((time.perf_counter() - t) * 1000)
    print(f"redraw of the 2000x2000 block: best {min(times):.1f} ms, worst {max(times):.1f} ms (target <= 25)")
    window.close()
    from gradviz.app.launch import release_window

    release_window(window)


if __name__ == "__main__":
    main()

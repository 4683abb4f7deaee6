"""Attacks on the editor, each performed for real: the 10 MiB one-line file
and a session holding such a line are opened through the functions the window's Open calls;
unclosed ``class A(`` headers are scanned, and typed into in a real editor (offscreen, in a
process of its own) wired to the Function list as the window wires it. Each case returns ""
when gradviz withstood the attack, else a short reason, and removes what it made. Speeds are
bench/typing_latency.py's; the bounds here only tell a freeze (seconds) from a key.

Run: .venv/bin/python -c "from bench.attacks_editor import attack_cases; \\
    [print(n, repr(f())) for n, f in attack_cases()]"
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.editor_files import class_headers_text, long_line_text, write_long_line  # noqa: E402

FREEZE_S = 2.0  # an answer later than this is a freeze
SLOW_KEY_MS = 250.0  # a key slower than this is the attack working (a working one costs 2 to 14 s)


def long_line_file() -> str:
    """A 10 MiB file that is one line: refused at once with one sentence, not shown."""
    from gradviz.app.file_loading import LoadRefused, read_source

    with tempfile.TemporaryDirectory() as tmp:
        path = write_long_line(Path(tmp))
        started = time.perf_counter()
        try:
            read_source(path)
        except LoadRefused as exc:
            took = time.perf_counter() - started
            if "characters long" not in exc.message or "\n" in exc.message:
                return f"refused with an unclear message: {exc.message[:120]}"
            return "" if took < FREEZE_S else f"refused after {took:.1f} s"
        return "opened: the editor would take seconds per key"


def long_line_session() -> str:
    """A session whose code is one 10 MiB line: refused like the file."""
    from gradviz.app.file_loading import LoadRefused, read_session

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "long.gradviz"
        code = long_line_text(4 * 2**20)
        path.write_text(json.dumps({"format": "gradviz-session", "version": 1, "code": code}), encoding="utf-8")
        try:
            read_session(path)
        except LoadRefused as exc:
            return "" if "characters long" in exc.message else f"refused for another reason: {exc.message[:120]}"
        return "opened: the editor would take seconds per key"


def class_headers_scan() -> str:
    """2 MB of unclosed ``class A(``: the Function-list scan stays linear (it took minutes)."""
    from gradviz.app.function_list import scan_function_names

    text = class_headers_text()
    started = time.perf_counter()
    names = scan_function_names(text)
    took = time.perf_counter() - started
    if names:
        return f"found Functions in unclosed headers: {names[:3]}"
    return "" if took < FREEZE_S else f"the scan took {took:.1f} s"


_TYPING = r"""
import sys, threading, time
from PySide6.QtCore import QEventLoop, QTimer, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from bench.editor_files import class_headers_text
from gradviz.app.function_list import LIVE_SCAN_CHARS, REPARSE_DELAY_MS, FunctionListUpdater
from gradviz.app.panels.editor_panel import EditorPanel

app = QApplication([])
panel = EditorPanel()
panel.resize(900, 700)
panel.show()
updater = FunctionListUpdater(panel.text)
panel.text_edited.connect(updater.text_changed)
panel.set_text(class_headers_text(LIVE_SCAN_CHARS - 50_000))
updater.scan_now()

def pump(ms):
    loop = QEventLoop()
    QTimer.singleShot(ms, loop.quit)
    loop.exec()

pump(300)
editor = panel.editor
editor.setFocus()
worst, most = 0.0, 0
for k, char in enumerate("class B(Function):"):
    started = time.perf_counter()
    QTest.keyClick(editor, char)
    app.processEvents()
    worst = max(worst, (time.perf_counter() - started) * 1000)
    pump(REPARSE_DELAY_MS // 2 if k % 4 else REPARSE_DELAY_MS + 50)
    most = max(most, sum(t.name == "gradviz-function-list" for t in threading.enumerate()))
print(f"{worst:.1f} {most}")
"""


def class_headers_typing() -> str:
    """Keys typed into ~1 MB of unclosed ``class A(`` while the list follows: one scan thread at
    a time (17 piled up) and no key that takes seconds."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(ROOT)}
    try:
        out = subprocess.run(
            [sys.executable, "-c", _TYPING], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
        )
    except subprocess.TimeoutExpired:
        return "typing 18 keys took over 2 minutes"
    if out.returncode != 0:
        return f"the editor process failed: {(out.stderr.strip().splitlines() or ['?'])[-1][:120]}"
    worst, most = out.stdout.split()[-2:]
    if int(most) > 2:  # one scanning, one that has answered and is ending
        return f"{most} scan threads at once"
    return "" if float(worst) < SLOW_KEY_MS else f"a key took {float(worst):.0f} ms"


def attack_cases() -> list[tuple[str, Callable[[], str]]]:
    return [
        ("editor: a 10 MiB one-line file is refused", long_line_file),
        ("editor: a session with a 4 MiB line is refused", long_line_session),
        ("editor: 2 MB of unclosed class headers scan in linear time", class_headers_scan),
        ("editor: typing into unclosed class headers runs one scan at a time", class_headers_typing),
    ]


__all__ = ["attack_cases"]

"""``gradviz check`` on a terminal: a progress line with the time left on stderr, wiped at the
end; nothing of it on stdout, and nothing at all when stderr is a pipe.

The command runs for real with a pseudo-terminal as its stderr (what a shell gives it) and a
pipe as its stdout (``gradviz check ... > table.txt``). The Function sleeps in forward so the
check lasts past the one second after which the line appears; nothing here measures time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from gradviz.cli.progress import TerminalProgress, progress_line, waiting_line
from tests.paths import ROOT

SLOW = textwrap.dedent(
    """
    import time
    import torch

    class SlowSumOfSquares(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *xs):
            # the numerical Jacobian reports progress after each input, and takes two forwards per
            # column: 8 inputs x 5 columns x 2 x 20 ms, a check of a few seconds in 8 steps
            time.sleep(0.02)
            ctx.save_for_backward(*xs)
            return sum(x * x for x in xs)

        @staticmethod
        def backward(ctx, grad):
            return tuple(2 * x * grad for x in ctx.saved_tensors)

    def example_inputs(device="cpu", dtype=torch.float64):
        return tuple(torch.randn(5, device=device, dtype=dtype, requires_grad=True) for _ in range(8))
    """
)

pytestmark = pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")


def run_check(tmp_path, *args: str, stderr_tty: bool) -> tuple[int, str, str]:
    """(exit code, stdout, what stderr showed) of ``gradviz check SLOW``."""
    source = tmp_path / "slow.py"
    source.write_text(SLOW, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "gradviz", "check", str(source), *args]
    if not stderr_tty:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
        return done.returncode, done.stdout, done.stderr
    leader, follower = os.openpty()
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=follower, env=env) as process:
        os.close(follower)
        shown = bytearray()
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: every end of the terminal's other side is closed
                break
            if not chunk:
                break
            shown += chunk
        stdout = process.stdout.read().decode()
        code = process.wait(timeout=300)
    os.close(leader)
    return code, stdout, shown.decode(errors="replace")


def test_a_long_check_on_a_terminal_shows_progress_and_time_left_then_wipes_it(tmp_path):
    """stdout is a pipe carrying the JSON (the strictest "nothing but the result"), stderr a terminal."""
    code, stdout, terminal = run_check(tmp_path, "--json", stderr_tty=True)
    assert code == 0, terminal
    assert json.loads(stdout)["passed"] is True  # stdout: one JSON object, nothing else
    lines = [part for part in terminal.split("\r") if part.strip()]
    progress = [part.rstrip() for part in lines if part.startswith("gradviz: ") and "%" in part]
    assert progress, f"no progress line on the terminal: {terminal!r}"
    assert any(part.endswith(" left") for part in progress), progress  # the time left, once the rate is known
    # wiped at the end: after the last line only blanks over it and a carriage return
    tail = terminal[terminal.rfind(progress[-1]) + len(progress[-1]) :]
    assert set(tail) == {" ", "\r"} and tail.endswith("\r") and " " * len(progress[-1]) in tail, repr(tail)
    assert "\n" not in terminal, "the progress line is rewritten in place, never scrolled"


def test_on_a_pipe_stderr_gets_no_progress(tmp_path):
    code, stdout, stderr = run_check(tmp_path, stderr_tty=False)
    assert code == 0, stderr
    assert stderr == "" and "SlowSumOfSquares" in stdout


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Terminal:
    def __init__(self) -> None:
        self.text = ""

    def write(self, text: str) -> None:
        self.text += text

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return True


def test_quiet_for_the_first_second_then_throttled_and_the_functions_output_on_its_own_line():
    clock, terminal = Clock(), Terminal()
    progress = TerminalProgress(terminal, clock=clock)
    progress(1, 100)
    clock.now = 0.9
    progress(10, 100)
    assert terminal.text == ""  # a check under a second shows nothing
    clock.now = 1.1
    progress(12, 100)
    first = terminal.text
    assert first.startswith("\rgradviz: 12% (12 / 100), ~") and first.endswith(" left")
    clock.now = 1.15
    progress(13, 100)
    assert terminal.text == first  # throttled
    progress.write("printed by the Function\n")
    assert terminal.text.endswith("\r" + " " * (len(first) - 1) + "\rprinted by the Function\n")
    clock.now = 1.2
    progress(14, 100)  # drawn again after the Function's output, throttle or not
    assert terminal.text.endswith(progress_line(14, 100, progress._estimate.report(14, 100, 1.2)))
    with progress:
        pass
    assert terminal.text.endswith("\r")


def test_not_a_terminal_gets_nothing_but_the_functions_output():
    terminal = Terminal()
    terminal.isatty = lambda: False
    clock = Clock()
    progress = TerminalProgress(terminal, clock=clock)
    for k in range(1, 50):
        clock.now = k / 10
        progress(k, 50)
    progress.write("hello\n")
    progress.clear()
    assert terminal.text == "hello\n"


def test_the_line_moves_while_no_report_comes_before_the_first_and_after_the_last():
    """The worker starting (torch, the user's module) and the work after the last column send no
    report: the line says what is going on and for how long instead of standing still."""
    clock, terminal = Clock(), Terminal()
    progress = TerminalProgress(terminal, clock=clock)
    clock.now = 0.5
    progress.tick()
    assert terminal.text == ""  # under a second: nothing
    clock.now = 3.2
    progress.tick()
    assert terminal.text.endswith(waiting_line(None, 3.2)) and "starting" in terminal.text
    clock.now = 4.0
    progress(10, 100)
    drawn = terminal.text
    clock.now = 9.0
    progress.tick()
    assert terminal.text == drawn  # mid-run the reports move the line, not the ticker
    progress(100, 100)
    clock.now = 20.0
    progress.tick()
    assert terminal.text.endswith(waiting_line((100, 100), 20.0))
    assert "finishing" in terminal.text and "20 s" in terminal.text

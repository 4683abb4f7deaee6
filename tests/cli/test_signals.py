"""Real signals to a real ``gradviz``: each ends it with its own exit status, no traceback and
nothing left behind; a Ctrl+Z'd client keeps the verdict its worker gave meanwhile; a user's own
SIGUSR1 handler cannot turn a timeout into an error of the user's code.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.paths import ROOT
from tests.worker.lifecycle import interruptible, wait_for_file

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="POSIX signals, /proc")

HANG_GUARD_S = 180


def start(args: list[str], tmp: Path | None = None, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if tmp is not None:
        env["TMPDIR"] = str(tmp)
    return subprocess.Popen(
        [sys.executable, "-m", "gradviz", *args],
        stdout=kwargs.pop("stdout", subprocess.PIPE),
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=interruptible,
        **kwargs,
    )


def finish(process: subprocess.Popen) -> tuple[str, str]:
    try:
        return process.communicate(timeout=HANG_GUARD_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise AssertionError("gradviz never ended") from None


def marking_source(marker: Path, body: str) -> str:
    """A Function whose forward writes ``marker`` (the user's code is running) and then ``body``."""
    return f"""
import pathlib
import signal
import time

import torch


class Marked(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        pathlib.Path({str(marker)!r}).write_text("running")
{body}
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


def example_inputs(device, dtype):
    return (torch.randn(3, device=device, dtype=dtype, requires_grad=True),)
"""


def test_list_into_a_closed_pipe_is_one_line_not_a_traceback():
    read, write = os.pipe()
    os.close(read)  # `gradviz list | true`: the reader is gone before anything is written
    try:
        process = start(["list"], stdout=write)
    finally:
        os.close(write)
    _, err = finish(process)
    assert process.returncode == 2
    assert "Traceback" not in err and "BrokenPipeError" not in err
    assert "Broken pipe" in err


def test_sigint_while_gradviz_loads_exits_130_without_a_traceback():
    for delay in (0.02, 0.04, 0.06, 0.08, 0.1, 0.15, 0.2):
        process = start(["list"])
        time.sleep(delay)
        process.send_signal(signal.SIGINT)
        _, err = finish(process)
        if process.returncode == 0 or "Fatal Python error: init_" in err or _only_runpy(err):
            continue  # finished already, or still in the interpreter's own start-up (streams, site, runpy), before gradviz
        assert process.returncode in (130, -signal.SIGINT), (delay, err)
        assert "Traceback" not in err, (delay, err)


def _only_runpy(err: str) -> bool:
    """A KeyboardInterrupt in the interpreter's own ``-m`` machinery (importing runpy, or runpy
    finding and loading the package's code): every frame is a frozen one, so it arrived before
    gradviz's first line ran."""
    if err.startswith("Could not import runpy module"):
        return True
    frames = [line.strip() for line in err.splitlines() if line.strip().startswith("File ")]
    return bool(frames) and all(f.startswith('File "<frozen ') for f in frames) and err.rstrip().endswith(
        "KeyboardInterrupt"
    )


def _wait_for_worker(pid: int, seconds: float = 120) -> None:
    """Until ``pid`` has a child (the worker), so a signal now reaches the client mid-request."""
    end = time.monotonic() + seconds
    children = Path(f"/proc/{pid}/task/{pid}/children")
    while time.monotonic() < end:
        try:
            if children.read_text().split():
                return
        except OSError:
            return
        time.sleep(0.02)
    raise AssertionError("the worker never started")


def test_sigterm_to_memory_exits_143(tmp_path):
    process = start(["memory"], tmp_path)
    _wait_for_worker(process.pid)
    process.send_signal(signal.SIGTERM)
    _, err = finish(process)
    assert process.returncode == 143, err
    assert "terminated" in err
    assert not list(tmp_path.glob("gradviz-runs-*"))


def test_sighup_mid_check_removes_the_run_folder(tmp_path):
    marker = tmp_path / "marker"
    path = tmp_path / "slow.py"
    path.write_text(marking_source(marker, "        time.sleep(60)"))
    folder = tmp_path / "tmp"
    folder.mkdir()
    process = start(["check", str(path)], folder)
    wait_for_file(marker, 120)
    assert list(folder.glob("gradviz-runs-*"))  # the request's folder, while it runs
    process.send_signal(signal.SIGHUP)
    _, err = finish(process)
    assert process.returncode == 128 + signal.SIGHUP, err
    assert "Traceback" not in err
    assert not list(folder.glob("gradviz-runs-*"))


def test_a_users_own_sigusr1_handler_does_not_turn_a_timeout_into_its_error(tmp_path):
    marker = tmp_path / "marker"
    path = tmp_path / "own_handler.py"
    handler = (
        "        def mine(signum, frame):\n"
        "            raise RuntimeError('my own SIGUSR1 handler')\n"
        "        signal.signal(signal.SIGUSR1, mine)\n"
        "        while True:\n"
        "            time.sleep(0.01)"
    )
    path.write_text(marking_source(marker, handler))
    process = start(["check", str(path), "--timeout", "1", "--json"], tmp_path)
    out, err = finish(process)
    assert process.returncode == 2, err
    error = json.loads(out)["error"]
    assert error["kind"] == "timeout", error
    assert "RuntimeError" not in error["message"]
    assert "line" in error["message"]  # the stack dump still names where the code was


@pytest.mark.slow
def test_a_client_stopped_past_its_deadline_keeps_the_verdict_it_was_sent(tmp_path):
    """Ctrl+Z (SIGSTOP here) once the check runs, continued after timeout + grace: the worker
    answered meanwhile, and that answer is the verdict, not "stopped responding"."""
    from gradviz.protocol.unresponsive import GRACE_S

    marker = tmp_path / "marker"
    path = tmp_path / "quick.py"
    once = "        if not hasattr(Marked, 'slept'):\n            Marked.slept = True\n            time.sleep(0.3)"
    path.write_text(marking_source(marker, once))
    timeout = 1.0
    process = start(["check", str(path), "--timeout", str(timeout), "--json"], tmp_path)
    wait_for_file(marker, 120)
    time.sleep(0.1)  # the client read the worker's ready message long ago: it sent the request after it
    process.send_signal(signal.SIGSTOP)
    try:
        time.sleep(timeout + GRACE_S + 1.5)
    finally:
        process.send_signal(signal.SIGCONT)
    out, err = finish(process)
    assert process.returncode == 0, err
    assert json.loads(out)["passed"] is True
    assert "stopped responding" not in err


def test_a_ctrl_c_while_python_m_gradviz_loads_its_package_exits_130_in_one_line():
    """runpy imports the package before __main__ can catch anything: from the package's first line
    the loading handler ends the process quietly (driven here directly, as the package arms it)."""
    script = (
        "from gradviz import _loading; _loading.exit_quietly_on_interrupt(); "
        "import os, signal, time; os.kill(os.getpid(), signal.SIGINT); time.sleep(30)"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 130 and out.stderr == "gradviz: interrupted\n", out.stderr


def test_importing_gradviz_leaves_the_programs_ctrl_c_alone():
    """Only ``python -m gradviz`` arms the loading handler; a program that imports gradviz keeps
    Python's own, and ``python -m gradviz`` hands Python's back before its command runs."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    check = "import signal, gradviz; assert signal.getsignal(signal.SIGINT) is signal.default_int_handler"
    assert subprocess.run([sys.executable, "-c", check], env=env, timeout=60).returncode == 0
    probe = (
        "import signal, sys, gradviz.__main__ as m; "
        "from gradviz import _loading; _loading.exit_quietly_on_interrupt(); _loading.restore_interrupt(); "
        "sys.exit(0 if signal.getsignal(signal.SIGINT) is signal.default_int_handler else 1)"
    )
    assert subprocess.run([sys.executable, "-c", probe], env=env, timeout=60).returncode == 0

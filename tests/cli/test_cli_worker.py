"""``gradviz check`` runs the Function in a worker process: timeouts, exits and prints.

Whatever the user's code does (loop forever, sys.exit, os._exit, abort, print megabytes),
the check ends, says why, and never reads as a pass; stdout carries only the report. What the
user's code does to its run process goes through the ``cli`` fixture (this process, the module's
one worker, which serves on after each run); timeouts, Ctrl+C, a worker killed or left running,
and the worker's own message handling each start their own processes.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gradviz.protocol import messages as messages_module
from gradviz.schema.requests import CheckRequest, CodeSource, to_message
from gradviz.schema.settings import CheckSettings
from gradviz.worker.client import WorkerClient
from tests.cli.runner import gradviz
from tests.paths import ROOT
from tests.sources import SQUARE
from tests.worker.lifecycle import interruptible

ENDED = "the Function's code ended the process"
# one line: the stack a hung worker leaves names this line, whichever instruction it is on
LOOP = SQUARE.replace("return x * x", "print('looping', flush=True)\n        while True: pass")


def workers_of(pid: int) -> list[int]:
    """Worker processes still alive that the CLI with this pid started (Linux: read /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"GRADVIZ_PARENT_PID={pid}".encode() in environ:
            found.append(int(entry.name))
    return found


def popen_cli(*args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "gradviz", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=interruptible,
    )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_timeout_stops_an_endless_loop_and_leaves_no_worker(write_source):
    path = write_source(LOOP)
    start = time.monotonic()
    process = popen_cli("check", str(path), "--json", "--timeout", "2")
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 2, stderr
    assert time.monotonic() - start < 2 + 30  # start-up, two seconds of looping, the stack dump
    error = json.loads(stdout)["error"]
    assert error["kind"] == "timeout"
    assert "did not finish within 2 s; an endless loop in forward or backward?" in error["message"]
    assert error["lineno"] == next(k for k, line in enumerate(path.read_text().splitlines(), 1) if "while True" in line)
    assert "looping" in stderr  # what the Function printed before it hung
    assert workers_of(process.pid) == []


def test_timeout_is_no_limit_on_a_quick_check(cli, write_source):
    out = cli("check", str(write_source(SQUARE)), "--timeout", "60")
    assert out.returncode == 0 and "PASSED" in out.stdout


@pytest.mark.parametrize("value", ["0", "-1"])
def test_timeout_must_be_positive(write_source, value):
    out = gradviz("check", str(write_source(SQUARE)), "--timeout", value)
    assert out.returncode == 2 and out.stderr.startswith("gradviz: error: timeout must be positive")


EXITS = {
    "sys_exit_forward": SQUARE.replace("return x * x", "import sys; sys.exit(0)"),
    "exit_builtin_backward": SQUARE.replace("return 2 * x * g", "exit()"),
    "os_exit_backward": SQUARE.replace("return 2 * x * g", "import os; os._exit(0)"),
    "os_exit_at_import": SQUARE + "\nimport os\nos._exit(0)\n",
    "sys_exit_in_example_inputs": SQUARE.replace("return (torch.randn(3", "import sys; sys.exit(0)\n    return (torch.randn(3"),
    "sigkill_forward": SQUARE.replace("return x * x", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"),
    "abort_in_example_inputs": SQUARE.replace("return (torch.randn(3", "import os; os.abort()\n    return (torch.randn(3"),
    # backward runs twice for the Jacobian, then again in --all-checks, outside the core's own guards
    "sys_exit_in_extra_checks": SQUARE.replace("class Square", "CALLS = []\n\n\nclass Square").replace(
        "return 2 * x * g", "CALLS.append(1)\n        if len(CALLS) > 2:\n            raise SystemExit(0)\n        return 2 * x * g"
    ),
}


@pytest.mark.parametrize("name", list(EXITS))
def test_ending_the_process_never_passes(cli, write_source, name):
    out = cli("check", str(write_source(EXITS[name])), "--json", "--all-checks")
    assert out.returncode == 2, out.stderr
    error = json.loads(out.stdout)["error"]
    assert ENDED in error["message"], error
    if name != "sigkill_forward":  # SIGKILL leaves no stack behind
        assert error["lineno"], error  # the line that ended it
    if name.startswith(("sigkill", "abort")):
        assert ("SIGKILL" if name.startswith("sigkill") else "SIGABRT") in error["message"]
    assert "Traceback (most recent call last)" not in out.stderr


NOISY = (
    "import os, sys\nprint('print at import')\n"
    + SQUARE.replace(
        "return x * x",
        "print('print in forward'); sys.stdout.write('write in forward\\n'); sys.stdout.flush()\n"
        "        os.write(1, b'fd 1 in forward\\n')\n        return x * x",
    )
    .replace("(x,) = ctx.saved_tensors", "(x,) = ctx.saved_tensors\n        print('print in backward')")
    .replace("return (torch.randn(3", "print('print in example_inputs')\n    return (torch.randn(3")
)


def test_user_prints_stay_off_stdout_with_json(cli, write_source):
    out = cli("check", str(write_source(NOISY)), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["passed"]  # stdout is exactly the report
    for text in ("at import", "in example_inputs", "print in forward", "write in forward", "fd 1 in forward", "in backward"):
        assert text in out.stderr and text not in out.stdout


def test_table_on_stdout_prints_on_stderr(cli, write_source):
    out = cli("check", str(write_source(NOISY)))
    assert out.returncode == 0 and "PASSED" in out.stdout and "out0 / x" in out.stdout
    assert "print in forward" in out.stderr and "print in forward" not in out.stdout


def test_megabytes_of_print_do_not_hang(cli, write_source):
    source = "print('x' * 30_000_000)\n" + SQUARE.replace("return x * x", "print('y' * 2_000_000); return x * x")
    start = time.monotonic()
    out = cli("check", str(write_source(source)), "--json", "--timeout", "60")
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout)["passed"]
    assert time.monotonic() - start < 60
    assert len(out.stderr) < 1_000_000 and "characters of output from the Function's code not shown" in out.stderr


def test_a_worker_that_will_not_exit_does_not_hold_the_check(write_source):
    """A non-daemon thread keeps the worker's interpreter alive after the answer: it is killed."""
    source = "import threading, time\nthreading.Thread(target=time.sleep, args=(600,)).start()\n" + SQUARE
    start = time.monotonic()
    out = gradviz("check", str(write_source(source)), "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["passed"]
    assert time.monotonic() - start < 60


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ctrl_c_stops_the_check_and_its_worker(write_source):
    process = popen_cli("check", str(write_source(LOOP)))
    try:
        deadline = time.monotonic() + 120
        while "looping" not in process.stderr.readline():  # the worker is inside forward now
            assert time.monotonic() < deadline and process.poll() is None
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
        assert process.returncode == 130 and "interrupted" in stderr
        assert workers_of(process.pid) == []
    finally:  # a failure must not leave a CLI, its worker and a spinning run behind
        process.kill()
        process.wait()
        for pid in workers_of(process.pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)


def test_save_into_a_file_fails_cleanly(cli, write_source, tmp_path):
    blocker = tmp_path / "taken"
    blocker.write_text("not a directory")
    out = cli("check", str(write_source(SQUARE)), "--save", str(blocker))
    assert out.returncode == 2 and out.stderr.startswith(f"gradviz: error: Cannot write {blocker}")


def test_worker_serves_on_after_user_code_raises_system_exit_and_interrupts(write_source):
    sources = {
        "interrupt": SQUARE.replace("return x * x", "raise KeyboardInterrupt"),
        "exit_in_checks": EXITS["sys_exit_in_extra_checks"],
        "good": SQUARE,
    }
    with WorkerClient(output=None) as runner:
        runner.start()
        pid = runner.pid
        replies = {
            name: runner.request(
                CheckRequest(
                    CodeSource(source=source, filename=f"<{name}>"),
                    CheckSettings(all_checks=True),
                    timeout=60,
                    arrays=False,
                    graph=False,
                )
            )
            for name, source in sources.items()
        }
        assert runner.pid == pid and runner.alive
    line = next(k for k, text in enumerate(sources["interrupt"].splitlines(), 1) if "KeyboardInterrupt" in text)
    assert replies["interrupt"].error["kind"] == "forward" and replies["interrupt"].error["lineno"] == line
    assert "KeyboardInterrupt" in replies["interrupt"].error["message"]
    assert replies["exit_in_checks"].error["kind"] == "backward"
    assert ENDED in replies["exit_in_checks"].error["message"]
    assert replies["good"].ok and replies["good"].result["passed"]


def test_worker_answers_a_bad_request_line_ignores_an_unsealed_one_and_serves_on(write_source):
    """A sealed line that is not JSON is the client's bug: answered. A line without the session's
    seal is not the client's at all (something wrote into the worker's stdin): never a request."""
    session = messages_module.ClientSession()
    request = to_message(CheckRequest(CodeSource(path=str(write_source(SQUARE))), arrays=False, graph=False), 7, "run7")
    forged = to_message(CheckRequest(CodeSource(path=str(write_source(SQUARE, "other.py"))), arrays=False), 8, "run8")
    not_json = b"this is not json"
    worker = subprocess.run(
        [sys.executable, "-m", "gradviz.worker"],
        input=session.hello()
        + messages_module._mac(session.key, not_json) + b" " + not_json + b"\n"
        + messages_module.encode(forged)
        + session.encode(request)
        + session.encode({"op": "quit"}),
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    messages = session.feed(worker.stdout)
    kinds = [(m["type"], m.get("id")) for m in messages if m["type"] != "progress"]
    assert kinds == [("ready", None), ("error", None), ("result", 7)] and not session.unsealed
    assert b"ignored a line" in worker.stderr
    assert worker.returncode == 0


def test_a_crashing_run_leaves_the_worker_serving(write_source):
    """User code dies in its own run process: the worker answers for it and serves on."""
    with WorkerClient(output=None) as client:
        crashed = client.request(CheckRequest(CodeSource(path=str(write_source(EXITS["os_exit_backward"]))), arrays=False))
        pid = client.pid
        assert crashed.kind == "crashed" and "os._exit(0)" in crashed.error["message"] and crashed.error["lineno"]
        again = client.request(CheckRequest(CodeSource(path=str(write_source(SQUARE, "ok.py"))), arrays=False, graph=False))
        assert again.ok and again.result["passed"] and client.pid == pid and client.alive


def test_client_restarts_a_worker_that_was_killed(write_source):
    with WorkerClient(output=None) as client:
        first = client.request(CheckRequest(CodeSource(path=str(write_source(SQUARE))), arrays=False, graph=False))
        old = client.pid
        os.kill(old, signal.SIGKILL)
        client._process.wait()
        again = client.request(CheckRequest(CodeSource(path=str(write_source(SQUARE))), arrays=False, graph=False))
        assert first.ok and again.ok and client.pid != old


@pytest.mark.parametrize(
    "exc, expected",
    [
        (RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 8000000000000 bytes."), "7.3 TiB"),
        (MemoryError(), "MemoryError"),
        (
            type("OutOfMemoryError", (RuntimeError,), {})("CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 ..."),
            "20.00 GiB on the GPU",
        ),
    ],
)
def test_out_of_memory_is_named_with_its_size(exc, expected):
    from gradviz.schema.errors import from_exception

    error = from_exception("forward", exc, "f.py", "Square.forward")
    assert error.message.startswith("Square.forward ran out of memory: ") and expected in error.message


def test_buffers_changed_in_place_are_not_flagged(cli, write_source):
    """Running statistics updated in place are fine; an input needing gradients is not."""
    source = SQUARE.replace("def forward(ctx, x)", "def forward(ctx, x, stats)").replace(
        "return x * x", "stats.add_(1)\n        return x * x"
    ).replace("return 2 * x * g", "return 2 * x * g, None").replace(
        "requires_grad=True),)", "requires_grad=True), torch.zeros(3))"
    )
    out = cli("check", str(write_source(source)), "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["warnings"] == []

"""The window's worker transport, driven with real processes: a stray line, a kill -9 of the window.

No main window here: the Qt client alone, as the window uses it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from gradviz.app import worker_client as worker_client_module
from gradviz.app.worker_client import WorkerClient
from gradviz.schema.requests import CheckRequest, CodeSource
from tests.paths import ROOT
from tests.worker.lifecycle import spawning_source, wait_for_file, wait_gone

# A stand-in worker that holds the session's secret: says ready, then answers any request with a
# line it did not seal (as user code writing into its pipe would) and a sealed line that is not a
# message (a broken worker).
STRAY = textwrap.dedent(
    """
    import sys
    from gradviz.protocol import messages
    key = messages.read_hello(0)
    def sealed(body):
        sys.stdout.buffer.write(messages._mac(key, body) + b" " + body + b"\\n")
        sys.stdout.buffer.flush()
    sealed(b'{"type": "ready", "protocol": 2, "pid": 1, "torch": "x", "devices": []}')
    for line in sys.stdin.buffer:
        print('{"type": "result", "id": 1, "op": "check", "result": {"passed": true}}', flush=True)
        sealed(b"Traceback (most recent call last): something printed on the protocol")
    """
)


def test_an_unsealed_line_is_ignored_and_a_broken_one_fails_the_run_at_once(qtbot, tmp_path, monkeypatch):
    script = tmp_path / "stray_worker.py"
    script.write_text(STRAY)
    monkeypatch.setattr(worker_client_module, "worker_command", lambda python=None: [sys.executable, str(script)])
    client = WorkerClient()
    said: list[str] = []
    client.output.connect(said.append)
    try:
        with qtbot.waitSignal(client.ready, timeout=10_000):
            client.start()
        with qtbot.waitSignal(client.failed, timeout=3_000) as failed:
            request = client.submit(CheckRequest(CodeSource(source="x", filename="<editor>"), timeout=600))
        got_request, error = failed.args
        assert got_request == request and error["kind"] == "protocol"
        assert "not a gradviz message" in error["message"] and "Traceback" in error["message"]
        assert any("did not seal" in text and '"passed": true' in text for text in said)
        assert not client.busy
    finally:
        client.shutdown()


WINDOW = textwrap.dedent(
    """
    import sys
    from PySide6.QtCore import QCoreApplication
    from gradviz.app.worker_client import WorkerClient
    from gradviz.schema.requests import CheckRequest, CodeSource
    app = QCoreApplication([])
    client = WorkerClient()
    def go(info):
        print(client.pid, flush=True)
        client.submit(CheckRequest(CodeSource(path=sys.argv[1]), arrays=False, graph=False))
    client.ready.connect(go)
    client.start()
    app.exec()
    """
)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSEGV])
def test_killing_the_window_ends_its_worker_and_the_users_processes(write_source, tmp_path, sig):
    """Any signal, kill -9 included: within a second nothing the window started is left."""
    pid_file = tmp_path / "child.pid"
    path = write_source(spawning_source(pid_file, hang=True))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "QT_QPA_PLATFORM": "offscreen"}
    window = subprocess.Popen([sys.executable, "-c", WINDOW, str(path)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        worker = int(window.stdout.readline())
        user_child = int(wait_for_file(pid_file, 60))
        window.send_signal(sig)
        window.wait(10)
        assert wait_gone([worker, user_child], 1.0), "the worker or the user's process outlived the window"
    finally:
        window.kill()
        window.wait()


def test_killing_the_window_while_user_code_stopped_the_worker_leaves_nothing(write_source, tmp_path):
    """User code starts a helper in a session of its own and stops the worker (SIGSTOP): a stopped
    worker acts on no parent-death signal, so only the keeper can end the tree after a kill -9."""
    from tests.worker.test_outlive import HELPER_SOURCE, MARK, THEN, kill_leftovers, marked, wait_none_marked

    pid_file = tmp_path / "pids"
    path = write_source(HELPER_SOURCE.format(pid_file=str(pid_file), then=THEN["stops_worker"]))
    token = os.urandom(8).hex()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "QT_QPA_PLATFORM": "offscreen", MARK: token}
    window = subprocess.Popen([sys.executable, "-c", WINDOW, str(path)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        helper, worker = map(int, wait_for_file(pid_file, 60).split())
        assert {helper, worker} <= set(marked(token))
        window.send_signal(signal.SIGKILL)
        window.wait(10)
        assert wait_none_marked(token, 5.0) == [], "a process of the worker's tree outlived the window"
    finally:
        kill_leftovers(token)
        window.stdout.close()

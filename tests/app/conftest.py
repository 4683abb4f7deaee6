"""App-test fixtures. Results are produced by the real core (in this test process, which is
not the GUI process) and travel through the same JSON + .npy files the worker writes."""

from __future__ import annotations

import contextlib
import os

import pytest

from tests.paths import ARTIFACTS, ROOT  # noqa: F401 - for tests that import them from here

if not os.environ.get("DISPLAY") and not os.environ.get("QT_QPA_PLATFORM"):
    os.environ["QT_QPA_PLATFORM"] = "offscreen"


@pytest.fixture
def make_check_result(tmp_path):
    """The CheckResult of a built-in example (by name) or of source text, computed by gradviz.core
    and read back from the files the worker writes, as the window reads it."""
    from gradviz.core.check import check_source
    from gradviz.core.loader import load_file, load_source
    from gradviz.schema.library import find_builtin
    from gradviz.schema.result_files import read_check_result, write_check_result
    from gradviz.schema.results import CheckResult
    from gradviz.schema.settings import CheckSettings

    counter = iter(range(10_000))

    def make(name: str | None = None, source: str | None = None, **settings) -> CheckResult:
        loaded = load_file(find_builtin(name)) if name else load_source(source, "<editor>")
        result = check_source(loaded, settings=CheckSettings(**settings))
        summary = write_check_result(result, tmp_path / f"result{next(counter)}")
        return read_check_result(summary)

    return make




@pytest.fixture
def settings_store(tmp_path):
    """A QSettings in a temp file, so tests never touch the user's preferences."""
    from PySide6.QtCore import QSettings

    return QSettings(str(tmp_path / "gradviz.ini"), QSettings.Format.IniFormat)


# A window test's set-up cost is mostly its worker importing torch (about 3 s of CPU). The worker
# never runs user code (each run is a fresh process forked from it) and "serves on, in the same
# clean state as before" after any run, so consecutive window tests hand the idle worker process
# on: the next test gets a new WorkerClient and a new window around the same live worker. A worker
# is handed on only to the very next test, only if that test makes a window too (in this module or
# the next one this process runs: so no idle worker outlives the tests that use it), only if it is
# ready, idle and not stopped, and only if the worker's environment would be the same. Otherwise
# the window closes as a user closes it and the test fails if its worker outlives it. Closing a
# window ends its worker: tests/app/test_early_worker.py checks that on its own, and every
# unshared window here does.
_handed_on: dict[str, object] = {}  # "process", "info", "env": the worker the next test takes
_open_window: dict[str, object] = {}  # test id -> its main window, until the test's teardown


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_teardown(item, nextitem):
    """Before pytest-qt closes this test's widgets (its own teardown hook, which runs before any
    fixture's teardown): note the window's worker, and hand it on if the next test takes it."""
    window = _open_window.pop(item.nodeid, None)
    shares = bool(
        nextitem is not None
        and "main_window" in getattr(nextitem, "fixturenames", ())
    )
    if not shares:
        _end_handed_on_worker()
    if window is not None:
        window.worker_pid_at_close = window.worker.pid
        window.worker_handed_on = shares and _hand_on(window.worker, item.funcargs["qtbot"])
    yield


def pytest_sessionfinish(session):
    _end_handed_on_worker()


def _worker_env_key() -> dict[str, str]:
    """What the worker's environment would be, less what differs per test and the worker ignores."""
    from gradviz.app.recovery import RECOVERY_ENV
    from gradviz.protocol.launch import worker_environment

    env = worker_environment(warm=True)
    for name in ("PYTEST_CURRENT_TEST", RECOVERY_ENV):
        env.pop(name, None)
    return env


def _stopped(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rpartition(")")[2].split()[0] in "TtZX"
    except OSError:
        return False  # not Linux: the worker's is_ready and idleness decide alone


def _take_handed_on_worker():
    """A new WorkerClient around the worker the previous test handed on, or None."""
    process = _handed_on.pop("process", None)
    if process is None:
        return None
    from gradviz.app.worker_client import WorkerClient

    if _handed_on.pop("env") != _worker_env_key() or process.state() != process.ProcessState.Running:
        _end_worker(process, _handed_on.pop("keeper", None))
        return None
    client = WorkerClient()
    process.setParent(client)
    process.readyReadStandardOutput.connect(lambda: client._on_stdout(process))
    process.readyReadStandardError.connect(lambda: client._on_stderr(process))
    process.finished.connect(lambda code, status: client._on_finished(process, code, status))
    client._process = process
    client._session = _handed_on.pop("session")  # the worker's session secret goes with it
    client._keeper = _handed_on.pop("keeper")  # and the keeper that ends its tree
    client.is_ready, client.info = True, _handed_on.pop("info")
    return client


def _hand_on(worker, qtbot) -> bool:
    """Take the idle worker process away from ``worker`` (its window then closes without it). A
    run still in flight (often the memory study the window asks for at launch) is cancelled first,
    as the Cancel button does; the worker then serves on as after any cancelled run."""
    if worker.busy and worker.is_ready:
        worker.cancel()
        with contextlib.suppress(qtbot.TimeoutError):
            qtbot.waitUntil(lambda: not worker.busy, timeout=10_000)
    process = worker._process
    if (
        process is None
        or process.state() != process.ProcessState.Running
        or not worker.is_ready
        or worker.busy
        or worker._deadline.isActive()
        or _stopped(worker.pid)
    ):
        return False
    for signal in (process.readyReadStandardOutput, process.readyReadStandardError, process.finished):
        signal.disconnect()
    worker._process = None  # the window's close now ends nothing
    process.setParent(None)
    _handed_on.update(
        process=process, info=dict(worker.info), env=_worker_env_key(), session=worker._session, keeper=worker._keeper
    )
    worker._keeper = type(worker._keeper)()  # the window's close must not let the handed-on keeper go
    return True


def _end_handed_on_worker() -> None:
    process, keeper = _handed_on.pop("process", None), _handed_on.pop("keeper", None)
    _handed_on.clear()
    if process is not None:
        _end_worker(process, keeper)


def _end_worker(process, keeper=None) -> None:
    """Quit an idle worker as WorkerClient.shutdown does (its keeper let go); fail if it outlives that."""
    process.closeWriteChannel()  # its stdin ends: the worker quits
    quit_in_time = process.waitForFinished(5000)
    if not quit_in_time:
        process.kill()
        process.waitForFinished(1000)
    if keeper is not None:
        keeper.release(clean=quit_in_time)
    if not quit_in_time:
        raise AssertionError(f"a handed-on worker {process.processId()} did not quit when asked")
    process.deleteLater()


@pytest.fixture
def main_window(qtbot, settings_store, monkeypatch, request):
    """The real main window with a real worker process (handed on from the previous window test
    where it can be, see above); fails if the worker outlives the window."""
    import os

    from PySide6.QtWidgets import QMessageBox

    from gradviz.app.main_window import MainWindow
    from gradviz.app.recovery import RECOVERY_ENV

    monkeypatch.setenv(RECOVERY_ENV, str(settings_store.fileName() + ".recovery"))
    # an unexpected modal dialog would hang the test: answer "Discard" and record it
    asked = []
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: asked.append(a) or QMessageBox.StandardButton.Discard)
    window = MainWindow(settings_store, auto_run=False, worker=_take_handed_on_worker())
    window.asked = asked
    qtbot.addWidget(window)
    window.show()
    with qtbot.waitActive(window):  # window shortcuts (Ctrl+Enter) need the active window
        window.activateWindow()
    qtbot.waitUntil(lambda: window.worker.is_ready, timeout=60_000)
    _open_window[request.node.nodeid] = window
    yield window
    _open_window.pop(request.node.nodeid, None)  # pytest-qt has closed the window by now
    pid = vars(window).get("worker_pid_at_close", 0)
    if pid and not vars(window).get("worker_handed_on", False):
        with pytest.raises(ProcessLookupError):
            for _ in range(50):  # the worker is killed synchronously in shutdown(); allow reaping
                os.kill(pid, 0)
                qtbot.wait(20)
            raise AssertionError(f"worker {pid} still alive after the window closed")

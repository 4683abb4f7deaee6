"""The spawn start method, forced on Linux: a subset of the worker tests, each run a fresh
``python -m gradviz.worker.spawned`` instead of a fork (the method macOS gets, ``start_method``).

The tests imported below run here again, unchanged, with ``GRADVIZ_WORKER_START=spawn`` set for
every worker they start: a passing check whose child process ends with the run, a timeout that
names the user's line, a daemon and a ``setsid`` child killed with a finished run and on Cancel,
the memory limit over the run's tree, a forged verdict in the pipe rejected. The tests written
here add what those do not cover: the run really is a spawned interpreter (and got its key on
stdin, not in argv or the environment), a failing check, a crash (``os.abort``) naming its line,
and the client's death by ``kill -9``. Kept small: each spawned run imports torch itself.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from gradviz.schema.requests import CheckRequest, CodeSource
from gradviz.worker import start_method
from gradviz.worker.client import WorkerClient
from tests.paths import ROOT
from tests.sources import SQUARE
from tests.worker.lifecycle import spawning_source, wait_for_file, wait_gone
from tests.worker.test_escapes import (  # noqa: F401 - collected here again, with spawn
    test_a_setsid_child_and_a_daemon_end_on_cancel_and_the_worker_serves_on,
    test_a_setsid_child_and_a_daemon_end_with_a_finished_run,
)
from tests.worker.test_forgery import (  # noqa: F401 - collected here again, with spawn
    genuine_pass,
    test_a_pass_written_into_the_pipe_is_an_error_from_the_worker_and_the_next_run_is_honest,
)
from tests.worker.test_lifecycle import (  # noqa: F401 - collected here again, with spawn
    test_a_run_past_the_memory_limit_is_stopped_with_its_line,
    test_a_timed_out_run_takes_its_processes_with_it_and_names_the_line,
    test_processes_the_users_code_started_end_with_a_successful_run,
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; spawn is the default elsewhere")


@pytest.fixture(autouse=True, scope="module")
def spawn_runs():
    """Every worker started in this module spawns its runs (it reads the variable at start)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(start_method.START_ENV, "spawn")
        yield


def request(path, timeout: float | None = None) -> CheckRequest:
    return CheckRequest(CodeSource(path=str(path)), timeout=timeout, arrays=False, graph=False)


WHO = SQUARE + '''
import os, sys
open({out!r}, "w").write(open("/proc/self/cmdline").read().replace("\\0", " ") + "\\n" + str(os.getppid()))
'''


def test_the_run_is_a_spawned_interpreter_that_got_its_key_on_stdin(write_source, tmp_path):
    out = tmp_path / "who"
    with WorkerClient(output=None) as client:
        reply = client.request(request(write_source(WHO.format(out=str(out))), timeout=120))
        assert reply.ok and reply.result["passed"], reply.error
        command, parent = out.read_text().splitlines()
        assert "-m gradviz.worker.spawned" in command and int(parent) == client.pid
        environment = Path(f"/proc/{client.pid}/environ").read_bytes()
        assert b"key" not in command.encode().lower() and b"GRADVIZ_RUN_KEY" not in environment


WRONG = SQUARE.replace("return 2 * x * g", "return 3 * x * g")
ABORTS = SQUARE.replace("return 2 * x * g", "import os; os.abort()")


def test_a_failing_check_and_a_crash_are_answered_and_the_worker_serves_on(write_source):
    with WorkerClient(output=None) as client:
        failed = client.request(request(write_source(WRONG, "wrong.py"), timeout=120))
        assert failed.ok and not failed.result["passed"], failed.error
        path = write_source(ABORTS, "aborts.py")
        crashed = client.request(request(path, timeout=120))
        line = next(k for k, text in enumerate(path.read_text().splitlines(), 1) if "os.abort()" in text)
        assert crashed.kind == "crashed" and crashed.error["lineno"] == line, crashed.error
        assert "SIGABRT" in crashed.error["message"] or "abort" in crashed.error["message"].lower()
        assert client.request(request(write_source(SQUARE, "ok.py"), timeout=120)).ok


CLIENT = """
import sys
from gradviz.schema.requests import CheckRequest, CodeSource
from gradviz.worker.client import WorkerClient
client = WorkerClient(output=None)
client.start()
print(client.pid, flush=True)
client.request(CheckRequest(CodeSource(path=sys.argv[1]), arrays=False, graph=False))
"""


def test_a_spawned_run_and_its_children_end_when_the_client_is_killed(write_source, tmp_path):
    pid_file = tmp_path / "child.pid"
    path = write_source(spawning_source(pid_file, hang=True))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    client = subprocess.Popen([sys.executable, "-c", CLIENT, str(path)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        worker = int(client.stdout.readline())
        child = int(wait_for_file(pid_file, 120))
        run = int(Path(f"/proc/{child}/stat").read_text().split(")")[-1].split()[1])  # the child's parent
        os.kill(client.pid, signal.SIGKILL)
        client.wait()
        assert wait_gone([worker, run, child], 10.0)
    finally:
        client.kill()
        client.wait()


SEES_THE_NEXT_SPARE = SQUARE + '''
import builtins, os, time
builtins.left_by_the_first_run = True
me, worker = os.getpid(), os.getppid()

def spare():
    for pid in open(f"/proc/{{worker}}/task/{{worker}}/children").read().split():
        try:
            command = open(f"/proc/{{pid}}/cmdline").read()
        except OSError:
            continue
        if int(pid) != me and "gradviz.worker.spawned" in command:
            return pid

end = time.monotonic() + 60
while spare() is None and time.monotonic() < end:
    time.sleep(0.01)
open({out!r}, "w").write(str(spare()))
'''

SAYS_WHO_IT_IS = SQUARE + '''
import builtins, os
open({out!r}, "w").write(f"{{os.getpid()}} {{hasattr(builtins, 'left_by_the_first_run')}}")
'''


def test_the_next_run_is_the_spare_started_while_this_one_ran_and_carries_nothing(write_source, tmp_path):
    """The spare is spawned as soon as the previous one is handed its request, so a command's next
    target does not wait for an import; it is a fresh interpreter, so nothing of the run beside it
    reaches it."""
    seen, second = tmp_path / "spare", tmp_path / "second"
    with WorkerClient(output=None) as client:
        first = client.request(request(write_source(SEES_THE_NEXT_SPARE.format(out=str(seen)), "first.py"), timeout=120))
        assert first.ok and first.result["passed"], first.error
        spare = seen.read_text()
        assert spare != "None", "no spare was started while the first run ran"
        assert client.request(request(write_source(SAYS_WHO_IT_IS.format(out=str(second)), "second.py"), timeout=120)).ok
        assert second.read_text() == f"{spare} False"

"""Result folders: locked while their client lives, removed at the next start once it died."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from gradviz.protocol import launch
from tests.paths import ROOT

MAKE_ROOT = """
import sys, time
from gradviz.protocol.launch import make_run_root
print(make_run_root(), flush=True)
time.sleep(300)
"""


def test_a_killed_clients_folder_is_removed_and_a_live_ones_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(launch.tempfile, "gettempdir", lambda: str(tmp_path))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path)}
    dead = subprocess.Popen([sys.executable, "-c", MAKE_ROOT], stdout=subprocess.PIPE, text=True, env=env)
    alive = subprocess.Popen([sys.executable, "-c", MAKE_ROOT], stdout=subprocess.PIPE, text=True, env=env)
    try:
        dead_root, live_root = Path(dead.stdout.readline().strip()), Path(alive.stdout.readline().strip())
        (dead_root / "run1").mkdir()
        os.kill(dead.pid, signal.SIGKILL)
        dead.wait()
        for root in (dead_root, live_root):  # made earlier than any client still making its own
            _age(root, launch.MAKING_GRACE_S + 1)
        mine = launch.make_run_root()  # the next start cleans up
        assert not dead_root.exists() and live_root.is_dir() and mine.is_dir()
        launch.remove_run_root(mine)
        assert not mine.exists()
    finally:
        for process in (dead, alive):
            process.kill()
            process.wait()


def _age(path: Path, seconds: float) -> None:
    then = path.stat().st_mtime - seconds
    os.utime(path, (then, then))


def test_a_folder_another_client_is_still_making_is_kept(tmp_path, monkeypatch):
    """Between mkdtemp and its lock, a client's new folder looks ownerless: a client starting at
    that moment must not remove it. Older, the same unlocked folder is a dead client's."""
    monkeypatch.setattr(launch.tempfile, "gettempdir", lambda: str(tmp_path))
    making = tmp_path / f"{launch.RUN_ROOT_PREFIX}making"
    making.mkdir()
    (making / launch.LOCK_NAME).touch()  # created, not yet locked
    assert launch.remove_stale_run_roots() == [] and making.is_dir()
    _age(making, launch.MAKING_GRACE_S + 1)
    assert launch.remove_stale_run_roots() == [making] and not making.exists()


def test_the_worker_environment_carries_the_parent_and_the_package(monkeypatch):
    env = launch.worker_environment({"PYTHONPATH": "/elsewhere"}, warm=True, memory_limit_mb=512)
    assert env["PYTHONPATH"].split(os.pathsep) == [launch.package_root(), "/elsewhere"]
    assert env[launch.PARENT_PID_ENV] == str(os.getpid())
    assert env[launch.WARM_ENV] == "1" and env[launch.MEMORY_ENV] == "512"

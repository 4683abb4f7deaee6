"""Owner locks (``protocol.owner_lock``): held while the owner lives, free once it died (even by
``kill -9``), exclusive between two holders in one process, and kept by the parent when a
forked child exits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from gradviz.protocol import owner_lock
from tests.paths import ROOT

HOLD = """
import sys, time
from pathlib import Path
from gradviz.protocol import owner_lock
lock = owner_lock.take(Path(sys.argv[1]))
print("held", flush=True)
time.sleep(300)
"""


def _holder(path: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE, text=True, env=env)
    assert process.stdout.readline().strip() == "held"
    return process


def test_a_live_owner_is_alive_and_a_killed_ones_lock_is_free(tmp_path):
    path = tmp_path / "owner.lock"
    holder = _holder(path)
    try:
        assert owner_lock.owner_alive(path)
        with pytest.raises(owner_lock.Held):
            owner_lock.take(path)
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
        assert not owner_lock.owner_alive(path)
        owner_lock.drop(owner_lock.take(path), delete=True)
        assert not path.exists()
    finally:
        holder.kill()
        holder.wait()


def test_two_holders_in_one_process_exclude_each_other(tmp_path):
    path = tmp_path / "owner.lock"
    first = owner_lock.take(path)
    with pytest.raises(owner_lock.Held):
        owner_lock.take(path)
    assert owner_lock.owner_alive(path)
    owner_lock.drop(first)
    assert path.exists() and not owner_lock.owner_alive(path)
    assert not owner_lock.owner_alive(tmp_path / "missing.lock") and not (tmp_path / "missing.lock").exists()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX")
def test_a_forked_child_exiting_normally_leaves_the_parents_lock_held(tmp_path):
    """flock locks belong to the open file a forked child shares: a child whose interpreter exits
    (and drops its copy of the lock object) must not unlock the parent's hold."""
    path = tmp_path / "owner.lock"
    lock = owner_lock.take(path)
    script = "import sys; from pathlib import Path; from gradviz.protocol import owner_lock; sys.exit(owner_lock.owner_alive(Path(sys.argv[1])))"
    child = os.fork()
    if child == 0:
        del lock  # the child's copy goes, as at its interpreter's exit
        import gc

        gc.collect()
        os._exit(0)
    os.waitpid(child, 0)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    assert subprocess.call([sys.executable, "-c", script, str(path)], env=env) == 1  # still held
    owner_lock.drop(lock)

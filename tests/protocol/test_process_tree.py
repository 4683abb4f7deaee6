"""The process tree helpers against real processes that leave their group, daemonize and fork."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from gradviz.protocol import process_tree

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

# a child in a session of its own, and a double-forked daemon, both sleeping; pids on stdout
ESCAPES = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.write(w, str(os.getpid()).encode()); os.close(w)
        time.sleep(60)
    os._exit(0)
daemon = int(os.read(r, 32))
print(child.pid, daemon, flush=True)
time.sleep(60)
"""


def _alive(pid: int) -> bool:
    return os.path.exists(f"/proc/{pid}") and not process_tree.is_zombie(pid)


def _wait_gone(pids, seconds=10.0) -> list[int]:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        left = [p for p in pids if _alive(p)]
        if not left:
            return []
        process_tree.reap_exited()
        time.sleep(0.02)
    return [p for p in pids if _alive(p)]


def test_kill_tree_ends_processes_that_left_the_group_as_a_subreaper_sees_them():
    """Run in a child that is a subreaper, as the worker is: the daemon reparents to it, so the
    subreaper's own tree (not the run's) is what holds everything a run started."""
    script = f"""
import os, subprocess, sys, json
from gradviz.protocol import process_tree
assert process_tree.become_subreaper()
run = subprocess.Popen([sys.executable, "-c", {ESCAPES!r}], stdout=subprocess.PIPE, text=True)
child, daemon = map(int, run.stdout.readline().split())
tree = process_tree.descendants(os.getpid())
killed = process_tree.kill_tree(os.getpid(), include_root=False)
run.wait()
print(json.dumps({{"child": child, "daemon": daemon, "tree": tree, "killed": killed}}), flush=True)
"""
    import json

    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    facts = json.loads(out.stdout)
    assert facts["child"] in facts["tree"] and facts["daemon"] in facts["tree"]
    assert {facts["child"], facts["daemon"]} <= set(facts["killed"])
    assert _wait_gone([facts["child"], facts["daemon"]]) == []


def test_tree_memory_counts_a_forked_childs_pages():
    """A child that touches 200 MB shows in the tree's memory, not in its parent's."""
    script = """
import os, sys, time
if os.fork() == 0:
    block = bytearray(200 * 2**20)
    for i in range(0, len(block), 4096):
        block[i] = 1
    print("ready", flush=True)
    time.sleep(60)
time.sleep(60)
"""
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout.readline().strip() == "ready"
        assert process_tree.resident_bytes(parent.pid) < 100 * 2**20
        assert process_tree.tree_memory(parent.pid) > 200 * 2**20
    finally:
        process_tree.kill_tree(parent.pid)
        parent.wait()


def test_descendants_of_a_gone_process_is_empty_and_kill_is_harmless():
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    assert process_tree.descendants(gone.pid) == []
    process_tree.kill_tree(gone.pid)  # nothing to kill, nothing raised
    assert process_tree.parent_of(gone.pid) is None

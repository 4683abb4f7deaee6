"""The environment's own limits, done for real: an address-space limit (``prlimit --as``) below
what the Jacobians need, a broken ``TORCH_LOGS``, ``GRADVIZ_WORKER_MEMORY_MB=inf`` or ``unlimited``, and a
working folder that was deleted or is deeper than PATH_MAX. Each is a verdict, or one line
naming the cause and exit 2: never a traceback, never "ended unexpectedly", and gradviz's own
MemoryError never blamed on the user's code.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.paths import ROOT
from tests.sources import SQUARE

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux limits and /proc")

# a right backward on an N x N Jacobian: 8,500^2 cells are two 551 MiB Jacobians, more than a
# torch process (about 650 MiB of address space) has left under 1.6 GB
TWICE = '''
import torch
from torch.autograd import Function

class Twice(Function):
    @staticmethod
    def forward(ctx, x):
        return 2 * x

    @staticmethod
    def backward(ctx, g):
        return 2 * g

def example_inputs(device, dtype):
    return (torch.randn(8500, device=device, dtype=dtype, requires_grad=True),)
'''
ADDRESS_SPACE = 1_600_000_000


def limit_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def gradviz_check(path, *args: str, env: dict | None = None, **popen) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gradviz", "check", *args, str(path)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        timeout=300,
        **popen,
    )


def assert_one_clear_line(out: subprocess.CompletedProcess, *words: str) -> None:
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert "Traceback" not in out.stderr and "ended unexpectedly" not in out.stderr, out.stderr
    errors = [line for line in out.stderr.splitlines() if line.startswith("gradviz: error:")]
    assert len(errors) == 1 and all(word in errors[0] for word in words), out.stderr


def test_under_an_address_space_limit_a_right_backward_passes_by_projections(write_source):
    out = gradviz_check(write_source(TWICE), preexec_fn=limit_address_space)
    assert out.returncode == 0 and "PASSED" in out.stdout, (out.stdout, out.stderr)
    assert "random projections" in out.stdout + out.stderr and "ran out of memory" not in out.stdout + out.stderr


def test_gradviz_running_out_of_memory_for_its_own_arrays_is_never_the_users_backward(write_source):
    """Forced to hold the Jacobians (a limit far above what is left), the allocation fails in
    gradviz's frames: said so, not "Twice.backward ran out of memory"."""
    out = gradviz_check(write_source(TWICE), "--max-memory-mb", "100000", preexec_fn=limit_address_space)
    assert_one_clear_line(out, "gradviz ran out of memory for its own arrays", "RLIMIT_AS")
    assert "Twice.backward ran out of memory" not in out.stderr


def test_a_broken_torch_logs_is_one_line_naming_it(write_source):
    out = gradviz_check(write_source(SQUARE), env={"TORCH_LOGS": "no_such_log_name"})
    assert_one_clear_line(out, "could not start", "TORCH_LOGS")


@pytest.mark.parametrize("value", ["inf", "unlimited"])
def test_no_memory_limit_spelt_as_a_word_is_no_limit(write_source, value):
    out = gradviz_check(write_source(SQUARE), env={"GRADVIZ_WORKER_MEMORY_MB": value})
    assert out.returncode == 0 and "PASSED" in out.stdout, out.stderr


def test_a_deleted_working_folder_still_gives_the_verdict(write_source, tmp_path):
    path, gone = write_source(SQUARE), tmp_path / "gone"
    gone.mkdir()

    def enter_and_delete() -> None:
        os.chdir(gone)
        os.rmdir(gone)

    out = gradviz_check(path, preexec_fn=enter_and_delete)
    assert out.returncode == 0 and "PASSED" in out.stdout, out.stderr


def test_a_working_folder_deeper_than_path_max_still_gives_the_verdict(write_source, tmp_path):
    path = write_source(SQUARE)
    deep = tmp_path / "deep"
    deep.mkdir()

    def enter_deep() -> None:  # one step at a time: no single path is longer than PATH_MAX
        os.chdir(deep)
        for _ in range(45):
            os.mkdir("d" * 100)
            os.chdir("d" * 100)

    out = gradviz_check(path, preexec_fn=enter_deep)
    assert out.returncode == 0 and "PASSED" in out.stdout, out.stderr


PIDS = Path("/sys/fs/cgroup/pids")  # cgroup v1's process-count controller (root may make a group)


@pytest.fixture
def pids_group(tmp_path):
    """A fresh pids cgroup, removed afterwards: the kernel refuses a fork past its ``pids.max``
    exactly as at RLIMIT_NPROC (EAGAIN), which root itself is not held to."""
    group = PIDS / f"gradviz-test-{os.getpid()}-{tmp_path.name}"
    try:
        group.mkdir()
    except OSError:
        pytest.skip("no writable pids cgroup here")
    yield group
    end = time.monotonic() + 10
    while (group / "cgroup.procs").read_text().strip() and time.monotonic() < end:
        time.sleep(0.05)
    group.rmdir()


@pytest.mark.parametrize("most", [1, 3], ids=["no-worker", "no-run"])
def test_a_refused_fork_is_one_line_naming_the_process_limit(write_source, pids_group, most):
    """1: the worker itself cannot start; 3 (the CLI, the keeper, the worker): no run can."""
    (pids_group / "pids.max").write_text(str(most))
    procs = str(pids_group / "cgroup.procs")

    def join_group() -> None:
        with open(procs, "w") as f:
            f.write(str(os.getpid()))

    out = gradviz_check(write_source(SQUARE), preexec_fn=join_group)
    assert_one_clear_line(out, "Resource temporarily unavailable", "limit on processes")

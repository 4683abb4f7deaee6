"""How a client starts the worker, and the folders its runs write into.

Both clients start ``python -P -m gradviz.worker`` the same way: in a session of its own (a
Ctrl+C in the terminal reaches the client, which stops the worker), told the client's pid so it
dies with the client, and with gradviz's package on its path. ``-P`` keeps the current folder off
``sys.path``: ``python -m`` would put it first, and a ``torch.py`` or ``numpy.py`` lying there
would run when the worker imports torch, before anything was asked. (The run still puts the
user's file's own folder first, as ``python file.py`` does, and ``pkg.mod:Name`` targets the
current folder, as ``python -m`` does: those are the user's choices.) ``-P`` rather than ``-I``:
the user's ``PYTHONPATH`` and user site-packages may be where their torch is. Each client keeps its results in a
folder it holds a lock on; folders left by clients that died are removed at the next start.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from gradviz.protocol import owner_lock
from gradviz.schema.errors import ErrorKind, GradvizError

if TYPE_CHECKING:
    import filelock

PARENT_PID_ENV = "GRADVIZ_PARENT_PID"  # the worker dies with this process (Linux)
WARM_ENV = "GRADVIZ_WORKER_WARM"  # "1": pay torch's first-call costs before the first request
MEMORY_ENV = "GRADVIZ_WORKER_MEMORY_MB"  # the most a run may use before it is stopped
TREE_ENV = "GRADVIZ_WORKER_TREE"  # a token every process below one worker inherits (``keeper``)
RUN_ROOT_PREFIX = "gradviz-runs-"
LOCK_NAME = ".owner.lock"
MAKING_GRACE_S = 60.0  # a folder younger than this may be one a client is still making
PROTOCOL_FD_ENV = "GRADVIZ_PROTOCOL_FD"  # the worker writes its messages to this fd, not to stdout


def package_root() -> str:
    """The folder holding the ``gradviz`` package, for the worker's ``PYTHONPATH``."""
    return str(Path(__file__).resolve().parents[2])


class WorkerUnsupported(GradvizError):
    """The worker cannot run on this platform."""


def worker_unsupported(platform: str | None = None) -> str | None:
    """Why the worker cannot run here, or None. Its containment (a subreaper, process groups,
    signals, ``select`` on pipes) is POSIX; the in-process ``gradviz.check`` works everywhere."""
    platform = platform or sys.platform
    if platform.startswith("win") or platform == "cygwin":
        return (
            "The gradviz worker (used by the gradviz command, the window and checks of a file) needs "
            "Linux or macOS; on Windows, call gradviz.check(fn, inputs) or gradviz.testing.assert_gradients "
            "in your own process, or use WSL."
        )
    return None


def worker_command(python: str | None = None) -> list[str]:
    """How to start the worker; ``WorkerUnsupported`` (a GradvizError) where it cannot run."""
    problem = worker_unsupported()
    if problem:
        raise WorkerUnsupported(problem)
    return [python or sys.executable, *SAFE_PATH, "-m", "gradviz.worker"]


def keeper_command(token: str) -> list[str]:
    """How a client starts the keeper that ends its worker's tree (``gradviz.protocol.keeper``):
    no site-packages (it needs only the standard library and gradviz), so it starts in ~20 ms."""
    return [sys.executable, *SAFE_PATH, "-S", "-m", "gradviz.protocol.keeper", TREE_ENV, token]


def keeper_environment() -> dict[str, str]:
    """Ours, with gradviz on the path and without any tree token (the keeper is not in the tree)."""
    env = {name: value for name, value in os.environ.items() if name != TREE_ENV}
    env["PYTHONPATH"] = safe_pythonpath(package_root(), env.get("PYTHONPATH"))
    return env


def usable_cwd() -> str | None:
    """The folder to start the worker in: ours (None: inherited), or ``/`` when ours was deleted or
    is too deep to name (longer than PATH_MAX): torch's libraries do not load from there. Every
    path the worker is given is absolute already."""
    try:
        here = os.getcwd()
    except OSError:
        return os.sep
    return None if os.path.isdir(here) else os.sep


SAFE_PATH = ("-P",)  # Python 3.11+: no current folder (nor script folder) first on sys.path


def safe_pythonpath(*entries: str | None) -> str:
    """A ``PYTHONPATH`` of ``entries`` (each may itself be a path list) without empty entries: an
    empty entry means the current folder (``export PYTHONPATH=$PYTHONPATH:/x`` with nothing set
    before gives ``:/x``), the very thing ``-P`` keeps off the path."""
    parts = [p for entry in entries if entry for p in entry.split(os.pathsep) if p]
    return os.pathsep.join(dict.fromkeys(parts))


# How the worker's process and every run it starts meet the machine: read by the C runtimes once,
# when the process starts or loads them, so they go in the environment; a user's own value wins.
# - NumPy without transparent huge pages: the Jacobians' fresh pages fault in at a fraction of
#   the speed of normal pages through them.
# - glibc's malloc keeps blocks under 32 MiB (the chunk buffers of the finite differences and the
#   batched backward) on the heap, untrimmed, so every chunk after the first reuses pages already
#   faulted in. By default it serves them by mmap until the first free and trims the heap's top
#   at twice a block, so a fresh run process would fault in a new buffer for every chunk, and
#   slow chunks could send the batched path down the loop. Other C libraries ignore these names.
# - OpenMP threads that finish their share of a region early sleep instead of spinning (libgomp
#   spins ~300,000 rounds first): on a busy machine a spinner takes the core its partner needs.
#   Same threads, same split of the work: the same numbers bit for bit.
RUNTIME_ENVIRONMENT = {
    "NUMPY_MADVISE_HUGEPAGE": "0",
    "MALLOC_MMAP_THRESHOLD_": str(32 * 2**20),
    "MALLOC_TRIM_THRESHOLD_": str(256 * 2**20),
    "OMP_WAIT_POLICY": "PASSIVE",
}


def worker_environment(
    base: dict[str, str] | None = None, *, warm: bool = False, memory_limit_mb: float | None = None
) -> dict[str, str]:
    """The worker's environment: ours, plus gradviz on the path and the parent-death watch."""
    env = dict(os.environ if base is None else base)
    env["PYTHONPATH"] = safe_pythonpath(package_root(), env.get("PYTHONPATH"))
    env["PYTHONUNBUFFERED"] = "1"
    for name, value in RUNTIME_ENVIRONMENT.items():
        env.setdefault(name, value)
    if threading.current_thread() is threading.main_thread():
        # the kernel ties the parent-death signal to the starting thread: only safe from one that lives on
        env[PARENT_PID_ENV] = str(os.getpid())
    else:
        env.pop(PARENT_PID_ENV, None)  # the worker still notices its parent is gone by polling
    env[WARM_ENV] = "1" if warm else "0"
    if memory_limit_mb is not None:
        env[MEMORY_ENV] = f"{memory_limit_mb:g}"
    return env


_HELD_LOCKS: dict[Path, filelock.BaseFileLock] = {}  # run folder -> its lock, held while this process lives


class NoTempFolder(GradvizError):
    """No folder for the worker's result files: the environment's fault, said in one line."""

    kind = ErrorKind.IO


def make_run_root() -> Path:
    """A fresh folder for this client's result files, locked while this process lives.

    The lock (not the pid: containers reuse pids) tells a later client whether the folder's
    owner is gone (``owner_lock``). ``NoTempFolder`` (one line: what is missing, what to set)
    when no temporary folder is writable. The folder is 0o700 whatever the umask: a umask of
    0o777 would otherwise leave gradviz a folder it cannot enter.
    """
    try:
        remove_stale_run_roots()
        path = Path(tempfile.mkdtemp(prefix=RUN_ROOT_PREFIX))
    except OSError as exc:
        raise NoTempFolder(_no_temp_folder(exc)) from None
    try:
        os.chmod(path, stat.S_IRWXU)
        _HELD_LOCKS[path] = owner_lock.take(path / LOCK_NAME)
    except OSError as exc:
        shutil.rmtree(path, ignore_errors=True)
        raise NoTempFolder(_no_temp_folder(exc, path.parent)) from None
    return path


def fall_back_temp_folder() -> str | None:
    """Where no temporary folder is writable, a private one under the user's home is used
    instead (``TMPDIR`` set for this process and the worker): the window then starts. The note
    saying so, or None when the usual folder works; ``NoTempFolder`` when none can be made."""
    try:
        tempfile.gettempdir()
        return None
    except OSError as exc:
        first = exc
    folder = Path.home() / ".cache" / "gradviz" / "tmp"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        os.chmod(folder, stat.S_IRWXU)
        probe = tempfile.mkdtemp(dir=folder)
        os.rmdir(probe)
    except OSError:
        raise NoTempFolder(_no_temp_folder(first)) from None
    os.environ["TMPDIR"] = str(folder)
    tempfile.tempdir = str(folder)
    return (
        f"No writable temporary folder (/tmp, /var/tmp, TMPDIR): gradviz uses {folder} instead; "
        "set TMPDIR to a folder you can write to choose another."
    )


def _no_temp_folder(exc: OSError, folder: Path | None = None) -> str:
    """What is missing and what to set, for a temporary folder gradviz could not use."""
    if folder is None:
        tried = [os.environ[name] for name in ("TMPDIR", "TEMP", "TMP") if os.environ.get(name)]
        tried += ["/tmp", "/var/tmp", "/usr/tmp", "the current folder"]
        where = f"none of {', '.join(dict.fromkeys(tried))} is writable"
    else:
        where = f"{folder} is not usable ({exc.strerror or exc})"
    return (
        f"gradviz needs a writable folder for its temporary result files, and {where}: set TMPDIR to a "
        "folder you can write (TMPDIR=$HOME/tmp gradviz ...), and a umask that lets you read your own "
        "files (umask 022)."
    )


def remove_run_root(path: Path) -> None:
    lock = _HELD_LOCKS.pop(path, None)
    if lock is not None:
        owner_lock.drop(lock)  # first: Windows cannot remove a locked file
    shutil.rmtree(path, ignore_errors=True)


def remove_stale_run_roots(tmp: str | None = None) -> list[Path]:
    """Remove result folders whose owner died (its lock is free); live clients' stay. A folder
    without a lock file (from before locks, or half made) has no owner either.

    A folder changed in the last ``MAKING_GRACE_S`` stays whatever its lock says: between
    ``mkdtemp`` and taking the lock, another client's folder is visible and unlocked (two clients
    starting together removed each other's new folder). A dead owner's young folder goes at a
    later start."""
    removed = []
    now = time.time()
    for path in Path(tmp or tempfile.gettempdir()).glob(f"{RUN_ROOT_PREFIX}*"):
        if path in _HELD_LOCKS:
            continue
        try:
            info = path.lstat()
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or now - info.st_mtime < MAKING_GRACE_S:
            continue
        if owner_lock.owner_alive(path / LOCK_NAME):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed

"""``python -P -S -m gradviz.protocol.keeper NAME VALUE``: ends a worker's whole tree when its client cannot.

The worker ends everything its runs start (``gradviz.worker.containment``), but only while it
lives and is not stopped: user code can SIGKILL it (its orphans then go to init) or SIGSTOP it,
and the client that would step in can itself be killed. So each client starts this small
process first, in a session of its own; it runs no user code and imports no torch. Every process
below the worker carries ``NAME=VALUE`` in its environment (``launch.TREE_ENV``); the client
writes the worker's pid and start time on our stdin, then ``ok`` when it ended the worker
cleanly. When stdin ends without ``ok`` (the worker died or was replaced, or the client itself
died, even by ``kill -9``), the worker and every marked process are frozen and killed, stopped
ones included, and then we exit.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from typing import TYPE_CHECKING

from gradviz.protocol import process_tree

if TYPE_CHECKING:
    import subprocess

WAIT_S = 10.0  # how long the keeper gets to end what is left of the worker's tree


class TreeKeeper:
    """A client's handle on its keeper: one per worker, started before it (``start``), told the
    worker's pid (``watch``), let go when the worker is gone (``release``)."""

    def __init__(self) -> None:
        self.token = ""  # every process below the worker carries TREE_ENV=token
        self._process: subprocess.Popen | None = None

    def start(self) -> str:
        """Start a keeper for a new tree; the token to put in the worker's environment. Without
        a keeper (it could not start), ``release`` ends the tree itself, while the client lives."""
        import subprocess

        from gradviz.protocol.launch import keeper_command, keeper_environment, usable_cwd

        self.token = os.urandom(8).hex()
        try:
            self._process = subprocess.Popen(
                keeper_command(self.token),
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                env=keeper_environment(),
                cwd=usable_cwd(),
                start_new_session=True,  # Ctrl+C and a closed terminal end the client, never the keeper
            )
        except OSError:
            self._process = None
        return self.token

    def watch(self, pid: int) -> None:
        """The worker is ``pid``: the keeper ends it too (its environment may be unreadable)."""
        self._tell(f"{pid} {process_tree.start_time(pid) or 0}\n")

    def release(self, *, clean: bool) -> None:
        """The worker is gone: unless it ended cleanly (it then ended its own tree), the keeper
        kills what is left of the tree, members that left its session or were stopped included,
        and we wait for that. Without a live keeper (it could not start, or something killed
        it), we do it here."""
        from gradviz.protocol.launch import TREE_ENV

        keeper, self._process = self._process, None
        token, self.token = self.token, ""
        if (keeper is None and clean) or not token:
            return
        if keeper is not None and keeper.poll() is None:
            if clean:
                self._tell("ok\n", keeper)
            with contextlib.suppress(OSError):
                keeper.stdin.close()
            try:
                keeper.wait(WAIT_S)
                return
            except Exception:  # subprocess.TimeoutExpired: wedged itself
                keeper.kill()
                keeper.wait()
        elif keeper is not None:
            keeper.wait()
            with contextlib.suppress(OSError):
                keeper.stdin.close()
        if not clean:
            process_tree.kill_marked(TREE_ENV, token)

    def _tell(self, line: str, keeper: subprocess.Popen | None = None) -> None:
        keeper = keeper or self._process
        if keeper is not None and keeper.stdin is not None:
            with contextlib.suppress(OSError):
                keeper.stdin.write(line.encode("ascii"))
                keeper.stdin.flush()


def _read_all(fd: int) -> bytes:
    data = b""
    while True:
        try:
            chunk = os.read(fd, 4096)
        except InterruptedError:
            continue
        if not chunk:
            return data
        data += chunk


def _worker_pids(lines: list[str]) -> list[int]:
    """The worker named on stdin, if it is still that process (not a reused pid)."""
    pids = []
    for line in lines:
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
            pid = int(parts[0])
            if process_tree.start_time(pid) == int(parts[1]):
                pids.append(pid)
    return pids


def main(argv: list[str]) -> int:
    name, value = argv[1], argv[2]
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)  # only the end of stdin ends us
    lines = _read_all(0).decode("ascii", "replace").splitlines()
    if "ok" not in lines:
        process_tree.kill_marked(name, value, also=_worker_pids(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

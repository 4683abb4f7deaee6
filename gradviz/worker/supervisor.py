"""The worker process: imports torch once, then starts a fresh run process for every request.

The worker itself never runs user code. It reads requests on stdin and answers on what was
its stdout; for each run request it starts a run process (``gradviz.worker.run``: forked on
Linux, spawned elsewhere, as ``start_method`` decides), relays that
process's messages, and watches it: past its time limit, on Cancel, or past the memory limit
it asks the run for its stack (``DUMP_SIGNAL``), stops it and answers with the user's line; if the run
dies without answering, it says how and where. Whatever a run does, the worker answers for it
and serves on, in the same clean state as before.

Every process a run started ends with the run, wherever it went (``containment``: the worker is
a subreaper, and kills its whole tree at the end of every run), and memory is counted over that
whole tree. Only lines sealed with the run's secret are relayed (``messages.SealedDecoder``):
what user code writes into the pipe becomes an error, never a verdict. The client's hop is
sealed the same way under the session's secret, the first line on stdin (``messages.
ClientSession``): the worker reads only requests sealed with it, seals every line it sends, and
wipes it from each forked run's copy of its memory. It is also not dumpable, so no process of
another (or, short of root, the same) user opens its pipes or memory through /proc. When the client that
started the worker dies (even by ``kill -9``), the worker is told (Linux's parent-death signal,
and a poll of its parent's pid), stops everything below it and exits.
"""

from __future__ import annotations

import errno
import os
import select
import signal
import sys
import time
from collections import deque
from dataclasses import dataclass, replace
from typing import IO, Any

from gradviz.protocol import faults, messages, process_tree
from gradviz.protocol.launch import PARENT_PID_ENV, PROTOCOL_FD_ENV, WARM_ENV, remove_stale_run_roots
from gradviz.schema.errors import ErrorKind, SettingsError
from gradviz.schema.requests import CheckRequest, Envelope, SweepRequest, from_message
from gradviz.schema.units import format_bytes
from gradviz.worker import containment
from gradviz.worker.memory_limit import default_memory_limit  # the CLI reads it from here too
from gradviz.worker.run import DUMP_SIGNAL, STARTED
from gradviz.worker.start_method import RunStarter, Started

POLL_S = 0.05  # how often a run's time, memory and the parent are looked at
DUMP_WAIT_S = 1.0  # how long a run gets to write its stack before it is killed
DRAIN_S = 1.0  # how long the worker reads what an ended run left in its pipe
KEY_BYTES = 32  # of each run's secret
START_ALLOWANCE_S = 120.0  # past the time limit, for a spawned run still importing torch to start


@dataclass
class Run:
    """The run process answering one request."""

    envelope: Envelope  # the request, parsed once when it arrived
    process: Started  # its pid, message pipe (read end) and fault file
    started: float
    decoder: messages.LineDecoder
    answered: bool = False
    began: bool = False  # the run said its request started (a spawned run may import torch first)
    tampered: bool = False  # something else than the run's own code wrote into the pipe
    batched: bool = False  # the run said its user code runs under vmap right now
    stopping: bool = False  # the worker is stopping it: nothing it says from now on counts
    peak: int = 0  # the most it was seen to hold resident: the next forked spare faults that much in

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def pipe(self) -> int:
        return self.process.pipe

    @property
    def faults(self) -> int:
        return self.process.faults

    @property
    def id(self) -> int:
        return self.envelope.id

    @property
    def deadline(self) -> float | None:
        limit = self.envelope.request.timeout
        if not limit:
            return None
        return self.started + float(limit) + (0.0 if self.began else START_ALLOWANCE_S)


class Supervisor:
    def __init__(
        self,
        out: IO[bytes],
        requests_fd: int,
        *,
        key: bytearray,
        threads: int,
        memory_limit: int,
        starter: RunStarter | None = None,
    ) -> None:
        self.out, self.requests_fd, self.key = out, requests_fd, key
        self.threads, self.memory_limit = threads, memory_limit
        self.run: Run | None = None
        self.pending: deque[Envelope | None] = deque()  # requests waiting for the run in progress; None: quit
        self.decoder = messages.SealedDecoder(key, signer="the gradviz client")
        self.last_final: dict[str, Any] | None = None  # sent again when the client asks (``repeat``)
        self.parent = os.getppid()
        self.meter = process_tree.TreeMeter(os.getpid())  # memory of everything below us
        self.quitting = False
        self.starter = starter or RunStarter(threads)
        self.starter.threads = threads
        self.starter.wipe_in_child = (key,)  # a forked run's copy of our memory must not hold it
        self.version, self.devices = "", list[dict[str, Any]]()  # torch's, for the ready message

    # --- the loop ------------------------------------------------------------------------
    def serve(self) -> None:
        try:
            while not self.quitting:
                self._step()
        finally:
            self.stop_run()
            self.starter.close()
            containment.end_everything()
            _sweep_run_roots()

    def _step(self) -> None:
        if not self.quitting:
            self.starter.close_in_child = self._channels()
            self.starter.prepare(running=self.run is not None)  # the next run gets ready while we wait
        fds = ([self.requests_fd] if self.requests_fd >= 0 else []) + ([self.run.pipe] if self.run else [])
        readable, _, _ = select.select(fds, [], [], POLL_S if self.run else 0.5)
        if self.requests_fd in readable:
            data = os.read(self.requests_fd, 65536)
            if not data:  # the client closed our stdin: finish what it asked for, then quit
                os.close(self.requests_fd)
                self.requests_fd = -1
                self.pending.append(None)
            for message in self.decoder.feed(data):
                self._on_request(message)
        if self.run and self.run.pipe in readable:
            self._relay(os.read(self.run.pipe, 65536))
        if self.run:
            self._watch_run()
        else:  # a process that took longer than REAP_WAIT_S to die; the spare is the starter's
            process_tree.reap_exited(keep=self.starter.spares)
        while self.pending and (self.run is None or self.run.answered) and not self.quitting:
            self._take(self.pending.popleft())
        if os.getppid() != self.parent:  # the client died (reparented): stop everything
            self.quitting = True

    def _channels(self) -> tuple[int, ...]:
        """Our own descriptors to the client: a forked run or spare must not hold them."""
        return tuple(fd for fd in (self.requests_fd, self.out.fileno()) if fd >= 0)

    def send(self, message: dict[str, Any]) -> None:
        if messages.is_final(message):
            self.last_final = message
        try:
            self.out.write(messages.seal(message, self.key))
            self.out.flush()
        except OSError:  # the client is gone
            self.quitting = True

    # --- requests --------------------------------------------------------------------------
    def _on_request(self, message: dict[str, Any] | messages.BadLine) -> None:
        """Cancel and repeat act at once; a run request is parsed at once (a bad one is answered
        there, naming its key, and never runs) and then waits its turn behind the run in progress."""
        if isinstance(message, messages.BadLine) and message.unsealed:  # not the client's: never a request
            print(f"gradviz worker: ignored {message.describe()}", file=sys.stderr)
        elif isinstance(message, messages.BadLine):
            detail = {"kind": ErrorKind.PROTOCOL.value, "message": f"The worker received {message.describe()}"}
            self.send(messages.error(None, None, detail))
        elif (op := message.get("op")) == "cancel":
            self._cancel(message.get("id"))
        elif op == "repeat":  # the client lost our answer among lines it did not trust
            if self.last_final is not None and self.last_final.get("id") == message.get("id"):
                self.send(self.last_final)
        elif op == "quit":
            self.pending.append(None)
        elif op in messages.RUN_OPS:
            try:
                self.pending.append(from_message(message))
            except SettingsError as exc:  # a key misspelt, missing or of the wrong type: nothing runs
                self.send(messages.error(message.get("id"), op, exc.to_dict()))
            except Exception as exc:  # our own parsing bug: said, and the worker serves on
                detail = {"kind": ErrorKind.INTERNAL.value, "message": f"Cannot read the {op} request: {exc!r}"}
                self.send(messages.error(message.get("id"), op, detail))
        else:
            detail = {"kind": ErrorKind.PROTOCOL.value, "message": f"Unknown request {op!r}."}
            self.send(messages.error(message.get("id"), op, detail))

    def _cancel(self, request_id: object) -> None:
        if self.run and self.run.id == request_id and not self.run.answered:
            self._stop_hung(faults.cancelled_error)
            return
        for queued in list(self.pending):
            if queued is not None and queued.id == request_id:
                self.pending.remove(queued)
                detail = {"kind": ErrorKind.CANCELLED.value, "message": "Cancelled before it started."}
                self.send(messages.error(request_id, queued.request.op, detail))

    def _take(self, envelope: Envelope | None) -> None:
        if self.run is not None:  # answered and exiting: it and all it started go now
            self._end_run()
        if envelope is None:
            self.quitting = True
        else:
            self._start_run(envelope)

    def _start_run(self, request: Envelope) -> None:
        key = os.urandom(KEY_BYTES)  # the run seals its lines with it; user code never gets it handed
        self.starter.close_in_child = self._channels()
        try:
            started = self.starter.start(request, key)
        except OSError as exc:  # fork or exec refused (the process limit, memory): say so, serve on
            detail = start_failure(exc)
            detail["message"] = detail["message"].replace("The gradviz worker could not start", "No process for the run")
            self.send(messages.error(request.id, request.request.op, detail))
            return
        self.run = Run(request, started, time.monotonic(), messages.SealedDecoder(key))

    # --- a run in progress -------------------------------------------------------------------
    def _relay(self, data: bytes) -> None:
        run = self.run
        for message in run.decoder.feed(data):
            if run.answered or run.stopping:
                continue
            if isinstance(message, messages.BadLine):
                self._answer(_tampered_error(message))
                run.tampered = True
                continue
            if message.get("type") == "phase":  # between the run and us
                run.batched = bool(message.get("batched"))
                if message.get(STARTED):  # a spawned run may still have been importing torch until now
                    run.started, run.began = time.monotonic(), True
                continue
            run.answered = messages.is_final(message)
            self.send(message)

    def _watch_run(self) -> None:
        run = self.run
        if run.tampered:  # answered already: nothing it does next can count
            self._end_run()
            return
        code = process_tree.exit_status(run.pid)  # left unreaped until all it started is killed
        if code is not None:
            containment.kill_everything_below(run.pid, self.starter.spares)
            self._drain()
            retry = _without_batches(run) if not run.answered else None
            if not run.answered and retry is None:
                self._answer(faults.crash_error(code, self._dump(), self._source()))
            self._end_run()
            if retry is not None:
                self._start_run(retry)
            return
        process_tree.reap_exited(keep=(run.pid, *self.starter.spares))  # orphans the run left that ended on their own
        if run.deadline is not None and time.monotonic() > run.deadline:
            limit = float(run.envelope.request.timeout or 0)
            self._stop_hung(lambda dump, source: faults.timeout_error(limit, dump, source))
        elif self.memory_limit and self.meter.over(self.memory_limit):
            if self.starter.drop_spare():  # the spare is counted, and goes first: the run may need its room
                return
            shown = format_bytes(self.memory_limit)
            self._stop_hung(lambda dump, source: faults.out_of_memory_error(shown, dump, source))
        else:
            run.peak = max(run.peak, process_tree.resident_bytes(run.pid))

    def _stop_hung(self, describe) -> None:
        """Ask the run for its stack, stop it and all it started, answer with where it was."""
        run = self.run
        self._drain(0.05)  # an answer already in the pipe counts; none sent after the stop does
        if run.answered:
            self._end_run()
            return
        run.stopping = True  # a handler of the user's own, run by our signal, cannot answer instead
        before = containment.fault_size(run.faults)
        try:
            os.kill(run.pid, DUMP_SIGNAL)
        except (ProcessLookupError, PermissionError):
            pass
        end = time.monotonic() + DUMP_WAIT_S
        while (
            time.monotonic() < end
            and containment.fault_size(run.faults) == before
            and process_tree.exit_status(run.pid) is None
        ):
            time.sleep(0.02)
        time.sleep(0.05)  # let it finish writing the dump
        containment.kill_everything_below(run.pid, self.starter.spares)
        self._drain()
        if not self.run.answered:
            self._answer(describe(self._dump(), self._source()))
        self._end_run()

    def stop_run(self) -> None:
        """Stop whatever runs now, answering nothing (the client is leaving)."""
        if self.run is not None:
            self._end_run()

    def _drain(self, limit: float = DRAIN_S) -> None:
        """What the run wrote before it ended, up to the closed pipe (for ``limit`` s at most: a
        process stuck in the kernel may still hold the pipe open)."""
        end = time.monotonic() + limit
        while (left := end - time.monotonic()) > 0:
            readable, _, _ = select.select([self.run.pipe], [], [], min(left, 0.2))
            if not readable:
                return
            data = os.read(self.run.pipe, 65536)
            if not data:
                return
            self._relay(data)

    def _answer(self, detail: dict[str, Any]) -> None:
        self.run.answered = True
        self.send(messages.error(self.run.id, self.run.envelope.request.op, detail))

    def _end_run(self) -> None:
        """The run and everything it started go (by ancestry, not by group); bounded waits only."""
        run, self.run = self.run, None
        containment.end_everything(run.pid, self.starter.spares)
        self.starter.heap_bytes = max(0, run.peak - process_tree.resident_bytes(os.getpid()))
        self.starter.release()
        run.process.forget()
        os.close(run.pipe)
        os.close(run.faults)

    def _dump(self) -> str:
        return containment.read_faults(self.run.faults)

    def _source(self) -> faults.UserSource:
        return faults.UserSource.of_code(getattr(self.run.envelope.request, "code", None))


def _tampered_error(line: messages.BadLine) -> dict[str, Any]:
    shown = line.text if len(line.text) <= 120 else line.text[:120] + "…"
    message = (
        f"Something in the run wrote into gradviz's result channel ({line.reason}): {shown!r}. "
        "Only gradviz's own run code can write a verdict there, so nothing was checked."
    )
    return {"kind": ErrorKind.PROTOCOL.value, "message": message}


def _without_batches(run: Run) -> Envelope | None:
    """The same request with plain calls only, when a run died inside a vmapped call.

    Legacy vmap and some user code do not mix (``.data`` on a batched tensor segfaults): that is
    gradviz's choice of path, not the user's bug, so the run is repeated the way gradcheck runs.
    """
    request = run.envelope.request
    if not run.batched or not isinstance(request, CheckRequest | SweepRequest) or not request.settings.batched:
        return None
    plain = replace(request, settings=replace(request.settings, batched=False), batched_crash=True)
    return replace(run.envelope, request=plain)


# --- start-up -----------------------------------------------------------------------------------


def take_stdout() -> IO[bytes]:
    """The protocol's stream: the pipe the client passed (``PROTOCOL_FD_ENV``: nothing a
    sitecustomize prints at start-up can reach it), else the real stdout; fd 1 (anything
    printed) goes to stderr."""
    sys.stdout.flush()
    passed = os.environ.pop(PROTOCOL_FD_ENV, "")
    protocol = os.fdopen(int(passed) if passed.isdigit() else os.dup(1), "wb", buffering=0)
    os.set_inheritable(protocol.fileno(), False)  # nothing the worker starts gets it
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol


def take_stdin() -> int:
    """Keep the real stdin for requests; fd 0 reads as empty for everyone else."""
    requests = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdin = open(os.devnull, encoding="utf-8")
    return requests


def watch_parent(parent: str | None) -> None:
    """Linux: SIGTERM when the client that started us dies, and then stop the run's group too."""
    signal.signal(signal.SIGTERM, _on_terminate)
    if not parent or not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != int(parent):  # the parent died before prctl took effect
        os._exit(1)


_SUPERVISOR: Supervisor | None = None


def _on_terminate(signum, frame) -> None:
    """SIGTERM (from the client, or the parent-death signal): everything below us goes, then we do."""
    containment.end_everything(_SUPERVISOR.run.pid if _SUPERVISOR is not None and _SUPERVISOR.run else None)
    _sweep_run_roots()
    os._exit(0)


def _sweep_run_roots() -> None:
    """Result folders of clients that died (a SIGTERMed CLI cannot remove its own): the lock in each
    tells; a live client's folder stays. By the time the parent-death signal arrives, the dead
    client's lock is released."""
    try:
        remove_stale_run_roots()
    except Exception as exc:  # never a reason not to exit
        print(f"gradviz: could not remove stale result folders: {exc}", file=sys.stderr)


def main() -> int:
    global _SUPERVISOR
    watch_parent(os.environ.get(PARENT_PID_ENV))
    containment.hold_orphans()  # what runs start and abandon is reparented to us, not to init
    containment.hide_self()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C is the client's to handle
    out = take_stdout()
    requests_fd = take_stdin()
    key = messages.read_hello(requests_fd)
    if key is None:
        print("gradviz worker: the client did not send the session's secret first; exiting", file=sys.stderr)
        return 2
    try:
        _SUPERVISOR = _start(out, requests_fd, key)
    except Exception as exc:  # one line that names the cause, for the client to show
        out.write(messages.seal(messages.error(None, None, start_failure(exc)), key))
        out.flush()
        os._exit(2)
    _SUPERVISOR.send(messages.ready(os.getpid(), _SUPERVISOR.version, _SUPERVISOR.devices))
    _SUPERVISOR.serve()
    out.flush()
    os._exit(0)  # no interpreter teardown: it would cost half a second and change nothing


def _start(out: IO[bytes], requests_fd: int, key: bytearray) -> Supervisor:
    from gradviz.worker.startup import STARTUP_WAIT_S, prepare_torch

    memory_limit = default_memory_limit()  # a bad GRADVIZ_WORKER_MEMORY_MB stops us here, not mid-run
    starter = RunStarter(threads=1)
    if starter.method == "spawn":
        starter.prepare()  # the first run imports torch while we do (a forked spare waits for our torch)
    threads, devices, version = prepare_torch(warm=os.environ.get(WARM_ENV) == "1")
    starter.wait_spare(STARTUP_WAIT_S)
    supervisor = Supervisor(out, requests_fd, key=key, threads=threads, memory_limit=memory_limit, starter=starter)
    supervisor.version, supervisor.devices = version, devices
    return supervisor


def start_failure(exc: BaseException) -> dict[str, Any]:
    """Why the worker (or a run) could not start, as an error of kind ``worker``: one line."""
    from gradviz.schema.errors import GradvizError

    if isinstance(exc, GradvizError):
        return {"kind": ErrorKind.WORKER.value, "message": exc.message}
    first = " ".join(str(exc).strip().split("\n\n")[0].split())  # its first paragraph, on one line
    first = first if len(first) <= 300 else first[:300] + "…"
    what = f"{type(exc).__name__}: {first}".rstrip(": ")
    if isinstance(exc, OSError) and exc.errno in (errno.EAGAIN, errno.ENOMEM):
        what += " (a process could not be started: the limit on processes, ulimit -u, or memory is reached)"
    torch_vars = sorted(name for name in os.environ if name.startswith(("TORCH_", "PYTORCH_")))
    if isinstance(exc, (ImportError, ValueError, RuntimeError)) and torch_vars:
        what += f" (check the torch settings in the environment: {', '.join(torch_vars)})"
    return {"kind": ErrorKind.WORKER.value, "message": f"The gradviz worker could not start: {what}."}

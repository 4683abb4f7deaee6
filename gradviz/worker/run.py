"""One request, in a process of its own, forked from the worker or spawned (``start_method``).

Forked after torch was imported (and warmed), a run process starts in a fraction of a second;
spawned, it imported torch while the worker idled. Either way it leaves nothing behind: the user's modules, global state they changed (grad mode,
monkeypatches, ``os.chdir``, ``sys.path``, environment), their memory and the processes they
started all end with it. It lives in a process group of its own, so the worker can stop all of
it at once, and it writes its Python stack to a fault file when asked (``DUMP_SIGNAL``), on a fatal
signal and on ``os._exit``, so a hung or crashed run still names the user's line.

Messages go to the worker over a pipe (the worker relays them), each line sealed with an HMAC
under a secret the worker drew for this run. The secret lives only in the closure of the sender
(no module global, no environment variable), and the pipe's descriptor is moved to a high,
close-on-exec number. That stops a verdict forged by writing into the pipe (from /proc/self/fd,
by trying descriptors, from a forked child or a subprocess) and any accident. It cannot stop
code in this very process that goes digging through the interpreter's memory for the secret:
nothing running in the process that computes a verdict can be kept from changing it.
stdin reads as empty; whatever the user's code prints goes to stderr.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
import traceback
from typing import IO, Any

from gradviz.protocol import messages
from gradviz.protocol.faults import OS_EXIT_MARK
from gradviz.schema.errors import ErrorKind, GradvizError
from gradviz.schema.requests import Envelope
from gradviz.worker import containment
from gradviz.worker.escaped import escaped_error


class Channel:
    """The run's end of its pipe to the worker: one sealed JSON message per line, flushed at once."""

    def __init__(self, stream: IO[bytes], key: bytes) -> None:
        def send(message: dict[str, Any]) -> None:
            line = messages.seal(message, key)
            if len(line) > messages.MAX_LINE_BYTES:  # the worker would refuse it: say why instead
                line = messages.seal(_too_large(message, len(line)), key)
            stream.write(line)
            stream.flush()

        self.send = send  # the key stays in this closure


def _too_large(message: dict[str, Any], size: int) -> dict[str, Any]:
    detail = {
        "kind": ErrorKind.INTERNAL.value,
        "message": f"The answer was too large to send ({size:,} bytes, more than {messages.MAX_LINE_BYTES:,}).",
    }
    return messages.error(message.get("id"), message.get("op"), detail)


# the worker asks a hung run for its stack with this signal: a real-time one where there are
# (user code that installs its own SIGUSR1 handler would otherwise take the request for its own)
DUMP_SIGNAL = signal.SIGRTMIN + 4 if hasattr(signal, "SIGRTMIN") else signal.SIGUSR1
STARTED = "started"  # in a phase message: the request starts now (the worker's clock for its time limit)


def serve_one(
    envelope: Envelope, pipe_fd: int, fault_fd: int, threads: int, key: bytes, *, prepared: bool = False
) -> None:
    """Run the request in this (fresh) process, answer, and exit. Never returns. ``prepared``: a
    spawned run already called ``become_run_process``."""
    code = 0
    try:
        if prepared:
            import torch

            torch.set_num_threads(threads)
        else:
            become_run_process(fault_fd, threads)
        channel = Channel(os.fdopen(containment.move_high(pipe_fd), "wb", buffering=0), key)
        del key
        channel.send({**messages.phase(envelope.id, batched=False), STARTED: True})
        channel.send(_answer(envelope, channel))
    except BaseException:  # nothing may escape a forked child: the worker reports the death
        traceback.print_exc()
        code = 70
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        _REAL_EXIT(code)  # no interpreter teardown: the run's state goes with the process


_REAL_EXIT = os._exit


def _answer(envelope: Envelope, channel: Channel) -> dict[str, Any]:
    from gradviz.core import jacobian
    from gradviz.worker.handlers import HANDLERS  # lazily: torch and the core load in the run only

    op, request_id = envelope.request.op, envelope.id
    # tell the worker when user code runs under vmap: if the process dies there, it retries without
    jacobian.report_batched_phases(lambda active: channel.send(messages.phase(request_id, batched=active)))
    try:
        payload = HANDLERS[op](envelope, channel.send)
        return messages.result(request_id, op, payload)
    except GradvizError as exc:
        return messages.error(request_id, op, exc.to_dict())
    except BaseException as exc:  # the user's SystemExit, KeyboardInterrupt, ... or our own bug
        return messages.error(request_id, op, escaped_error(exc, getattr(envelope.request, "code", None)))


def become_run_process(fault_fd: int, threads: int) -> None:
    """A group of its own, death with the worker, default signals, stacks to the fault file, torch."""
    os.setpgid(0, 0)  # a group of our own: stopping the run stops whatever it started
    containment.show_self()  # forked from the hidden worker: the worker reads our memory use
    _die_with_parent(signal.SIGKILL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    _watch_faults(fault_fd)
    import torch

    torch.set_num_threads(threads)


def _die_with_parent(sig: int) -> None:
    """Linux: receive ``sig`` when the process that forked us dies."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, sig)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _watch_faults(fd: int) -> None:
    """Stacks for what cannot be caught: fatal signals, ``DUMP_SIGNAL`` (the worker about to stop a hung
    run asks for it) and ``os._exit``, written to the fault file ``fd`` the worker reads too."""
    faulthandler.enable(fd, all_threads=True)
    faulthandler.register(DUMP_SIGNAL, fd, all_threads=True, chain=False)
    run_process = os.getpid()

    def traced_exit(code: int) -> None:
        if os.getpid() == run_process:  # not a process the user's code forked in turn
            os.write(fd, OS_EXIT_MARK.format(code=code).encode())
            faulthandler.dump_traceback(fd, all_threads=False)
        _REAL_EXIT(code)

    os._exit = traced_exit

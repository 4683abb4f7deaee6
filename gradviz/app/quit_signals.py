"""Ctrl+C (SIGINT) and SIGTERM end the app cleanly, from its event loop.

Python's default SIGINT handler raises KeyboardInterrupt in whatever Python code runs next. In a
Qt app that is a slot or a virtual override called from C++ (a pyqtgraph item's
``boundingRect``...): the traceback is printed and the app runs on. Inside a modal dialog's
nested event loop it is worse: Shiboken keeps an exception raised in an override there to
raise it again later, and keeping this one can segfault (``PepException_GetArgs`` in
``Shiboken::Errors::storePythonOverrideErrorOrPrint``, under ``QGraphicsScene::itemsBoundingRect``,
with "Restore unsaved work?" open). So no handler here raises: the C-level handler writes the
signal's number to a socket (``signal.set_wakeup_fd``), a QSocketNotifier wakes the event loop,
and the app quits from there like any other event: every event loop ends (a dialog's too) and
``launch.run_app`` stops the worker and returns 128 + the signal's number, keeping the recovery
files (a Ctrl+C is not a decision about unsaved text).
"""

from __future__ import annotations

import contextlib
import signal
import socket
import threading
from collections.abc import Callable

QUIT_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class QuitOnSignal:
    """While it lives (from before Qt starts), SIGINT and SIGTERM are recorded, never raised;
    ``watch`` hands them to the event loop. Signals ignored when the app started (a background
    job of a non-interactive shell ignores SIGINT) stay ignored. Main thread only."""

    def __init__(self, signals: tuple[int, ...] = QUIT_SIGNALS) -> None:
        self.received: int | None = None  # the first quit signal, once it came
        self._handled: dict[int, object] = {}  # signal -> the handler it had before
        self._on_signal: Callable[[int], None] | None = None
        self._notifier = None
        self._old_wakeup_fd: int | None = None
        self._reader, self._writer = socket.socketpair()
        if threading.current_thread() is not threading.main_thread():
            return  # signals reach the main thread only: nothing to do from another
        for sock in (self._reader, self._writer):
            sock.setblocking(False)
        self._old_wakeup_fd = signal.set_wakeup_fd(self._writer.fileno(), warn_on_full_buffer=False)
        for signum in signals:
            before = signal.getsignal(signum)
            if before == signal.SIG_IGN:
                continue
            self._handled[signum] = before
            signal.signal(signum, self._record)

    @property
    def exit_code(self) -> int | None:
        """128 + the signal's number (130 for Ctrl+C, 143 for SIGTERM); None before one came."""
        return 128 + self.received if self.received else None

    def _record(self, signum: int, _frame: object) -> None:
        if self.received is None:
            self.received = signum

    def watch(self, on_signal: Callable[[int], None]) -> None:
        """Call ``on_signal(signum)`` from the event loop for the first quit signal (one that came
        before this call included). Needs the QApplication."""
        from PySide6.QtCore import QSocketNotifier

        self._on_signal = on_signal
        self._notifier = QSocketNotifier(self._reader.fileno(), QSocketNotifier.Type.Read)
        self._notifier.activated.connect(self._on_wakeup)
        if self.received is not None:  # it came before Qt listened
            self._deliver(self.received)

    def _on_wakeup(self) -> None:
        try:
            data = self._reader.recv(256)
        except OSError:  # nothing left to read
            data = b""
        came = [signum for signum in data if signum in self._handled]
        if came and self.received is None:
            self.received = came[0]
        if came:
            self._deliver(self.received)

    def _deliver(self, signum: int) -> None:
        on_signal, self._on_signal = self._on_signal, None  # once: a second Ctrl+C changes nothing
        if on_signal is not None:
            on_signal(signum)

    def close(self) -> None:
        """Give the signals their handlers back and close the socket."""
        if self._notifier is not None:
            self._notifier.setEnabled(False)
            self._notifier = None
        for signum, before in self._handled.items():
            with contextlib.suppress(TypeError, ValueError):
                signal.signal(signum, before)
        self._handled = {}
        if self._old_wakeup_fd is not None:
            with contextlib.suppress(ValueError):
                signal.set_wakeup_fd(self._old_wakeup_fd)
            self._old_wakeup_fd = None
        self._reader.close()
        self._writer.close()

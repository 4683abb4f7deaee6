"""Work that must not stall the window: a plain function called on a thread of its own, its
result (or its exception) handed back on the GUI thread through a queued signal.

Keep such work short or in C that releases the GIL (file reads): Python code on another thread
still takes turns with the GUI thread for the interpreter.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Qt, Signal, Slot

_in_flight: set[_Relay] = set()  # relays whose thread has not answered yet (kept alive until then)


class _Relay(QObject):
    """Lives on the GUI thread; its signal, emitted by the worker thread, is queued there."""

    finished = Signal(object, object)  # result, exception

    def __init__(self, done: Callable[[Any], None], failed: Callable[[BaseException], None]) -> None:
        super().__init__()
        self._done, self._failed = done, failed
        self.finished.connect(self._deliver, Qt.ConnectionType.QueuedConnection)

    @Slot(object, object)
    def _deliver(self, result: Any, error: BaseException | None) -> None:
        _in_flight.discard(self)
        self.deleteLater()
        if error is None:
            self._done(result)
        else:
            self._failed(error)


def run_in_thread(
    fn: Callable[..., Any],
    *args: Any,
    done: Callable[[Any], None],
    failed: Callable[[BaseException], None],
    name: str = "gradviz-background",
) -> None:
    """Call ``fn(*args)`` on a daemon thread (a read that hangs never holds up the app's exit);
    then ``done(result)`` or ``failed(exception)`` on the GUI thread."""
    relay = _Relay(done, failed)
    _in_flight.add(relay)
    threading.Thread(target=_call, args=(fn, args, relay), name=name, daemon=True).start()


def _call(fn: Callable[..., Any], args: tuple, relay: _Relay) -> None:
    """On a worker thread: ``fn(*args)``, its result or its exception handed to ``relay``."""
    try:
        result, error = fn(*args), None
    except Exception as exc:  # handed to ``failed`` on the GUI thread
        result, error = None, exc
    try:
        relay.finished.emit(result, error)
    except RuntimeError:  # the app is going away: nobody is waiting
        pass


def _ignore(_value: object) -> None:
    pass


class SerialWorker:
    """Calls run one after another on a daemon thread of their own, in the order submitted (the
    recovery file's writes: never two at once, never a write after the clear that follows it).
    The thread ends when there is nothing to do and starts again with the next call."""

    def __init__(self, name: str = "gradviz-serial") -> None:
        self._name = name
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Condition()
        self._pending = 0
        self._running = False

    def submit(
        self,
        fn: Callable[..., Any],
        *args: Any,
        done: Callable[[Any], None] = _ignore,
        failed: Callable[[BaseException], None] = _ignore,
    ) -> None:
        relay = _Relay(done, failed)
        _in_flight.add(relay)
        self._queue.put((fn, args, relay))
        with self._lock:
            self._pending += 1
            if not self._running:
                self._running = True
                threading.Thread(target=self._run, name=self._name, daemon=True).start()

    def wait(self, timeout: float) -> bool:
        """Block until every call submitted so far has run; False if that took over ``timeout`` s."""
        with self._lock:
            return self._lock.wait_for(lambda: self._pending == 0, timeout)

    def _run(self) -> None:
        while True:
            with self._lock:
                if self._pending == 0:
                    self._running = False
                    return
            fn, args, relay = self._queue.get()
            _call(fn, args, relay)
            with self._lock:
                self._pending -= 1
                self._lock.notify_all()


def in_flight() -> int:
    """How many calls have not answered yet (tests wait for 0)."""
    return len(_in_flight)


__all__ = ["SerialWorker", "in_flight", "run_in_thread"]

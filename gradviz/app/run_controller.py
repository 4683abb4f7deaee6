"""The run queue between the window and the worker: request ids, what waits, which answer is whose.

The worker runs one request at a time. A check asked for while it starts up waits and goes as
soon as the worker is ready. A memory study never holds a check back: a check asked for while
one runs stops it (the worker cancels it within a second), goes, and the study starts again
after it; a memory study waits behind a check and never goes before a waiting one. A region of a
large block (cells computed on demand) waits behind whatever runs, and a new check drops it. Answers to requests that are no longer current (a
check since replaced or cancelled) stop here, so the views only hear about the check they show.
Any QObject with WorkerClient's signals and methods will do as the worker (tests use a fake).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from PySide6.QtCore import QObject, Signal

from gradviz.app.memory_display import read_memory
from gradviz.app.state import CheckRequest, RunSnapshot, ShownRun

__all__ = ["CheckRequest", "RunController", "Worker"]  # CheckRequest lives with the state it is part of


class Worker(Protocol):
    """What the controller uses of ``gradviz.app.worker_client.WorkerClient``."""

    ready: Any  # Signal(dict)
    progress: Any  # Signal(int, int, int): request id, done, total
    finished: Any  # Signal(int, dict): request id, payload
    failed: Any  # Signal(int, dict): request id, error
    crashed: Any  # Signal(int, str): request id (0: idle), what happened to the worker
    is_ready: bool

    @property
    def busy(self) -> bool: ...
    @property
    def running(self) -> int: ...
    def submit(self, op: str, *, timeout: float | None = None, **payload: Any) -> int: ...
    def cancel(self) -> None: ...
    def discard_results_before(self, request_id: int) -> None: ...


class RunController(QObject):
    """Owns the request ids and the queue; turns the worker's answers into the window's events."""

    check_queued = Signal(bool)  # a check waits: True while the worker starts, False behind another request
    check_started = Signal(int)  # request id of the check just sent
    progress = Signal(int, int)  # done, total of the check in flight
    check_finished = Signal(int, dict)  # request id, the worker's summary (arrays in the files it names)
    check_failed = Signal(int, dict)  # request id, error: kind, message, filename, lineno, traceback
    memory_started = Signal()  # a memory study was sent
    memory_progress = Signal(int, int)  # done, total stacks of the study in flight
    memory_paused = Signal()  # a check stopped the study in flight; it starts again after the check
    sweep_finished = Signal(dict)  # {"sweep": ..., "table": ...}: the eps sweep the Why? panel draws
    sweep_failed = Signal(str)
    memory_finished = Signal(object)  # MemoryResult: the worker's {"study", "sweep"} read once, here
    memory_failed = Signal(str)
    region_started = Signal(int)  # request id of the region just sent
    region_progress = Signal(int, int)  # done, total rows and columns of the region in flight
    region_finished = Signal(int, dict)  # request id, the worker's summary (arrays in the files it names)
    region_failed = Signal(int, dict)  # request id (0: never sent), error: kind, message
    audit_started = Signal(int)  # request id of the model audit just sent
    audit_progress = Signal(int, int)  # done, total node checks of the audit in flight
    audit_finished = Signal(int, dict)  # request id, the worker's audit (each node's result files named)
    audit_failed = Signal(int, dict)  # request id, error: kind, message
    worker_died = Signal(str)  # the worker process itself died (outside a memory study); a new one starts

    def __init__(
        self, worker: Worker, parent: QObject | None = None, *, now: Callable[[], RunSnapshot | None] | None = None
    ) -> None:
        """``now``: what the window shows, kept with each check sent (``ShownRun``)."""
        super().__init__(parent)
        self.worker = worker
        self.shown = ShownRun(now, busy=lambda: self.busy, parent=self)  # what was asked and what is shown
        self._check = 0  # id of the latest check sent: only its answers count
        self._memory = 0  # id of the latest memory study sent
        self._memory_options: dict = {}  # what it was sent with, to send it again after a check
        self._preempted = 0  # id of a memory study stopped for a check, whose answer has not come yet
        self._cancelled = 0  # id of a check told to stop whose answer has not come yet
        self._awaited: set[int] = set()  # ids sent and not answered: an answer counts once
        self._waiting: CheckRequest | None = None
        self._sweep = 0  # id of the latest eps sweep sent
        self._sweep_waiting: CheckRequest | None = None
        self._sweep_options: dict | None = None
        self._memory_waiting: dict | None = None
        self._region = 0  # id of the latest region sent
        self._region_waiting: tuple[CheckRequest, dict] | None = None
        self._audit = 0  # id of the latest model audit sent
        worker.ready.connect(self._on_ready)
        worker.progress.connect(self._on_progress)
        worker.finished.connect(self._on_finished)
        worker.failed.connect(self._on_failed)
        worker.crashed.connect(self._on_crashed)

    # --- asking ----------------------------------------------------------------------------
    def run_check(self, request: CheckRequest) -> None:
        """Send the check now if the worker is free, else as soon as it is. While a check runs
        (and was not cancelled) a second one is not queued: the window's Run is disabled then."""
        self.shown.note_asked(request)
        running = self.worker.running if self.worker.busy else 0
        if running and running == self._check and running != self._cancelled:
            return
        if running and running == self._sweep and running in self._awaited:
            self._awaited.discard(running)  # a new check makes the sweep of the old one moot
            self.worker.cancel()
        self._sweep_waiting = None
        self._drop_region("Stopped: a new run started.")
        if running and running == self._memory and running in self._awaited and not self._preempted:
            self._preempted = running  # the study goes again after the check
            self._memory_waiting = self._memory_options
            self.worker.cancel()
            self.memory_paused.emit()
        if running or not self.worker.is_ready:
            self._waiting = request  # the latest request wins
            self.check_queued.emit(not self.worker.is_ready)
            return
        self._send_check(request)

    def measure_memory(self, options: dict) -> None:
        """Send the memory study now if nothing runs or waits, else after that."""
        if self.worker.busy or not self.worker.is_ready or self._waiting is not None:
            self._memory_waiting = options
            return
        self._memory_waiting = None
        self._memory_options = options
        self._memory = self.worker.submit("memory", options=options)
        self._awaited.add(self._memory)
        self.memory_started.emit()

    def run_sweep(self, request: CheckRequest, options: dict | None = None) -> None:
        """The eps sweep of ``request``'s Function (the Why? panel), after any check: it never
        holds a check back, and a new check drops it."""
        if self.worker.busy or not self.worker.is_ready or self._waiting is not None:
            self._sweep_waiting = request
            self._sweep_options = options
            return
        self._sweep_waiting = None
        self._sweep = self.worker.submit(
            "sweep",
            timeout=request.timeout,
            settings=request.settings.to_dict(),
            options=options or {},  # the worker's SweepOptions: the block the user chose
            **_code(request),
        )
        self._awaited.add(self._sweep)

    def run_region(self, request: CheckRequest, region: dict) -> None:
        """Cells of a block too large to hold, computed exactly, at the inputs of ``request``'s check
        (``region``: output, input, row0, col0, rows, cols). Sent when nothing runs or waits; the
        latest ask waits in place of an older one."""
        if self.worker.busy or not self.worker.is_ready or self._waiting is not None:
            if self._region_waiting is not None:
                self.region_failed.emit(0, {"kind": "cancelled", "message": "Replaced by a newer region."})
            self._region_waiting = (request, region)
            return
        self._region_waiting = None
        self._region = self.worker.submit(
            "region", timeout=request.timeout, settings=request.settings.to_dict(), region=region, **_code(request)
        )
        self._awaited.add(self._region)
        self.region_started.emit(self._region)

    def run_audit(self, path: str, name: str, settings: dict, timeout: float | None = None) -> bool:
        """Audit the model ``name`` of the file ``path``, each checked node's arrays written as a
        check's are; False (nothing sent) while anything else runs or waits."""
        if self.worker.busy or not self.worker.is_ready or self._waiting is not None:
            return False
        self._audit = self.worker.submit(
            "audit", timeout=timeout, path=path, function=name, settings=settings, node_files=True
        )
        self._awaited.add(self._audit)
        self.audit_started.emit(self._audit)
        return True

    @property
    def audit_running(self) -> bool:
        return bool(self._audit) and self._audit in self._awaited

    def cancel_audit(self) -> None:
        """Stop the audit in flight; its answer comes as audit_failed, kind cancelled."""
        if self.audit_running and self.worker.running == self._audit:
            self.worker.cancel()

    def cancel_region(self) -> None:
        """Stop the region in flight (its answer comes as region_failed, kind cancelled) or drop the waiting one."""
        self._drop_region("Cancelled.", stop=False)
        if self.region_running:
            self.worker.cancel()

    @property
    def region_running(self) -> bool:
        return bool(self._region) and self.worker.busy and self.worker.running == self._region

    @property
    def region_waiting(self) -> bool:
        return self._region_waiting is not None

    @property
    def sweep_running(self) -> bool:
        return bool(self._sweep) and self._sweep in self._awaited

    @property
    def sweep_pending(self) -> bool:
        """A sweep is sent and unanswered, or waits for the worker (behind a check or a study)."""
        return self.sweep_running or self._sweep_waiting is not None

    def cancel(self) -> None:
        """Drop a waiting check and stop whatever runs; a stopped check's answer (failed, kind
        cancelled, naming the line) still comes as check_failed."""
        self._waiting = None
        self._drop_region("Cancelled.", stop=False)
        if self.worker.busy:
            if self.worker.running == self._check:
                self._cancelled = self._check
            self.worker.cancel()

    def note_shown(self, request: int, function: str) -> None:
        """The check ``request`` (of ``function``) is on screen: the files of older runs can go."""
        self.worker.discard_results_before(request)
        self.shown.note_shown(request, function)

    def note_failed(self, request: int, *, error: bool) -> None:
        """The check ``request`` ended without a result on screen (``error``: it failed, not cancelled)."""
        self.shown.note_failed(request, error=error)

    # --- state -----------------------------------------------------------------------------
    @property
    def current_check(self) -> int:
        """Id of the check whose answer counts (0 before the first)."""
        return self._check

    def is_current(self, request: int) -> bool:
        return bool(request) and request == self._check

    @property
    def check_waiting(self) -> bool:
        return self._waiting is not None

    @property
    def memory_asked(self) -> bool:
        """A memory study was sent or is waiting."""
        return bool(self._memory) or self._memory_waiting is not None

    @property
    def memory_running(self) -> bool:
        """A memory study is in flight (and not being stopped for a check)."""
        return bool(self._memory) and self.worker.busy and self.worker.running == self._memory and not self._preempted

    @property
    def busy(self) -> bool:
        """A check is in flight or waiting."""
        return self._waiting is not None or (self.worker.busy and self.worker.running == self._check)

    # --- the worker's answers --------------------------------------------------------------
    def _send_check(self, request: CheckRequest) -> None:
        self._check = self.worker.submit(
            "check",
            timeout=request.timeout,  # enforced by the worker, which says where the code was
            settings=request.settings.to_dict(),
            **_code(request),
        )
        self._awaited.add(self._check)
        self.shown.note_sent(self._check, request)
        self.check_started.emit(self._check)

    def _drop_region(self, message: str, *, stop: bool = True) -> None:
        """Forget the waiting region, and with ``stop`` the one in flight; each ends as region_failed."""
        if self._region_waiting is not None:
            self._region_waiting = None
            self.region_failed.emit(0, {"kind": "cancelled", "message": message})
        if stop and self.region_running and self._region in self._awaited:
            self._awaited.discard(self._region)
            self.worker.cancel()
            self.region_failed.emit(self._region, {"kind": "cancelled", "message": message})

    def _start_waiting(self) -> None:
        """The worker is free: a waiting check first, then a waiting region, sweep or memory study."""
        if self.worker.busy or not self.worker.is_ready:
            return
        if self._waiting is not None:
            request, self._waiting = self._waiting, None
            self._send_check(request)
        elif self._region_waiting is not None:
            self.run_region(*self._region_waiting)
        elif self._sweep_waiting is not None:
            self.run_sweep(self._sweep_waiting, self._sweep_options)
        elif self._memory_waiting is not None:
            self.measure_memory(self._memory_waiting)

    def _on_ready(self, _info: dict) -> None:
        self._start_waiting()

    def _on_progress(self, request: int, done: int, total: int) -> None:
        if self.is_current(request) and request in self._awaited:
            self.progress.emit(done, total)
        elif request == self._region and request in self._awaited:
            self.region_progress.emit(done, total)
        elif request == self._memory and request in self._awaited and not self._preempted:
            self.memory_progress.emit(done, total)
        elif request == self._audit and request in self._awaited:
            self.audit_progress.emit(done, total)

    def _on_finished(self, request: int, payload: dict) -> None:
        awaited = self._answered(request)
        if awaited and request == self._sweep:
            self.sweep_finished.emit(payload)
        if awaited and request == self._region:
            self.region_finished.emit(request, payload)
        if awaited and request == self._audit:
            self.audit_finished.emit(request, payload)
        if awaited and request == self._memory:
            if self._was_preempted(request):  # it finished before the cancel reached it: keep it
                self._memory_waiting = None
            self._emit_memory(payload)
        self._start_waiting()
        if awaited and self.is_current(request):  # not if a check that waited has taken its place
            self.check_finished.emit(request, payload)

    def _emit_memory(self, payload: dict) -> None:
        """The study's dict becomes the typed ``MemoryResult`` here, where it arrives, so nothing
        after the controller sees the worker's dict; one that cannot be read is a failed study."""
        result, error = read_memory(payload)
        if result is None:
            self.memory_failed.emit(error or "The memory study could not be read.")
        else:
            self.memory_finished.emit(result)

    def _on_failed(self, request: int, error: dict) -> None:
        awaited = self._answered(request)
        if awaited and request == self._sweep:
            self.sweep_failed.emit(error.get("message") or "The eps sweep failed.")
        if awaited and request == self._region:
            self.region_failed.emit(request, error)
        if awaited and request == self._audit:
            self.audit_failed.emit(request, error)
        if awaited and request == self._memory and not self._was_preempted(request):
            self.memory_failed.emit(error.get("message") or "The memory study failed.")
        self._start_waiting()
        if awaited and self.is_current(request):
            self.check_failed.emit(request, error)

    def _on_crashed(self, request: int, message: str) -> None:
        if request and request == self._audit:
            if self._answered(request):
                self.audit_failed.emit(request, {"kind": "crashed", "message": message})
        elif request and request == self._region:
            if self._answered(request):
                self.region_failed.emit(request, {"kind": "crashed", "message": message})
        elif request and request == self._sweep:
            if self._answered(request):
                self.sweep_failed.emit(message)
        elif self._answered(request) and request == self._memory:
            if not self._was_preempted(request):
                self.memory_failed.emit(message)
        else:
            self.shown.note_worker_died()
            self.worker_died.emit(message)
        self._start_waiting()  # a new worker is starting: its ready signal sends what waits

    def _was_preempted(self, request: int) -> bool:
        if request and request == self._preempted:
            self._preempted = 0
            return True
        return False

    def _answered(self, request: int) -> bool:
        """Take ``request`` off the awaited ones; False for an answer no one waits for any more."""
        if request == self._cancelled:
            self._cancelled = 0
        if request not in self._awaited:
            return False
        self._awaited.discard(request)
        return True


def _code(request: CheckRequest) -> dict:
    """Where the worker finds the code: a target it imports, or the source text."""
    if request.target:
        return {"target": request.target, "inputs_path": request.inputs_path}
    return {"source": request.source, "filename": request.filename, "function": request.function}

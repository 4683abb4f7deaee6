"""The run queue between the window and the worker: one table of jobs, and the rules of who goes when.

The worker runs one request at a time. Each job the window asks for (a check, the memory study,
an eps sweep, a region of a large block, a model audit) is a row of the table: its kind, the
typed request, the worker's id once sent, and its state. What may wait, what a new check drops,
what a check stops and sends again, and which waiting job goes first are the ``RULES`` below,
one line per kind. Answers to jobs that are no longer current (a check since replaced, a sweep a
new check made moot) stop here, so the views only hear about what they show. Any QObject with
WorkerClient's signals and methods will do as the worker (tests use a fake).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from PySide6.QtCore import QObject, Signal

from gradviz.app.memory_display import read_memory
from gradviz.app.state import RunSnapshot, ShownRun
from gradviz.schema.requests import (
    AuditRequest,
    CheckRequest,
    MemoryRequest,
    RegionRequest,
    Request,
    SweepRequest,
)

__all__ = ["RULES", "Job", "RunController", "Worker"]

WAITING, SENT, CANCELLED, PREEMPTED, DROPPED = "waiting", "sent", "cancelled", "preempted", "dropped"
# sent: its answers count; cancelled: told to stop, its answer (failed, kind cancelled) still counts;
# preempted: stopped for a check, sent again after it; dropped: its answer counts no more
NEW_RUN_NOTE = "Stopped: a new run started."


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
    def submit(self, request: Request) -> int: ...
    def cancel(self) -> None: ...
    def discard_results_before(self, request_id: int) -> None: ...


@dataclass(frozen=True)
class Rule:
    """How one kind of job shares the worker."""

    priority: int  # of the waiting jobs the lowest goes first; a job waits behind any lower one
    queues: bool = True  # it waits for the worker; else it is refused while anything runs or waits
    dropped_by_check: bool = False  # a new check makes it moot: dropped if waiting, stopped if in flight
    preemptible: bool = False  # a check asked for while it runs stops it ...
    resend: bool = False  # ... and it goes again after the check
    replaced_note: str = ""  # said (as its failure, id 0) when a newer ask takes the waiting one's place


RULES: dict[str, Rule] = {
    "check": Rule(0),
    "region": Rule(1, dropped_by_check=True, replaced_note="Replaced by a newer region."),
    "sweep": Rule(2, dropped_by_check=True),
    "memory": Rule(3, preemptible=True, resend=True),  # it never goes before a waiting check
    "audit": Rule(4, queues=False),
}


@dataclass
class Job:
    """One row of the table: a request asked for, waiting or sent and not yet answered."""

    kind: str
    request: Request
    id: int = 0  # the worker's id once sent
    state: str = WAITING
    resend_of: int = 0  # the preempted job this one sends again

    @property
    def priority(self) -> int:
        return RULES[self.kind].priority

    @property
    def preemptible(self) -> bool:
        return RULES[self.kind].preemptible

    @property
    def resend(self) -> bool:
        return RULES[self.kind].resend

    @property
    def live(self) -> bool:
        """Its answers are reported."""
        return self.state in (SENT, CANCELLED)


class RunController(QObject):
    """Owns the job table; turns the worker's answers into the window's events."""

    check_queued = Signal(bool)  # a check waits: True while the worker starts, False behind another request
    check_started = Signal(int)  # request id of the check just sent
    progress = Signal(int, int)  # done, total of the check in flight
    progress_unit = Signal(str)  # what they count ("Jacobian rows and columns"), before each count
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
        self.jobs: list[Job] = []  # waiting, and sent but not answered
        self._latest: dict[str, int] = {}  # kind: id of the latest job of that kind sent
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
        running = self._running_job()
        if running is not None and running.kind == "check" and running.state == SENT:
            return
        for job in [job for job in self.jobs if RULES[job.kind].dropped_by_check]:
            self._drop(job, NEW_RUN_NOTE)
        if running is not None and running.preemptible and running.state == SENT:
            running.state = PREEMPTED
            self.worker.cancel()
            if running.resend:
                self._wait(Job(running.kind, running.request, resend_of=running.id))
            self.memory_paused.emit()
        if self.worker.busy or not self.worker.is_ready:
            self._wait(Job("check", request))
            self.check_queued.emit(not self.worker.is_ready)
            return
        self._send(Job("check", request))

    def measure_memory(self, request: MemoryRequest) -> None:
        """Send the memory study now if nothing runs or waits, else after that."""
        self._ask(Job("memory", request))

    def run_sweep(self, request: SweepRequest) -> None:
        """The eps sweep (the Why? panel), after any check: it never holds a check back, and a
        new check drops it."""
        self._ask(Job("sweep", request))

    def run_region(self, request: RegionRequest) -> None:
        """Cells of a block too large to hold, computed exactly at the inputs of the check whose
        code and settings ``request`` carries. Sent when nothing runs or waits; the latest ask
        waits in place of an older one."""
        self._ask(Job("region", request))

    def run_audit(self, request: AuditRequest) -> bool:
        """Audit a model, each checked node's arrays written as a check's are; False (nothing
        sent) while anything else runs or waits."""
        return self._ask(Job("audit", request))

    def cancel(self) -> None:
        """Drop a waiting check and stop whatever runs; a stopped check's answer (failed, kind
        cancelled, naming the line) still comes as check_failed."""
        self._drop_waiting("check")
        self._drop_waiting("region", "Cancelled.")
        if self.worker.busy:
            self._stop(self._running_job())

    def cancel_region(self) -> None:
        """Stop the region in flight (its answer comes as region_failed, kind cancelled) or drop the waiting one."""
        self._drop_waiting("region", "Cancelled.")
        if self.region_running:
            self._stop(self._running_job())

    def cancel_audit(self) -> None:
        """Stop the audit in flight; its answer comes as audit_failed, kind cancelled."""
        running = self._running_job()
        if running is not None and running.kind == "audit" and running.live:
            self._stop(running)

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
        return self._latest.get("check", 0)

    def is_audit(self, request: int) -> bool:
        """``request`` is the latest model audit (its nodes' results are shown under its id)."""
        return bool(request) and request == self._latest.get("audit")

    def is_current(self, request: int) -> bool:
        return bool(request) and request == self.current_check

    @property
    def check_waiting(self) -> bool:
        return self._waiting("check") is not None

    @property
    def busy(self) -> bool:
        """A check is in flight or waiting."""
        return self.check_waiting or self._running("check")

    @property
    def memory_asked(self) -> bool:
        """A memory study was sent or is waiting."""
        return "memory" in self._latest or self._waiting("memory") is not None

    @property
    def memory_running(self) -> bool:
        """A memory study is in flight (and not being stopped for a check)."""
        return self._running("memory")

    @property
    def region_running(self) -> bool:
        return self._running("region")

    @property
    def region_waiting(self) -> bool:
        return self._waiting("region") is not None

    @property
    def sweep_running(self) -> bool:
        return any(job.kind == "sweep" and job.live for job in self.jobs)

    @property
    def sweep_pending(self) -> bool:
        """A sweep is sent and unanswered, or waits for the worker (behind a check or a study)."""
        return self.sweep_running or self._waiting("sweep") is not None

    @property
    def audit_running(self) -> bool:
        return any(job.kind == "audit" and job.live for job in self.jobs)

    # --- the table -------------------------------------------------------------------------
    def _ask(self, job: Job) -> bool:
        """Send ``job`` if the worker is free and nothing goes before it, else let it wait (or,
        for a kind that does not queue, refuse it). True when it was sent."""
        free = not self.worker.busy and self.worker.is_ready
        if free and not any(w.state == WAITING and w.priority <= job.priority for w in self.jobs):
            self._send(job)
            return True
        if RULES[job.kind].queues:
            self._wait(job)
        return False

    def _wait(self, job: Job) -> None:
        """``job`` waits; the latest ask of a kind takes the place of the one waiting."""
        self._drop_waiting(job.kind, RULES[job.kind].replaced_note)
        self.jobs.append(job)

    def _send(self, job: Job) -> None:
        job.id, job.state = self.worker.submit(job.request), SENT  # the worker enforces the request's timeout
        self.jobs.append(job)
        self._latest[job.kind] = job.id
        if isinstance(job.request, CheckRequest):
            self.shown.note_sent(job.id, job.request)
            self.check_started.emit(job.id)
        elif job.kind == "memory":
            self.memory_started.emit()
        elif job.kind == "region":
            self.region_started.emit(job.id)
        elif job.kind == "audit":
            self.audit_started.emit(job.id)

    def _stop(self, job: Job | None) -> None:
        """Tell the worker to stop ``job`` (the one in flight); its answer still counts."""
        if job is not None and job.state == SENT:
            job.state = CANCELLED
        self.worker.cancel()

    def _drop(self, job: Job, note: str) -> None:
        """Forget ``job``: waiting, it never goes; in flight, it is stopped and its answer ignored.
        A region says so (region_failed), its panel waits for it."""
        if job.state == WAITING:
            self.jobs.remove(job)
            self._say_dropped(job, 0, note)
        elif job.live:
            job.state = DROPPED
            self.worker.cancel()
            self._say_dropped(job, job.id, note)

    def _drop_waiting(self, kind: str, note: str = "") -> None:
        waiting = self._waiting(kind)
        if waiting is not None:
            self.jobs.remove(waiting)
            self._say_dropped(waiting, 0, note)

    def _say_dropped(self, job: Job, request: int, note: str) -> None:
        if job.kind == "region" and note:
            self.region_failed.emit(request, {"kind": "cancelled", "message": note})

    def _waiting(self, kind: str) -> Job | None:
        return next((job for job in self.jobs if job.kind == kind and job.state == WAITING), None)

    def _running_job(self) -> Job | None:
        """The job the worker runs now (None when idle)."""
        if not self.worker.busy:
            return None
        return next((job for job in self.jobs if job.id == self.worker.running and job.state != WAITING), None)

    def _running(self, kind: str) -> bool:
        """A job of ``kind`` is in flight and its answers count."""
        job = self._running_job()
        return job is not None and job.kind == kind and job.live

    def _take(self, request: int) -> Job | None:
        """The sent job ``request`` leaves the table: it is answered."""
        job = next((job for job in self.jobs if request and job.id == request and job.state != WAITING), None)
        if job is not None:
            self.jobs.remove(job)
        return job

    def _start_waiting(self) -> None:
        """The worker is free: the waiting job of the lowest priority goes."""
        if self.worker.busy or not self.worker.is_ready:
            return
        waiting = [job for job in self.jobs if job.state == WAITING]
        if waiting:
            job = min(waiting, key=lambda job: job.priority)
            self.jobs.remove(job)
            self._send(job)

    # --- the worker's answers --------------------------------------------------------------
    def _on_ready(self, _info: dict) -> None:
        self._start_waiting()

    def _on_progress(self, request: int, done: int, total: int) -> None:
        job = next((job for job in self.jobs if request and job.id == request and job.live), None)
        if job is None:
            return
        if job.kind == "check" and self.is_current(request):
            self.progress_unit.emit(getattr(self.worker, "progress_unit", ""))
            self.progress.emit(done, total)
        elif job.kind == "region":
            self.region_progress.emit(done, total)
        elif job.kind == "memory":
            self.memory_progress.emit(done, total)
        elif job.kind == "audit":
            self.audit_progress.emit(done, total)

    def _on_finished(self, request: int, payload: dict) -> None:
        job = self._take(request)
        if job is not None and job.state == PREEMPTED:  # it finished before the cancel reached it: keep it
            self.jobs = [w for w in self.jobs if w.resend_of != request]
            job.state = SENT
        kind = job.kind if job is not None and job.live else None  # None: no one waits for this answer
        if kind == "sweep":
            self.sweep_finished.emit(payload)
        elif kind == "region":
            self.region_finished.emit(request, payload)
        elif kind == "audit":
            self.audit_finished.emit(request, payload)
        elif kind == "memory":
            self._emit_memory(payload)
        self._start_waiting()
        if kind == "check" and self.is_current(request):  # not if a check that waited has taken its place
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
        job = self._take(request)
        kind = job.kind if job is not None and job.live else None  # a preempted study's failure is its stop
        if kind == "sweep":
            self.sweep_failed.emit(error.get("message") or "The eps sweep failed.")
        elif kind == "region":
            self.region_failed.emit(request, error)
        elif kind == "audit":
            self.audit_failed.emit(request, error)
        elif kind == "memory":
            self.memory_failed.emit(error.get("message") or "The memory study failed.")
        self._start_waiting()
        if kind == "check" and self.is_current(request):
            self.check_failed.emit(request, error)

    def _on_crashed(self, request: int, message: str) -> None:
        job = self._take(request)
        if job is None or job.kind == "check":
            self.shown.note_worker_died()
            self.worker_died.emit(message)
        elif not job.live:
            pass  # dropped, or stopped for a check: no one waits for its answer
        elif job.kind in ("region", "audit"):
            getattr(self, f"{job.kind}_failed").emit(request, {"kind": "crashed", "message": message})
        else:
            getattr(self, f"{job.kind}_failed").emit(message)
        self._start_waiting()  # a new worker is starting: its ready signal sends what waits

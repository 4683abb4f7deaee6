"""The run controller against a fake worker: queueing, request ids, stale answers, cancel.

The fake is a QObject with WorkerClient's signals and methods; the test plays the worker's side
(ready, progress, answers, a crash) by calling its helpers. No window, no process.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from PySide6.QtCore import QObject, Signal

from gradviz.app.memory_display import MemoryResult
from gradviz.app.run_controller import RULES, RunController
from gradviz.schema.memory import ConvBNStudy, SavedBytes, SavedTensor, VariantMemory
from gradviz.schema.requests import (
    AuditRequest,
    CheckRequest,
    CodeSource,
    MemoryRequest,
    Region,
    RegionRequest,
    Request,
    SweepRequest,
)
from gradviz.schema.settings import CheckSettings, MemoryOptions, SweepOptions


@dataclass(frozen=True)
class Sent:
    """One request the fake was sent: the typed request and the id it answered with."""

    id: int
    request: Request

    @property
    def op(self) -> str:
        return self.request.op


class FakeWorker(QObject):
    """WorkerClient's interface; records what it is sent and answers when the test says so."""

    ready = Signal(dict)
    progress = Signal(int, int, int)
    finished = Signal(int, dict)
    failed = Signal(int, dict)
    crashed = Signal(int, str)
    output = Signal(str)

    def __init__(self, *, ready: bool = True) -> None:
        super().__init__()
        self.is_ready = ready
        self.sent: list[Sent] = []
        self.cancels: list[int] = []
        self.discarded: list[int] = []
        self._running = 0
        self._next_id = 1

    @property
    def busy(self) -> bool:
        return bool(self._running)

    @property
    def running(self) -> int:
        return self._running

    def submit(self, request: Request) -> int:
        assert self.is_ready and not self._running, "the controller sent a request the worker cannot take yet"
        request_id, self._next_id = self._next_id, self._next_id + 1
        self.sent.append(Sent(request_id, request))
        self._running = request_id
        return request_id

    def cancel(self) -> None:
        self.cancels.append(self._running)

    def discard_results_before(self, request_id: int) -> None:
        self.discarded.append(request_id)

    # the worker's side, played by the test
    def start(self) -> None:
        self.is_ready = True
        self.ready.emit({"devices": []})

    def report(self, done: int, total: int, request: int | None = None) -> None:
        self.progress.emit(request or self._running, done, total)

    def answer(self, payload: dict | None = None, request: int | None = None) -> int:
        request = request or self._running
        if request == self._running:
            self._running = 0
        self.finished.emit(request, payload or {"answer": request})
        return request

    def fail(self, kind: str = "backward", request: int | None = None) -> int:
        request = request or self._running
        if request == self._running:
            self._running = 0
        self.failed.emit(request, {"kind": kind, "message": f"{kind} failed", "lineno": 7})
        return request

    def die(self) -> None:
        """The worker process dies; WorkerClient starts a new one, not ready yet."""
        request, self._running, self.is_ready = self._running, 0, False
        self.crashed.emit(request, "The gradviz worker process was killed.")


class Events:
    """Every signal the controller emitted, in order, as (name, *args)."""

    NAMES = ("check_queued", "check_started", "progress", "check_finished", "check_failed",
             "memory_finished", "memory_failed", "worker_died")

    def __init__(self, controller: RunController) -> None:
        self.log: list[tuple] = []
        for name in self.NAMES:
            getattr(controller, name).connect(lambda *args, name=name: self.log.append((name, *args)))

    def names(self) -> list[str]:
        return [event[0] for event in self.log]

    def take(self) -> list[tuple]:
        log, self.log = self.log, []
        return log


def study_answer(layers: int = 2) -> dict:
    """A memory study's answer as the worker sends it (the schema's own ``to_dict``), made by hand."""
    x = SavedTensor((1, 3, 4, 4), "float32", 192, False, name="x (the input)")

    def variant() -> VariantMemory:
        return VariantMemory(SavedBytes(192, 1, [x]))

    study = ConvBNStudy(
        "cpu", "float32", layers, (1, 3, 4, 4), 4, 3, variant(), variant(), 0, 0, True, True, [], {"output": 1e-5},
        1e-12, 0.0,
    )
    return {"study": study.to_dict(), "sweep": []}


def check(source: str = "code", timeout: float | None = 30.0, **settings) -> CheckRequest:
    code = CodeSource(source=source, filename="<editor>", function="MyFunction")
    return CheckRequest(code=code, settings=CheckSettings(**settings), timeout=timeout)


def memory(**options) -> MemoryRequest:
    return MemoryRequest(MemoryOptions(**options))


def sweep(of: CheckRequest, block: tuple[int, int] | None = None) -> SweepRequest:
    """The eps sweep of ``of``'s Function, as the Why? dock asks for it."""
    return SweepRequest(code=of.code, settings=of.settings, timeout=of.timeout, options=SweepOptions(block=block))


def region(of: CheckRequest, **cells) -> RegionRequest:
    return RegionRequest(code=of.code, region=Region(**{**REGION, **cells}), settings=of.settings, timeout=of.timeout)


@pytest.fixture
def worker():
    return FakeWorker()


@pytest.fixture
def controller(worker):
    return RunController(worker)


@pytest.fixture
def events(controller):
    return Events(controller)


def test_a_check_goes_at_once_with_its_settings_and_time_limit(worker, controller, events):
    controller.run_check(check("x = 1", timeout=2.5, dtype="float32", eps=1e-4))
    [sent] = worker.sent
    assert sent.op == "check" and sent.request.timeout == 2.5
    assert sent.request.code == CodeSource(source="x = 1", filename="<editor>", function="MyFunction")
    assert sent.request.settings == CheckSettings(dtype="float32", eps=1e-4)
    assert events.take() == [("check_started", sent.id)]
    assert controller.current_check == sent.id and controller.is_current(sent.id) and controller.busy
    worker.report(3, 10)
    request = worker.answer({"passed": True})
    assert events.take() == [("progress", 3, 10), ("check_finished", request, {"passed": True})]
    assert not controller.busy


def test_no_time_limit_is_sent_as_none(worker, controller):
    controller.run_check(check(timeout=None))
    assert worker.sent[0].request.timeout is None


def test_a_check_asked_for_before_the_worker_is_ready_waits_and_the_latest_one_goes():
    worker = FakeWorker(ready=False)
    controller = RunController(worker)
    events = Events(controller)
    controller.run_check(check("first"))
    controller.run_check(check("second"))
    assert worker.sent == [] and controller.check_waiting and controller.busy
    assert events.take() == [("check_queued", True), ("check_queued", True)]
    worker.start()
    assert [s.request.code.source for s in worker.sent] == ["second"]
    assert events.take() == [("check_started", worker.sent[0].id)]


def test_run_while_a_check_runs_is_ignored(worker, controller, events):
    controller.run_check(check("first"))
    controller.run_check(check("second"))
    assert [s.request.code.source for s in worker.sent] == ["first"] and not controller.check_waiting
    worker.answer()
    assert len(worker.sent) == 1 and events.names() == ["check_started", "check_finished"]


def test_a_memory_study_waits_behind_a_check(worker, controller, events):
    controller.run_check(check())
    controller.measure_memory(memory(layers=2))
    assert [s.op for s in worker.sent] == ["check"]
    worker.answer()
    assert [s.op for s in worker.sent] == ["check", "memory"] and worker.sent[1].request == memory(layers=2)
    study = worker.answer(study_answer())
    assert events.names() == ["check_started", "check_finished", "memory_finished"]
    assert study == worker.sent[1].id and not controller.is_current(study)


@pytest.mark.parametrize("ending", ["answer", "fail", "die"])
def test_a_memory_study_never_holds_a_run_back(worker, controller, events, ending):
    """A check asked for during a study stops it and starts the moment it ends; the study goes
    again after the check unless it had finished before the cancel reached it."""
    paused = []
    controller.memory_paused.connect(lambda: paused.append(True))
    controller.measure_memory(memory(layers=3))
    study = worker.sent[0].id
    controller.run_check(check("mine"))
    assert worker.cancels == [study] and paused == [True]
    assert [s.op for s in worker.sent] == ["memory"] and events.take() == [("check_queued", False)]
    if ending == "answer":
        worker.answer(study_answer())
    else:
        getattr(worker, ending)()
    if ending == "die":
        assert worker.sent[-1].op == "memory"  # a new worker is starting
        worker.start()
    assert [s.op for s in worker.sent] == ["memory", "check"] and worker.sent[1].request.code.source == "mine"
    # a study stopped for the run is no failure; one that finished first is shown
    assert events.names() == (["memory_finished"] if ending == "answer" else []) + ["check_started"]
    worker.answer()
    again = ending != "answer"
    assert [s.op for s in worker.sent] == ["memory", "check"] + (["memory"] if again else [])
    if again:
        assert worker.sent[-1].request == memory(layers=3)


def test_memory_progress_is_reported_for_the_study_in_flight(worker, controller):
    seen = []
    controller.memory_started.connect(lambda: seen.append("started"))
    controller.memory_progress.connect(lambda done, total: seen.append((done, total)))
    controller.measure_memory(memory(layers=2))
    worker.report(1, 5)
    worker.report(2, 5)
    assert seen == ["started", (1, 5), (2, 5)]
    assert controller.memory_running


def test_a_waiting_check_goes_before_a_waiting_memory_study():
    worker = FakeWorker(ready=False)
    controller = RunController(worker)
    controller.measure_memory(memory(layers=1))
    controller.run_check(check())
    controller.measure_memory(memory(layers=2))  # asked after the check: still behind it
    worker.start()
    assert [s.op for s in worker.sent] == ["check"]
    worker.answer()
    assert [s.op for s in worker.sent] == ["check", "memory"] and worker.sent[1].request == memory(layers=2)
    assert controller.memory_asked


def test_answers_to_other_requests_are_not_reported(worker, controller, events):
    controller.measure_memory(memory())
    study = worker.sent[0].id
    worker.report(1, 2)  # progress of the memory study: not the check's
    worker.answer()
    controller.run_check(check())
    events.take()
    worker.finished.emit(study, {"late": True})  # a duplicate, late answer of an old request
    worker.failed.emit(study + 100, {"kind": "backward", "message": "?"})  # no such request
    worker.failed.emit(0, {"kind": "protocol", "message": "a bad line while idle"})
    worker.progress.emit(study, 5, 6)
    assert events.log == []


def test_cancel_stops_the_check_and_its_answer_says_so(worker, controller, events):
    controller.run_check(check())
    request = worker.sent[0].id
    controller.cancel()
    assert worker.cancels == [request]
    worker.fail("cancelled")
    assert events.take()[-1] == ("check_failed", request, {"kind": "cancelled", "message": "cancelled failed", "lineno": 7})
    assert not controller.busy


def test_cancel_drops_a_waiting_check():
    worker = FakeWorker(ready=False)
    controller = RunController(worker)
    controller.run_check(check())
    controller.cancel()
    assert worker.cancels == [] and not controller.check_waiting
    worker.start()
    assert worker.sent == []


def test_run_right_after_cancel_waits_for_the_stopped_check(worker, controller, events):
    """The stopped check's answer is still to come: the new one waits for it, and the old answer
    is not reported (the new run is what the window shows now)."""
    controller.run_check(check("hangs"))
    controller.cancel()
    controller.run_check(check("fixed"))
    assert [s.request.code.source for s in worker.sent] == ["hangs"] and controller.check_waiting
    events.take()
    worker.fail("cancelled")
    new = worker.sent[-1].id
    assert worker.sent[-1].request.code.source == "fixed" and events.take() == [("check_started", new)]
    worker.answer()
    assert events.take() == [("check_finished", new, {"answer": new})]


def test_a_memory_answer_arrives_as_the_typed_study_read_once_here(worker, controller, events):
    """The worker's dict is read into schema types where it arrives: the window gets a
    ``MemoryResult``, never the dict."""
    controller.measure_memory(memory(layers=3))
    answer = study_answer(layers=3)
    worker.answer(answer)
    [(name, result)] = events.take()
    assert name == "memory_finished" and isinstance(result, MemoryResult)
    assert result.study == ConvBNStudy.from_dict(answer["study"]) and result.sweep == []


def test_a_memory_answer_that_cannot_be_read_is_a_failed_study(worker, controller, events):
    controller.measure_memory(memory(layers=2))
    worker.answer({"study": {"layers": 2}, "sweep": []})
    [(name, message)] = events.take()
    assert name == "memory_failed" and message.startswith("The memory study could not be read")


def test_cancel_during_a_memory_study_stops_it(worker, controller, events):
    controller.measure_memory(memory())
    controller.cancel()
    assert worker.cancels == [worker.sent[0].id]
    worker.fail("cancelled")
    assert events.names() == ["memory_failed"]


def test_the_worker_dying_during_a_check_or_idle_is_reported(worker, controller, events):
    controller.run_check(check())
    worker.die()
    assert events.take()[-1] == ("worker_died", "The gradviz worker process was killed.")
    worker.start()
    worker.die()  # idle
    assert events.names() == ["worker_died"]


def test_a_memory_study_is_asked_for_once(worker, controller):
    assert not controller.memory_asked
    controller.run_check(check())
    controller.measure_memory(memory(layers=3))
    assert controller.memory_asked and [s.op for s in worker.sent] == ["check"]


def test_older_result_files_go_once_a_result_is_shown(worker, controller):
    controller.note_shown(4, "f")
    assert worker.discarded == [4]


def test_an_eps_sweep_goes_after_the_check_and_a_new_check_drops_it(worker, controller, events):
    swept, failed = [], []
    controller.sweep_finished.connect(swept.append)
    controller.sweep_failed.connect(failed.append)
    controller.run_check(check("buggy"))
    controller.run_sweep(sweep(check("buggy"), (0, 1)))
    assert [s.op for s in worker.sent] == ["check"]  # it waits behind the check
    worker.answer()
    sent = worker.sent[-1]
    # the block chosen travels as the sweep's own options (tests/app/test_why_dock.py sends this
    # through the real worker)
    assert sent.op == "sweep" and sent.request.code.source == "buggy" and sent.request.options.block == (0, 1)
    assert sent.request.code.function == "MyFunction"
    assert controller.sweep_running and not controller.busy  # a sweep never disables Run
    worker.answer({"sweep": {"verdict": "x"}})
    assert swept == [{"sweep": {"verdict": "x"}}] and not controller.sweep_running
    controller.run_sweep(sweep(check("buggy")))
    controller.run_check(check("fixed"))  # the sweep of the old code is moot: stopped, not reported
    assert worker.cancels == [worker.sent[-1].id]
    worker.fail("cancelled")
    assert worker.sent[-1].op == "check" and failed == []
    worker.answer()
    assert worker.sent[-1].op == "check"  # the dropped sweep does not come back


def test_the_sweep_of_a_target_names_the_target_and_its_inputs_file(worker, controller):
    target = CheckRequest(code=CodeSource(target="ops.py:Second", inputs_path="/tmp/in.pt"), timeout=30.0)
    controller.run_sweep(sweep(target, (0, 1)))
    (sent,) = worker.sent
    assert sent.request.code.target == "ops.py:Second" and sent.request.code.inputs_path == "/tmp/in.pt"
    assert sent.request.options.block == (0, 1) and sent.request.code.source is None  # the worker imports it


# --- regions of a large block (computed on demand) ---------------------------------------------

REGION = {"output": 0, "input": 0, "row0": 10, "col0": 20, "rows": 32, "cols": 32}


def region_events(controller: RunController) -> list[tuple]:
    log: list[tuple] = []
    for name in ("region_started", "region_progress", "region_finished", "region_failed"):
        getattr(controller, name).connect(lambda *args, name=name: log.append((name, *args)))
    return log


def test_a_region_goes_with_the_checks_code_and_settings_and_reports_progress(worker, controller):
    log = region_events(controller)
    request = check(seed=3)
    controller.run_check(request)
    worker.answer()
    controller.run_region(region(controller.shown.sent_request))
    sent = worker.sent[-1]
    assert sent.op == "region" and sent.request.region == Region(**REGION) and sent.request.settings.seed == 3
    assert (sent.request.code, sent.request.timeout) == (request.code, 30.0)
    worker.report(5, 64)
    answered = worker.answer({"row0": 10})
    assert log == [("region_started", answered), ("region_progress", 5, 64), ("region_finished", answered, {"row0": 10})]


def test_a_region_waits_behind_a_check_and_a_new_check_drops_it(worker, controller):
    log = region_events(controller)
    controller.run_check(check())
    controller.run_region(region(check()))  # the check runs: the region waits
    assert [m.op for m in worker.sent] == ["check"]
    worker.answer()
    assert [m.op for m in worker.sent] == ["check", "region"]
    controller.run_check(check("new code"))  # a new run stops the region in flight
    assert worker.cancels == [worker.sent[-1].id]
    assert log[-1][0] == "region_failed" and "new run" in log[-1][2]["message"]
    worker.fail("cancelled")  # the stopped region's own answer counts no more
    assert [m.op for m in worker.sent] == ["check", "region", "check"]
    assert [e[0] for e in log].count("region_failed") == 1


def test_cancel_stops_a_running_region(worker, controller):
    log = region_events(controller)
    controller.run_region(region(check()))
    controller.cancel_region()
    assert worker.cancels == [worker.sent[-1].id]
    worker.fail("cancelled")
    assert log[-1][0] == "region_failed" and log[-1][2]["kind"] == "cancelled"
    assert not controller.region_running


# --- the job table's rules ---------------------------------------------------------------------


def test_the_rules_are_one_row_per_kind_of_request():
    assert set(RULES) == {"check", "region", "sweep", "memory", "audit"}
    assert min(RULES.values(), key=lambda rule: rule.priority) is RULES["check"]
    assert [kind for kind, rule in RULES.items() if rule.preemptible] == ["memory"] and RULES["memory"].resend
    assert {kind for kind, rule in RULES.items() if rule.dropped_by_check} == {"region", "sweep"}
    assert not RULES["audit"].queues


def test_what_waits_goes_in_priority_order_whatever_the_order_asked():
    """Asked while the worker starts: a memory study, a sweep, a region, then a check. The check
    goes first, then the region, the sweep and the study, one at a time."""
    worker = FakeWorker(ready=False)
    controller = RunController(worker)
    controller.measure_memory(memory())
    controller.run_sweep(sweep(check("a")))
    controller.run_region(region(check("a")))
    controller.run_check(check("b"))  # a new check drops the waiting region and sweep
    assert [job.kind for job in controller.jobs] == ["memory", "check"] and worker.sent == []
    worker.start()
    assert [s.op for s in worker.sent] == ["check"]
    controller.run_sweep(sweep(check("b")))
    controller.run_region(region(check("b")))
    worker.answer()
    assert [s.op for s in worker.sent] == ["check", "region"]
    worker.answer()
    worker.answer()
    assert [s.op for s in worker.sent] == ["check", "region", "sweep", "memory"]
    worker.answer(study_answer())
    assert controller.jobs == [] and not worker.busy


def test_the_latest_ask_of_a_kind_replaces_the_one_waiting(worker, controller):
    log = region_events(controller)
    controller.run_check(check())
    controller.run_region(region(check(), row0=1))
    controller.run_region(region(check(), row0=2))
    controller.run_sweep(sweep(check(), (0, 0)))
    controller.run_sweep(sweep(check(), (0, 1)))
    controller.measure_memory(memory(layers=1))
    controller.measure_memory(memory(layers=2))
    assert log == [("region_failed", 0, {"kind": "cancelled", "message": "Replaced by a newer region."})]
    assert sorted(job.kind for job in controller.jobs if job.state == "waiting") == ["memory", "region", "sweep"]
    for _ in range(4):
        worker.answer(study_answer() if worker.sent[-1].op == "memory" else None)
    requests = [s.request for s in worker.sent[1:]]
    assert requests == [region(check(), row0=2), sweep(check(), (0, 1)), memory(layers=2)]


def test_an_audit_is_refused_while_anything_runs_or_waits_and_goes_with_its_node_files(worker, controller):
    audit = AuditRequest(code=CodeSource(path="/tmp/model.py", function="Net"), node_files=True)
    started, done = [], []
    controller.audit_started.connect(started.append)
    controller.audit_finished.connect(lambda request, payload: done.append(request))
    controller.run_check(check())
    assert controller.run_audit(audit) is False and [s.op for s in worker.sent] == ["check"]
    worker.answer()
    assert controller.run_audit(audit) is True and controller.audit_running
    assert worker.sent[-1].request == audit and started == [worker.sent[-1].id]
    worker.answer()
    assert done == started and not controller.audit_running


def test_a_study_that_finishes_before_its_stop_is_kept_and_not_sent_again(worker, controller, events):
    """Preempted, its resend waits; the study answered anyway: it is shown and the resend goes
    away, but a study the user asked for meanwhile still goes."""
    controller.measure_memory(memory(layers=3))
    controller.run_check(check())
    states = [(job.kind, job.state) for job in controller.jobs]
    assert states == [("memory", "preempted"), ("memory", "waiting"), ("check", "waiting")]
    assert not controller.memory_running and controller.jobs[1].resend_of == worker.sent[0].id
    worker.report(1, 2)  # the stopped study's progress is no news
    worker.answer(study_answer())
    assert [job.kind for job in controller.jobs] == ["check"]  # the resend went with the answer
    worker.answer()
    assert [s.op for s in worker.sent] == ["memory", "check"]
    assert events.names() == ["check_queued", "memory_finished", "check_started", "check_finished"]
    # asked again while the stopped study's answer was still to come: that ask still goes
    controller.measure_memory(memory(layers=3))
    controller.run_check(check())
    controller.measure_memory(memory(layers=5))
    worker.answer(study_answer())
    worker.answer()
    assert worker.sent[-1].request == memory(layers=5)


def test_a_crash_of_a_dropped_job_is_no_news_and_what_waits_goes_to_the_new_worker(worker, controller, events):
    controller.run_sweep(sweep(check()))
    controller.run_check(check("new"))  # drops the sweep in flight; the check waits for its answer
    worker.die()
    assert events.take() == [("check_queued", False)]  # no worker_died: no one waited for the sweep
    worker.start()
    assert worker.sent[-1].request.code.source == "new" and events.take() == [("check_started", worker.sent[-1].id)]

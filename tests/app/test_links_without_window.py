"""RegionLink, Exports and WhyLink built from fakes, without a MainWindow: the
link between the Jacobian panel and the run controller, the export files and the Why? dock's runs,
each tested alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QObject, QSettings, Signal
from PySide6.QtWidgets import QWidget

from gradviz.app.exports import Exports
from gradviz.app.region_link import RegionLink
from gradviz.app.run_controller import RunController
from gradviz.app.state import CurrentResult, SourceDocument
from gradviz.schema.graph import GraphModel, Node
from gradviz.schema.requests import Region
from tests.app.test_run_controller import FakeWorker, check

REGION = Region(output=0, input=0, row0=0, col0=0, rows=4, cols=4)


class FakeRegionPanel(QObject):
    """The Jacobian panel's large-block page: its two signals, and what it was told."""

    region_requested = Signal(object)
    region_cancelled = Signal()
    text_edited = Signal()  # stands for the editor's signal

    def __init__(self) -> None:
        super().__init__()
        self.told: list[tuple] = []

    def set_region_started(self) -> None:
        self.told.append(("started",))

    def set_region_progress(self, done: int, total: int) -> None:
        self.told.append(("progress", done, total))

    def add_region(self, region) -> None:
        self.told.append(("region", region))

    def region_failed(self, message: str) -> None:
        self.told.append(("failed", message))

    def clear_regions(self) -> None:
        self.told.append(("cleared",))


@pytest.fixture
def region_link(qtbot):
    worker, panel, current = FakeWorker(), FakeRegionPanel(), CurrentResult()
    controller = RunController(worker)
    link = RegionLink(panel, controller, current, (panel.text_edited,))
    return link, worker, panel, current


def test_a_region_before_any_result_is_refused_and_nothing_is_sent(region_link):
    _link, worker, panel, _current = region_link
    panel.region_requested.emit(REGION)
    assert worker.sent == [] and panel.told == [("failed", "Run a check first: a region belongs to a check's result.")]


def test_a_region_goes_with_the_code_and_settings_of_the_check_on_screen(region_link):
    link, worker, panel, current = region_link
    link.controller.run_check(check("the checked code", eps=1e-3))
    worker.answer()
    current.result = "a result on screen"  # any result: the link only asks whether there is one
    panel.region_requested.emit(REGION)
    region = worker.sent[-1]
    assert region.op == "region" and region.request.region == REGION
    assert region.request.code.source == "the checked code" and region.request.settings.eps == 1e-3
    assert ("started",) in panel.told


def test_an_unreadable_region_answer_is_a_failure_the_panel_shows(qtbot, region_link):
    link, worker, panel, current = region_link
    link.controller.run_check(check())
    worker.answer()
    current.result = "a result on screen"
    panel.region_requested.emit(REGION)
    with qtbot.waitSignal(link.failed) as failed:
        worker.answer({"no": "files"})
    assert failed.args[0].startswith("Could not read the region's cells") and panel.told[-1][0] == "failed"


def test_an_edit_or_a_new_check_drops_the_regions_and_stops_the_one_in_flight(region_link):
    link, worker, panel, current = region_link
    link.controller.run_check(check())
    worker.answer()
    current.result = "a result on screen"
    panel.region_requested.emit(REGION)
    panel.told.clear()
    panel.text_edited.emit()
    assert panel.told == [("cleared",)] and worker.cancels == [worker.running]
    panel.told.clear()
    worker.fail("cancelled")
    link.controller.run_check(check())
    assert ("cleared",) in panel.told


class FakeFigurePanel:
    """A panel offering one figure; it draws a file with its caption in it."""

    def __init__(self, name: str, drawn: bool = True) -> None:
        self.name, self.drawn = name, drawn

    def figures(self) -> dict[str, dict]:
        return {self.name: {}}

    def export(self, name: str, path: str, *, size, caption: str = "") -> None:
        Path(path).write_text(f"{name} {size} {caption}")

    # what Exports asks the three window panels about whether they have drawn a result
    def current_block(self):
        return object() if self.drawn else None

    def current_large_block(self):
        return None

    def is_stale(self) -> bool:
        return False

    def result(self):
        return object() if self.drawn else None


@pytest.fixture
def exports(qtbot, tmp_path):
    parent = QWidget()
    qtbot.addWidget(parent)
    said: list[str] = []
    document, current = SourceDocument(), CurrentResult()
    current.graph = GraphModel(  # the graph panel has drawn a graph: one leaf
        nodes=[Node(0, "AccumulateGrad", "leaf")],
        edges=np.zeros((0, 2), np.int64),
        edge_slots=np.zeros(0, np.int64),
        positions=np.zeros((1, 2)),
        backward_order=[],
        flows={},
        outputs=[],
    )
    exports = Exports(
        parent,
        settings=QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat),
        current=current,
        document=document,
        jacobians=FakeFigurePanel("jacobians"),
        graph=FakeFigurePanel("graph"),
        memory=FakeFigurePanel("memory", drawn=False),
        say=lambda text, _ms: said.append(text),
    )
    for panel in (exports.jacobians, exports.graph, exports.memory):
        exports.register_figures(panel)
    return exports, said


def test_only_the_figures_drawn_are_written_and_the_status_bar_names_the_rest(exports, tmp_path):
    exports, said = exports
    exports.document.set_path(tmp_path / "model.py")
    written = exports.export_figures(tmp_path, names=("jacobians", "graph", "memory"), formats=("png", "svg"))
    assert sorted(p.name for p in written) == ["model_graph.png", "model_graph.svg", "model_jacobians.png", "model_jacobians.svg"]
    assert said == [f"Exported 4 files to {tmp_path} (nothing to draw yet: memory)"]


def test_unsaved_text_exports_under_a_name_every_file_system_takes(exports, tmp_path):
    """Bug found here: unsaved text (filename "<editor>") gave "<editor>_jacobians.png"; '<' and '>'
    are not allowed in Windows file names."""
    exports, _said = exports
    [written] = exports.export_figures(tmp_path, names=("jacobians",))
    assert written.name == "gradviz_jacobians.png"


def test_files_already_there_are_kept_unless_the_user_agrees(exports, tmp_path, monkeypatch):
    exports, said = exports
    exports.document.set_path(tmp_path / "model.py")
    (tmp_path / "model_graph.png").write_text("the user's own")
    asked: list[list[str]] = []
    monkeypatch.setattr(exports, "confirm_replace", lambda folder, existing: asked.append([p.name for p in existing]) or False)
    assert exports.export_figures(tmp_path, names=("graph",)) == []
    assert asked == [["model_graph.png"]] and (tmp_path / "model_graph.png").read_text() == "the user's own"
    assert said == [f"Nothing exported: 1 file in {tmp_path} kept"]


def test_the_dialogs_start_in_the_folder_used_last(exports, tmp_path):
    exports, _said = exports
    assert exports.last_folder() == str(Path.home())
    exports.remember_folder(tmp_path / "a session.gradviz")
    assert exports.last_folder() == str(tmp_path)


def test_nothing_to_copy_before_a_result(exports):
    exports, said = exports
    assert exports.copy_worst_cells("markdown") == "" and said == ["No result to copy yet: run a check first."]


def test_where_the_function_came_from_in_words(exports, tmp_path):
    exports, _said = exports
    document = exports.document
    assert exports.source_words() == "unsaved editor text"
    document.set_path(tmp_path / "model.py")
    assert exports.source_words() == "model.py"
    document.set_path(tmp_path / "linear.py", builtin="linear")
    assert exports.source_words() == "the built-in example linear.py"
    document.target = ("pkg.mod:Square", None)
    assert exports.source_words() == "pkg.mod:Square"


class FakeBlocks(QObject):
    """The Jacobian panel as the Why? link sees it: the block on screen, and choosing one."""

    block_changed = Signal(int)

    def current_block(self):
        return None

    def set_block(self, index: int) -> None:
        pass


@pytest.fixture
def why_link(qtbot):
    from gradviz.app.runner import Runner
    from gradviz.app.state import RunSettings
    from gradviz.app.why_link import WhyLink

    worker, document, settings = FakeWorker(), SourceDocument(), RunSettings()
    controller = RunController(worker)
    runner = Runner(controller, document, settings, lambda: "def f(x): ...")
    docked, figures = [], []
    link = WhyLink(
        runner=runner, controller=controller, current=CurrentResult(), jacobians=FakeBlocks(), settings=settings,
        add_panel=lambda title, widget: docked.append(title), register_figures=figures.append,
        say=lambda text, ms: None,
    )  # fmt: skip
    qtbot.addWidget(link.panel)
    assert docked == ["Why?"] and len(figures) == 1
    return link, worker, settings


class FakeResult:
    """What on_result reads of a CheckResult that failed and brought no sweep."""

    sweep = None
    passed = False
    precision = None


def test_a_failing_check_gets_its_sweep_of_the_same_request(why_link):
    link, worker, _settings = why_link
    request = link.runner.build_request()
    link.on_result(request, FakeResult())
    [sweep] = worker.sent
    assert sweep.op == "sweep" and sweep.request.code == request.code and link.sweep_in_flight()
    assert sweep.request.settings == request.settings and sweep.request.options.block is None


def test_use_float64_changes_the_run_bar_and_runs(why_link):
    link, worker, settings = why_link
    settings.dtype = "float32"
    link.panel.use_float64_requested.emit()
    assert settings.dtype == "float64" and worker.sent[-1].op == "check"
    assert worker.sent[-1].request.settings.dtype == "float64"

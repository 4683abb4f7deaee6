"""The views subscribe to the state they show, without a window: a result set on CurrentResult
reaches the Jacobian panel, the graph, the banner and the picker, and ShownRun's stale reason
reaches each of them, with no one forwarding. And the settings' change signals come from the
schema's fields, with the Qt types their values need."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from PySide6.QtCore import QObject, Signal

from gradviz.app.panels.graph_panel import GraphPanel
from gradviz.app.panels.jacobian_panel import JacobianPanel
from gradviz.app.panels.picker_panel import PickerPanel
from gradviz.app.panels.run_bar import RunBar
from gradviz.app.panels.verdict_banner import VerdictBanner
from gradviz.app.state import (
    CurrentResult,
    MemorySettings,
    RunSettings,
    RunSnapshot,
    SchemaState,
    ShownRun,
    SourceDocument,
)
from gradviz.schema.graph import GraphModel, Node
from gradviz.schema.settings import GRADCHECK_FLAGS, MemoryOptions, SweepOptions
from tests.app.test_run_controller import check

EDITOR = RunSnapshot(code="x = 1", function=None, settings=(), target=None, title="model.py")


class Editor(QObject):
    """What the window shows now; ``edited`` stands for the editor's text_edited."""

    edited = Signal()

    def __init__(self) -> None:
        super().__init__()
        self.now = EDITOR


@pytest.fixture
def views(qtbot):
    editor, current, document = Editor(), CurrentResult(), SourceDocument()
    shown = ShownRun(lambda: editor.now)
    shown.watch(editor.edited)
    jacobians = JacobianPanel(current=current, shown=shown)
    banner = VerdictBanner(current=current, shown=shown, blocks=jacobians)
    graph = GraphPanel(current=current, shown=shown)
    picker = PickerPanel(document=document, current=current)
    for widget in (jacobians, banner, graph, picker):
        qtbot.addWidget(widget)
    return editor, current, shown, jacobians, banner, graph, picker


def test_a_result_set_on_the_state_reaches_every_view(views, make_check_result):
    _editor, current, _shown, jacobians, banner, graph, picker = views
    result = make_check_result(source=TWO_FUNCTIONS)  # fails: the hints of its block are in the banner
    graph_model = GraphModel(  # the graph panel draws what came with the result: one leaf
        nodes=[Node(0, "AccumulateGrad", "leaf")],
        edges=np.zeros((0, 2), np.int64),
        edge_slots=np.zeros(0, np.int64),
        positions=np.zeros((1, 2)),
        backward_order=[],
        flows={},
        outputs=[],
    )
    current.set(result, request=3, graph=graph_model)
    assert jacobians.current_block() is result.blocks[0]
    assert banner.state == "failed" and "Hint" in banner.plain_text()
    assert all(hint in banner.plain_text() for hint in result.blocks[0].hints) and result.blocks[0].hints
    assert graph.summary.text() != "" and graph._graph is graph_model
    assert [picker.functions.itemText(k) for k in range(picker.functions.count())] == result.functions
    assert picker.functions.currentText() == result.function


def test_the_stale_reason_reaches_every_view_that_marks_it(views, make_check_result):
    editor, current, shown, jacobians, banner, graph, _picker = views
    shown.note_sent(3, check())
    current.set(make_check_result("linear"), request=3)
    shown.note_shown(3, "Linear")
    assert not jacobians.is_stale() and banner.stale_text() == ""
    editor.now = dataclasses.replace(EDITOR, code="x = 2")
    editor.edited.emit()  # the window says what it shows changed; ShownRun says why to each view
    reason = shown.stale_reason()
    assert "the code has changed" in reason
    assert jacobians.is_stale() and banner.stale_text() == reason and graph.stale_label.isVisibleTo(graph)
    editor.now = EDITOR
    editor.edited.emit()
    assert not jacobians.is_stale() and banner.stale_text() == "" and not graph.stale_label.isVisibleTo(graph)


def test_the_picker_highlights_the_document_it_follows(qtbot, tmp_path):
    document = SourceDocument()
    picker = PickerPanel(document=document)
    qtbot.addWidget(picker)
    document.set_path(tmp_path / "linear.py", builtin="linear")
    item = picker.current_document()
    assert item is not None and item.text(0) == "linear"


# --- settings signals, generated from the schema ------------------------------------------------


def signatures(state: SchemaState) -> dict[str, str]:
    meta = state.metaObject()
    found = (meta.method(k) for k in range(meta.methodOffset(), meta.methodCount()))
    return {bytes(m.name()).decode(): bytes(m.methodSignature()).decode() for m in found}


def test_each_field_of_the_schema_has_its_signal_and_property_with_the_qt_type_its_values_need(qtbot):
    memory = MemorySettings()
    assert MemorySettings.FIELDS == tuple(f.name for f in dataclasses.fields(MemoryOptions))
    assert signatures(memory) == {
        "layers_changed": "layers_changed(PyObject)",
        "shape_changed": "shape_changed(PyObject)",  # a tuple
        "out_channels_changed": "out_channels_changed(PyObject)",
        "kernel_changed": "kernel_changed(PyObject)",
        "device_changed": "device_changed(QString)",
        "dtype_changed": "dtype_changed(QString)",
    }
    run = signatures(RunSettings())
    assert set(run) == {f"{name}_changed" for name in RunSettings.FIELDS}
    assert run["eps_changed"] == "eps_changed(double)" and run["fast_mode_changed"] == "fast_mode_changed(bool)"
    assert run["seed_changed"] == "seed_changed(PyObject)" and run["timeout_changed"] == "timeout_changed(PyObject)"
    settings = RunSettings()
    with qtbot.waitSignal(settings.seed_changed) as seed:
        settings.seed = 2**64 - 1  # torch's largest seed: more than a Qt int holds
    assert seed.args == [2**64 - 1] and settings.seed == 2**64 - 1


def test_a_state_of_any_schema_gets_its_signals_from_the_fields_alone(qtbot):
    class SweepState(SchemaState):
        schema = SweepOptions

    state = SweepState()
    assert SweepState.FIELDS == tuple(f.name for f in dataclasses.fields(SweepOptions))
    seen = []
    state.changed.connect(seen.append)
    with qtbot.waitSignal(state.worst_cells_changed) as changed:
        state.worst_cells = 5
    assert changed.args == [5] and state.worst_cells == 5 and seen == ["worst_cells"]
    assert SweepState.__dict__["worst_cells_changed"] is not RunSettings.__dict__.get("worst_cells_changed")


def test_the_run_bar_binds_each_of_its_settings_both_ways_from_one_mapping(qtbot):
    settings = RunSettings()
    bar = RunBar(settings)
    qtbot.addWidget(bar)
    assert set(bar.fields) == set(RunSettings.FIELDS) - set(GRADCHECK_FLAGS)  # those are the options dialog's
    values = {"device": "cpu", "dtype": "float32", "eps": 1e-3, "atol": 1e-4, "rtol": 0.5, "seed": 11, "timeout": 9}
    for name, value in values.items():
        settings.set(name, value)
        widget = bar.fields[name]
        shown = widget.currentData() if hasattr(widget, "currentData") else widget.value()
        assert shown == value, name
    for name, widget in bar.fields.items():
        if name in ("device", "dtype"):
            continue
        with qtbot.waitSignal(getattr(settings, f"{name}_changed")):
            widget.setValue(widget.value() * 2 if name != "timeout" else 20)
        assert settings.get(name) == widget.value()
    bar.dtype.setCurrentIndex(bar.dtype.findData("float16"))
    assert settings.dtype == "float16" and settings.check_settings().dtype == "float16"
    assert settings.typed == {"eps", "atol", "rtol"}  # edited in the bar: the user's own, they stay
    assert settings.eps == bar.fields["eps"].value()


TWO_FUNCTIONS = '''
import torch


class Doubled(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return 2 * x

    @staticmethod
    def backward(ctx, grad):
        return 3 * grad  # wrong: the hints say by how much

    @staticmethod
    def example_inputs():
        return (torch.randn(3, dtype=torch.float64, requires_grad=True),)


class Other(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad

    @staticmethod
    def example_inputs():
        return (torch.randn(2, dtype=torch.float64, requires_grad=True),)
'''

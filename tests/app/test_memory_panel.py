"""The memory panel renders real payloads from the worker's "memory" handler (run in this test
process, which may import torch; the GUI process never does)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage

from gradviz.app.memory_display import MemoryResult, read_memory
from gradviz.app.panels.memory_panel import CPU_NOTE, EMPTY_TEXT, MemoryPanel
from gradviz.app.state import MemorySettings
from gradviz.schema.requests import MemoryRequest
from gradviz.schema.settings import MemoryOptions
from gradviz.schema.units import format_bytes
from gradviz.worker.handlers import handle_memory
from tests.paths import ARTIFACTS


@pytest.fixture(scope="module")
def cpu_payload() -> dict:
    """A 3-layer study on a small input: the real worker handler, the real measurements."""
    return handle_memory(MemoryRequest(MemoryOptions(layers=3, shape=(4, 3, 20, 20), out_channels=8)), None)


def typed(payload: dict) -> MemoryResult:
    """The worker's dict as the window hands it to the panel: read once by ``read_memory``."""
    result, error = read_memory(payload)
    assert error is None and result is not None
    return result


@pytest.fixture
def cuda_payload(cpu_payload) -> dict:
    """The CPU payload dressed as a CUDA one: peaks and end-of-forward figures added."""
    payload = copy.deepcopy(cpu_payload)
    study = payload["study"]
    study["device"] = "cuda"
    for k, name in enumerate(("unfused", "fused")):
        v = study["variants"][name]
        v["end_of_forward_bytes"] = v["saved_bytes"] + 4096 * (k + 1)
        v["peak_bytes"] = 2 * v["saved_bytes"] + 8192 * (k + 1)
    for row in payload["sweep"]:
        row["unfused_peak_bytes"] = 2 * row["unfused_saved_bytes"]
        row["fused_peak_bytes"] = 2 * row["fused_saved_bytes"]
    return payload


@pytest.fixture
def panel(qtbot):
    widget = MemoryPanel()
    qtbot.addWidget(widget)
    widget.resize(1500, 720)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def test_the_panel_keeps_the_typed_result_it_was_given(panel, cpu_payload):
    result = typed(cpu_payload)
    panel.set_result(result)
    assert panel.result() is result
    assert panel.result().study.variants["fused"].saved_bytes == cpu_payload["study"]["variants"]["fused"]["saved_bytes"]


def test_empty_panel_says_what_to_do(panel):
    assert panel.result() is None
    assert panel.message_text() == EMPTY_TEXT
    assert panel.sweep_curves == {}


def test_bar_heights_are_the_payload_bytes_in_the_displayed_unit(panel, cpu_payload):
    panel.set_result(typed(cpu_payload))
    variants = cpu_payload["study"]["variants"]
    name, size = panel.unit()
    taller = max(
        variants["unfused"]["saved_bytes"],
        variants["fused"]["saved_bytes"] + variants["fused"]["ctx_attribute_bytes"],
    )
    assert 1 <= taller / size < 1024, f"{taller} B shown in {name}"
    assert panel.bar_items["unfused"].opts["height"][0] == pytest.approx(
        variants["unfused"]["saved_bytes"] / size
    )
    assert panel.bar_items["fused"].opts["height"][0] == pytest.approx(
        variants["fused"]["saved_bytes"] / size
    )
    ctx = panel.bar_items["fused_ctx"]
    assert ctx.opts["y0"][0] == pytest.approx(
        variants["fused"]["saved_bytes"] / size
    )  # stacked on the fused bar
    assert ctx.opts["height"][0] == pytest.approx(variants["fused"]["ctx_attribute_bytes"] / size)
    assert variants["fused"]["ctx_attribute_bytes"] > 0  # the fused Function keeps its statistics on ctx
    assert name in panel.bar_item.getAxis("left").labelText
    assert name in panel.sweep_item.getAxis("left").labelText  # one unit for both plots


def test_headline_shows_the_difference_from_the_payload(panel, cpu_payload):
    panel.set_result(typed(cpu_payload))
    study = cpu_payload["study"]
    unfused = study["variants"]["unfused"]["saved_bytes"]
    difference = unfused - study["variants"]["fused"]["saved_bytes"]
    assert difference == study["saved_difference_bytes"] > 0
    text = panel.headline_text()
    percent = 100 * difference / unfused
    assert f"fused saves {format_bytes(difference, panel.unit(), three_figures=True)} ({percent:.1f} %)" in text
    assert f"{difference:,} B measured" in text
    assert f"{study['formula_bytes']:,} B by formula" in text
    assert "difference = formula ✓" in text
    assert "outputs match ✓" in text and "gradients match ✓" in text


def test_headline_marks_a_formula_mismatch_and_wrong_gradients(panel, cpu_payload):
    payload = copy.deepcopy(cpu_payload)
    payload["study"]["formula_bytes"] += 64
    payload["study"]["grads_match"] = False
    panel.set_result(typed(payload))
    text = panel.headline_text()
    assert "difference = formula ✗" in text
    assert "gradients match ✗" in text and "outputs match ✓" in text


def test_sweep_has_one_curve_per_variant_and_batch(panel, cpu_payload):
    panel.set_result(typed(cpu_payload))
    sweep = cpu_payload["sweep"]
    batches = sorted({row["batch"] for row in sweep})
    assert batches == [1, 4, 16]  # the worker sweeps 1, N and 4N
    assert set(panel.sweep_curves) == {(v, b) for v in ("unfused", "fused") for b in batches}
    _, size = panel.unit()
    for (variant, batch), curve in panel.sweep_curves.items():
        x, y = curve.getData()
        assert list(x) == list(range(1, 9))
        expected = [
            row[f"{variant}_saved_bytes"] / size
            for row in sorted(sweep, key=lambda r: r["layers"])
            if row["batch"] == batch
        ]
        np.testing.assert_allclose(y, expected)
        style = curve.opts["pen"].style()
        assert style == (Qt.PenStyle.SolidLine if variant == "unfused" else Qt.PenStyle.DashLine)
    labels = [label.text for _, label in panel.sweep_legend.items]
    assert labels == [f"{v}, N={b}" for v in ("unfused", "fused") for b in batches] + ["the bars"]
    # the ringed points are the bars: the sweep's row for the study's layers and batch
    study = cpu_payload["study"]
    x, y = panel.measured_points.getData()
    assert list(x) == [study["layers"]] * 2
    np.testing.assert_allclose(y, [study["variants"][v]["saved_bytes"] / size for v in ("unfused", "fused")])


def test_measure_emits_the_options_typed_in(qtbot, panel):
    panel.set_devices(["cpu", "cuda"])
    panel.layers_spin.setValue(5)
    for box, value in zip(panel.shape_spins, (2, 1, 40, 36)):
        box.setValue(value)
    panel.out_channels_spin.clear()
    qtbot.keyClicks(panel.out_channels_spin, "32")
    panel.kernel_spin.setValue(5)
    panel.dtype_combo.setCurrentText("float64")
    panel.device_combo.setCurrentText("cuda")
    expected = {
        "layers": 5,
        "shape": [2, 1, 40, 36],
        "out_channels": 32,
        "kernel": 5,
        "device": "cuda",
        "dtype": "float64",
    }
    with qtbot.waitSignal(panel.measure_requested, timeout=1000) as blocker:
        qtbot.mouseClick(panel.measure_button, Qt.MouseButton.LeftButton)
    assert blocker.args == [expected]
    assert panel.options() == expected
    # the options are what the worker accepts
    assert handle_memory(MemoryRequest(MemoryOptions.from_dict({**expected, "device": "cpu"})), None)["study"]["layers"] == 5


def test_changing_controls_does_not_ask_for_a_measurement(qtbot, panel):
    with qtbot.assertNotEmitted(panel.measure_requested):
        panel.layers_spin.setValue(7)
        panel.batch_spin.setValue(3)
        panel.dtype_combo.setCurrentText("float64")


def test_set_devices_keeps_the_current_device(panel):
    panel.set_devices(["cpu", "cuda"])
    panel.device_combo.setCurrentText("cuda")
    panel.set_devices(["cpu", "cuda", "cuda:1"])
    assert panel.options()["device"] == "cuda"
    panel.set_devices(["cpu"])
    assert panel.options()["device"] == "cpu"


def test_set_error_shows_the_message_in_place_of_the_plots(qtbot, panel, cpu_payload):
    panel.set_result(typed(cpu_payload))
    message = "The input is too small: 3 layers of 3x3 kernels need H and W of at least 7; got 4."
    panel.set_error(message)
    qtbot.waitUntil(lambda: panel.message.isVisible())
    assert panel.message_text() == message
    assert not panel.plots_area.isVisible()
    assert panel.sweep_curves == {}
    panel.set_result(typed(cpu_payload))  # the next result brings the plots back
    qtbot.waitUntil(lambda: panel.plots_area.isVisible())
    assert panel.message_text() == ""


def test_set_result_none_clears(panel, cpu_payload):
    panel.set_result(typed(cpu_payload))
    panel.set_result(None)
    assert panel.result() is None
    assert panel.sweep_curves == {}
    assert panel.sweep_legend.items == []
    assert all(item.opts["height"][0] == 0 for item in panel.bar_items.values())
    assert panel.headline.text() == ""
    assert panel.message_text() == EMPTY_TEXT


def test_cpu_result_notes_where_peaks_come_from_only_where_cuda_exists(qtbot, panel, cpu_payload):
    panel.set_devices(["cpu"])
    panel.set_result(typed(cpu_payload))
    qtbot.waitUntil(lambda: panel.message_text() == "")
    assert not panel.cpu_note.isVisible()  # no CUDA sentence on a machine without CUDA
    panel.set_devices(["cpu", "cuda"])
    qtbot.waitUntil(lambda: panel.cpu_note.isVisible())
    assert panel.cpu_note.text() == CPU_NOTE
    assert not panel.peak_table.isVisible()


def test_measuring_shows_progress_and_disables_measure(qtbot, panel, cpu_payload):
    panel.set_measuring(True)
    assert not panel.measure_button.isEnabled() and panel.progress.isVisible()
    assert panel.progress.maximum() == 0  # busy until the first report
    panel.set_progress(2, 9)
    assert (panel.progress.value(), panel.progress.maximum()) == (2, 9)
    assert panel.progress.text() == "2 / 9 stacks"
    assert panel.is_measuring()
    panel.set_measuring(False, "Stopped for the run; it measures again after it.")
    assert panel.measure_button.isEnabled() and not panel.progress.isVisible()
    assert panel.status.text().startswith("Stopped for the run")
    panel.set_measuring(True)
    panel.set_result(typed(cpu_payload))  # the window ends the measurement, then shows the result
    panel.set_measuring(False)
    assert panel.measure_button.isEnabled() and not panel.is_measuring()


def test_cuda_result_shows_the_peak_table(qtbot, panel, cuda_payload):
    panel.set_result(typed(cuda_payload))
    qtbot.waitUntil(lambda: panel.peak_table.isVisible())
    assert not panel.cpu_note.isVisible()
    table = panel.peak_table
    header = [table.horizontalHeaderItem(c).text() for c in range(table.columnCount())]
    assert header == ["saved", "end of forward", "peak"]
    for row, name in enumerate(("unfused", "fused")):
        v = cuda_payload["study"]["variants"][name]
        assert table.verticalHeaderItem(row).text() == name
        peak = table.item(row, header.index("peak")).text()
        end = table.item(row, header.index("end of forward")).text()
        assert peak == format_bytes(v["peak_bytes"])
        assert end == format_bytes(v["end_of_forward_bytes"])
    ARTIFACTS.mkdir(exist_ok=True)
    assert panel.grab().save(str(ARTIFACTS / "memory_panel_cuda.png"), "PNG")
    panel.set_result(None)  # and clearing hides the table again
    assert not panel.peak_table.isVisible()


def test_export_png_writes_the_plots(panel, cpu_payload, tmp_path):
    panel.set_result(typed(cpu_payload))
    path = tmp_path / "memory.png"
    panel.export_png(str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = QImage(str(path))
    assert image.width() >= panel.plots_area.width() > 0
    assert image.height() >= panel.plots_area.height() > 0


def test_screenshot_of_a_three_layer_result(qtbot, panel):
    payload = handle_memory(MemoryRequest(MemoryOptions(layers=3)), None)
    panel.set_result(typed(payload))
    qtbot.waitUntil(lambda: panel.plots_area.isVisible())
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / "memory_panel.png"
    assert panel.grab().save(str(path), "PNG")
    assert QImage(str(path)).width() == panel.width()


def test_the_controls_start_at_the_schema_defaults(panel):
    defaults = MemoryOptions()
    assert panel.state.options() == defaults
    assert panel.layers_spin.value() == defaults.layers and panel.kernel_spin.value() == defaults.kernel
    assert tuple(box.value() for box in panel.shape_spins) == defaults.shape
    assert panel.dtype_combo.currentText() == defaults.dtype and panel.device_combo.currentText() == "cpu"


def test_state_to_controls(qtbot):
    state = MemorySettings()
    panel = MemoryPanel(state)
    qtbot.addWidget(panel)
    panel.set_devices(["cpu", "cuda"])
    state.update(
        {
            "layers": 6,
            "shape": [2, 1, 40, 36],
            "out_channels": 4,
            "kernel": 5,
            "dtype": "float64",
            "device": "cuda",
        }
    )
    assert (
        panel.layers_spin.value() == 6
        and panel.out_channels_spin.value() == 4
        and panel.kernel_spin.value() == 5
    )
    assert [box.value() for box in panel.shape_spins] == [2, 1, 40, 36]
    assert panel.dtype_combo.currentText() == "float64" and panel.device_combo.currentText() == "cuda"


def test_controls_to_state_one_signal_each(qtbot, panel):
    seen = []
    for name in MemorySettings.FIELDS:
        getattr(panel.state, f"{name}_changed").connect(lambda value, name=name: seen.append((name, value)))
    panel.layers_spin.setValue(4)
    panel.height_spin.setValue(28)
    panel.dtype_combo.setCurrentText("float64")
    n, c, _, w = MemoryOptions().shape
    assert seen == [("layers", 4), ("shape", (n, c, 28, w)), ("dtype", "float64")]
    assert panel.state.layers == 4 and panel.options()["shape"] == [n, c, 28, w]


def test_a_value_the_controls_cannot_show_is_clamped_and_written_back(panel):
    panel.state.update({"layers": 2**40, "shape": [1, 3, 5000, 32]})  # valid options, beyond the spin boxes
    assert panel.state.layers == panel.layers_spin.value() == panel.layers_spin.maximum()
    assert panel.state.shape == (1, 3, panel.height_spin.maximum(), 32)
    panel.state.device = "cuda"  # not offered here: what is measured is what the panel shows
    assert panel.state.device == panel.device_combo.currentText() == "cpu"


def test_saved_tensors_tab_lists_what_each_variant_keeps(qtbot, panel, cpu_payload):
    """The Saved tensors tab says why, one row per saved tensor (from the worker's real payload)."""
    from gradviz.app.panels.memory_panel import TENSORS_TAB
    from gradviz.schema.memory import SavedTensor, tensor_rows

    result = typed(cpu_payload)
    panel.set_result(result)
    variants = cpu_payload["study"]["variants"]
    counts = f"{variants['unfused']['count']} vs {variants['fused']['count']}"
    assert panel.views.tabText(panel.views.indexOf(panel.tensors)) == f"{TENSORS_TAB} ({counts})"
    panel.views.setCurrentWidget(panel.tensors)
    qtbot.waitUntil(lambda: panel.tensors.tree.isVisible())
    for name in ("unfused", "fused"):
        assert panel.tensors.rows(name) == tensor_rows(result.study.variants[name])
        tensors = [SavedTensor.from_dict(t) for t in variants[name]["tensors"]]
        assert sum(t.bytes for t in tensors if not t.shared) == variants[name]["saved_bytes"]
        assert panel.tensors.title(name).startswith(
            f"{name} ("
        ) and f"{variants[name]['count']} tensors" in panel.tensors.title(name)
    # the reason, said in one line: unfused batch norms keep what the fused Function does not
    why = panel.tensors.why.text()
    for op in ("ConvolutionBackward0", "NativeBatchNormBackward0", "FusedConvBN2DFunctionBackward"):
        assert op in why
    # every row is on screen with its text whole: the columns fit their contents
    tree = panel.tensors.tree
    first = tree.topLevelItem(0).child(0)
    for column in range(tree.columnCount()):
        needed = tree.fontMetrics().horizontalAdvance(first.text(column))
        assert tree.columnWidth(column) >= needed
    panel.set_result(None)
    assert panel.tensors.rows("unfused") == [] and panel.views.tabText(1) == TENSORS_TAB


def test_a_shared_storage_row_says_so_instead_of_charging_again(qtbot, panel, cpu_payload):
    payload = copy.deepcopy(cpu_payload)
    tensors = payload["study"]["variants"]["unfused"]["tensors"]
    tensors.append(dict(tensors[0], shared=True, name="view of x (the input)"))
    panel.set_result(typed(payload))
    last = panel.tensors.rows("unfused")[-1]
    assert last[0] == "view of x (the input)" and last[1].startswith("shared (storage 0")

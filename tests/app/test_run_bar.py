"""The run bar with its state, both ways: change the state and the bar shows it; drive the bar's
widgets and the state changes."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSpinBox

from gradviz.app.panels.run_bar import RunBar
from gradviz.app.state import RunSettings
from gradviz.schema.settings import dtype_defaults
from gradviz.schema.time_left import (
    BLOCK_UNIT,
    CHECK_UNIT,
    SHORT_UNITS,
    count_text,
    finishing_text,
    time_left_text,
)

DEVICES = [
    {"name": "cpu", "label": "CPU", "available": True, "reason": ""},
    {"name": "cuda", "label": "CUDA", "available": False, "reason": "torch sees no CUDA device"},
]


@pytest.fixture
def settings():
    return RunSettings()


@pytest.fixture
def bar(qtbot, settings):
    widget = RunBar(settings)
    qtbot.addWidget(widget)
    widget.set_devices(DEVICES)
    return widget


def test_the_bar_starts_with_the_state_s_values(qtbot):
    settings = RunSettings()
    settings.update({"dtype": "float32", "eps": 1e-3, "seed": 9, "timeout": 30})
    bar = RunBar(settings)
    qtbot.addWidget(bar)
    assert bar.dtype.currentText() == "float32"
    assert bar.tolerance["eps"].value() == 1e-3 and bar.tolerance["eps"].text() == "0.001"
    assert bar.seed.value() == 9 and bar.timeout.value() == 30
    assert bar.device.currentData() == "cpu"


def test_state_to_widgets(bar, settings):
    settings.dtype = "float32"
    settings.eps, settings.atol, settings.rtol = 1e-4, 1e-7, 0.25
    settings.seed = 123
    settings.timeout = 0
    settings.device = "cuda"
    assert bar.dtype.currentText() == "float32"
    assert [bar.tolerance[n].value() for n in ("eps", "atol", "rtol")] == [1e-4, 1e-7, 0.25]
    assert bar.seed.value() == 123
    assert bar.timeout.value() == 0 and bar.timeout.text() == "none"
    assert bar.device.currentData() == "cuda"


def test_widgets_to_state(qtbot, bar, settings):
    with qtbot.waitSignal(settings.dtype_changed) as blocker:
        bar.dtype.setCurrentText("float32")
    assert blocker.args == ["float32"] and settings.dtype == "float32"
    box = bar.tolerance["atol"]
    box.clear()
    qtbot.keyClicks(box, "1e-7")
    with qtbot.waitSignal(settings.atol_changed) as blocker:
        qtbot.keyClick(box, Qt.Key.Key_Return)  # no keyboard tracking: the value is taken on Enter
    assert blocker.args == [1e-7] and settings.atol == 1e-7
    with qtbot.waitSignal(settings.rtol_changed):
        bar.tolerance["rtol"].stepBy(1)  # arrows step by decades
    assert settings.rtol == pytest.approx(10 * dtype_defaults("float32").rtol)  # float32's rtol, one decade up
    bar.seed.setValue(42)
    bar.timeout.setValue(5)
    assert (settings.seed, settings.timeout) == (42, 5)
    bar.device.setCurrentIndex(bar.device.findData("cuda"))
    assert settings.device == "cuda"
    assert settings.check_settings().dtype == "float32"


def test_one_change_is_one_signal(qtbot, bar, settings):
    """The bar updates its widgets with their signals blocked: no echo back into the state."""
    seen = []
    for name in RunSettings.FIELDS:
        getattr(settings, f"{name}_changed").connect(lambda value, name=name: seen.append(name))
    settings.eps = 1e-5 * 3
    bar.seed.setValue(5)
    assert seen == ["eps", "seed"]


def test_a_value_the_bar_cannot_show_is_clamped_and_written_back(bar, settings):
    settings.seed = 2**40  # a valid torch seed, beyond a spin box's int
    assert bar.seed.value() == bar.seed.maximum() == settings.seed
    settings.timeout = 10**7
    assert settings.timeout == bar.timeout.value() == bar.timeout.maximum()
    settings.eps = 5.0
    assert settings.eps == bar.tolerance["eps"].value() == 1.0


def test_a_device_no_longer_offered_falls_back_to_cpu(bar, settings):
    settings.device = "cuda"
    bar.set_devices(DEVICES[:1])
    assert settings.device == "cpu" and bar.device.currentData() == "cpu"
    settings.device = "cuda:3"  # not offered: the bar shows cpu, and so runs cpu
    assert settings.device == "cpu"


def test_unavailable_cuda_is_listed_disabled_with_the_reason(bar):
    k = bar.device.findData("cuda")
    assert not bar.device.model().item(k).isEnabled()
    assert "no CUDA" in bar.device.itemData(k, Qt.ItemDataRole.ToolTipRole)


def test_number_fields_show_the_value_they_hold_whole(qtbot):
    """0.00316 shows as 0.00316 (not cut to "0.0031"), 1e-7 as 1e-7, in a toolbar at 1280x720."""
    from PySide6.QtWidgets import QMainWindow

    settings = RunSettings()
    window = QMainWindow()
    qtbot.addWidget(window)
    bar = RunBar(settings)
    window.addToolBar(bar)
    window.resize(1280, 720)
    window.show()
    qtbot.waitExposed(window)
    for value, text in ((0.00316, "0.00316"), (1e-7, "1e-7"), (2.5e-12, "2.5e-12"), (0.1234567, "0.1234567"), (3e-3, "0.003")):
        for name in ("eps", "atol"):
            box = bar.tolerance[name]
            settings.set(name, value)
            assert box.text() == text and float(box.text()) == value == box.value()
            edit = box.lineEdit()
            qtbot.waitUntil(lambda edit=edit: edit.width() >= edit.fontMetrics().horizontalAdvance(edit.text()) + 2)


def test_progress_shows_the_time_left_from_the_rate_since_the_first_report(bar):
    """The worker's start-up before the first report is not counted: 200 per second since it,
    700 left: 3.5 s (counted from Run, 300 in 4 s, it would read ~9 s)."""
    bar.set_running(True)
    bar.set_progress(100, 1000, elapsed=3.0)
    assert bar.progress.format() == f"100 / 1,000 {SHORT_UNITS[CHECK_UNIT]}" and bar.time_left.text() == ""
    bar.set_progress(300, 1000, elapsed=4.0)
    assert bar.time_left.text() == time_left_text(3.5) == "~4 s left"
    assert bar.cancel_button.isEnabled()
    bar.set_running(False, "done")
    assert bar.time_left.text() == ""


def test_after_the_last_unit_the_bar_says_it_is_finishing_and_counts_the_seconds(qtbot, bar):
    """The count stood at 1,000 / 1,000 while the check compared and wrote its results: it says
    "finishing… N s" instead, the seconds moving, until the result comes."""
    bar.set_running(True)
    bar.set_unit(BLOCK_UNIT)  # what a fast-mode check's messages count
    bar.set_progress(1, 2)
    assert bar.progress.format() == f"1 / 2 {SHORT_UNITS[BLOCK_UNIT]}"
    assert bar.progress.toolTip() == f"1 of 2 {BLOCK_UNIT} computed"
    for text in (count_text(123_456, 234_567), finishing_text(1234)):  # a check's count, unit and all, fits
        assert bar.progress.fontMetrics().horizontalAdvance(text) + 16 <= bar.progress.width()
    bar.set_progress(2, 2)
    assert bar.progress.format() == finishing_text(0)
    qtbot.waitUntil(lambda: bar.progress.format() == finishing_text(1), timeout=3000)
    bar.set_progress_text("loading result…")
    assert bar.progress.format() == "loading result…"
    bar.set_running(False, "done")
    assert bar.progress.format() == "done"


@pytest.mark.parametrize("value", [0, 2**31 - 1])
def test_the_seed_box_is_as_wide_as_its_seed(qtbot, bar, settings, value):
    bar.resize(1900, bar.sizeHint().height())
    bar.show()
    qtbot.waitExposed(bar)
    settings.seed = value
    box = bar.seed
    needed = box.fontMetrics().horizontalAdvance(box.text())
    qtbot.waitUntil(lambda: box.lineEdit().width() >= needed)  # the whole seed shows
    plain = QSpinBox()  # Qt's own size: room for the range's longest seed, whatever is shown
    plain.setRange(box.minimum(), box.maximum())
    plain.setFont(box.font())
    if value == 0:
        assert box.width() < plain.sizeHint().width() - 20
    else:
        assert box.width() >= plain.sizeHint().width() - 4

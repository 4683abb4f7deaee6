"""gradcheck's options in the window: the options dialog sends them with the
run, the verdict shown is gradcheck's with the same options, a combination gradcheck refuses shows
its sentence, the options survive a relaunch, and the forward-mode Jacobian has its switch.

The oracle is torch.autograd.gradcheck, called here with the same options; nothing is typed in."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QWidget

from gradviz.app.panels.check_options import OPTIONS, CheckOptionsDialog
from gradviz.app.panels.forward_view import FORWARD, FORWARD_TITLES
from gradviz.app.panels.heatmap_plots import TITLES
from gradviz.app.panels.jacobian_panel import JacobianPanel
from gradviz.app.state import RunSettings
from gradviz.core.forward_jacobian import BATCHED_FORWARD_GRAD
from gradviz.schema.errors import SettingsError
from gradviz.schema.report import cell_readout, verdict_line
from gradviz.schema.settings import CheckSettings
from tests.app import jvp_functions
from tests.core import option_functions as fns
from tests.paths import ARTIFACTS
from tests.real_world import oracle

RUN_TIMEOUT = 60_000
OPTION_SOURCE = Path(fns.__file__).read_text(encoding="utf-8")
JVP_SOURCE = Path(jvp_functions.__file__).read_text(encoding="utf-8")
SHOTS = Path("/work/notes/shots")
NAMES = [name for name, *_ in OPTIONS]
CLIENT_720 = (1280, 701)  # a maximized window's client area on a 1280x720 screen (test_jacobian_view)


def gradcheck_passes(fn, module=fns, **options) -> bool:
    """PyTorch's verdict on ``fn`` with these options, on the inputs the window's worker makes."""
    (x,) = module.example_inputs(torch.device("cpu"), torch.float64)
    return oracle.gradcheck_passes(fn.apply, (x,), **options)


def refusal(**options) -> str | None:
    """CheckSettings.validate's sentence for these options (None: accepted)."""
    try:
        CheckSettings(**options).validate()
    except SettingsError as exc:
        return exc.message
    return None


def record_requests(window, monkeypatch) -> list:
    """The typed requests the window sends to the worker from now on."""
    sent: list = []
    submit = window.worker.submit

    def recording(request):
        sent.append(request)
        return submit(request)

    monkeypatch.setattr(window.worker, "submit", recording)
    return sent


def open_options(qtbot, window) -> CheckOptionsDialog:
    """Run → gradcheck options…, from the keyboard."""
    qtbot.keyClick(window, Qt.Key.Key_G, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    dialog = window.run_bar.options_button.dialog
    assert dialog is not None
    qtbot.waitExposed(dialog)
    return dialog


def run_and_wait(qtbot, window) -> None:
    with qtbot.waitSignal(window.result_shown, timeout=RUN_TIMEOUT):
        window.run()


def show_function(window, name: str) -> None:
    window.source.set_source(OPTION_SOURCE, None, function=name)


def save_shot(widget, name: str, qtbot=None) -> None:
    """A PNG of ``widget`` in the notes' shots and the test artifacts; a window at 1280x720's
    client area (``qtbot`` given) first."""
    if qtbot is not None:
        widget.resize(*CLIENT_720)
        qtbot.waitUntil(lambda: (widget.width(), widget.height()) == CLIENT_720)
        seen: list = []

        def settled() -> bool:  # the docks' geometry as at the last two polls: deferred relayouts done
            seen.append(tuple(c.geometry().getRect() for c in widget.findChildren(QWidget) if c.isVisible()))
            return len(seen) > 2 and seen[-1] == seen[-2] == seen[-3]

        qtbot.waitUntil(settled)
    for folder in (SHOTS, ARTIFACTS):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            widget.grab().save(str(folder / f"win-{name}.png"))
        except OSError:
            pass


# --- the options dialog and the run settings, without a worker ------------------------------------


def test_each_box_sets_its_option_and_follows_the_settings(qtbot):
    settings = RunSettings()
    dialog = CheckOptionsDialog(settings)
    qtbot.addWidget(dialog)
    boxes = dialog.options.boxes
    assert set(boxes) == set(CheckSettings.__dataclass_fields__) & set(NAMES) == set(NAMES)
    defaults = CheckSettings()
    assert all(boxes[n].isChecked() == getattr(defaults, n) for n in NAMES)  # gradcheck's defaults
    boxes["fast_mode"].click()
    assert settings.fast_mode is True and settings.check_settings().fast_mode is True
    settings.check_batched_grad = True  # state → box
    assert boxes["check_batched_grad"].isChecked()


def test_a_combination_gradcheck_refuses_shows_its_sentence_and_changes_nothing(qtbot):
    settings = RunSettings()
    dialog = CheckOptionsDialog(settings)
    qtbot.addWidget(dialog)
    dialog.show()
    options = dialog.options
    before = settings.check_settings()
    options.boxes["check_backward_ad"].click()  # backward off with forward off: gradcheck refuses it
    said = refusal(check_backward_ad=False)
    assert said and options.message.isVisible() and options.message.text() == said
    assert options.boxes["check_backward_ad"].isChecked() and settings.check_settings() == before
    options.boxes["fast_mode"].click()  # an accepted change clears the sentence
    assert not options.message.isVisible() and settings.fast_mode


def test_options_restored_together_in_any_order():
    """What a session, a target's settings or the saved settings hold is a valid set, whatever
    order it comes in and whatever the settings held before; INI text ("true") reads as a bool."""
    wanted = {"check_forward_ad": True, "check_backward_ad": False, "check_batched_forward_grad": True}
    assert refusal(check_backward_ad=False) and not refusal(**wanted)
    defaults = {name: getattr(CheckSettings(), name) for name in wanted}
    for values in (wanted, dict(reversed(wanted.items()))):
        settings = RunSettings()
        assert settings.update(values) == []
        assert {k: settings.get(k) for k in values} == values
        back = dict(reversed(defaults.items())) if values is wanted else defaults
        assert settings.update(back) == []  # and back to gradcheck's defaults, in either order
        assert {k: settings.get(k) for k in back} == back
    settings = RunSettings()
    assert settings.update({k: str(v).lower() for k, v in wanted.items()}, from_text=True) == []
    assert {k: settings.get(k) for k in wanted} == wanted


# --- the real window and its worker ----------------------------------------------------------------


def test_each_option_goes_with_the_request(qtbot, main_window, monkeypatch):
    window = main_window
    show_function(window, "Square")
    sent = record_requests(window, monkeypatch)
    dialog = open_options(qtbot, window)
    boxes = dialog.options.boxes
    defaults = CheckSettings()
    toggled = []
    for name in ("fast_mode", "check_batched_grad", "check_forward_ad", "check_batched_forward_grad", "check_backward_ad"):
        wanted = {**{n: window.run_settings.get(n) for n in NAMES}, name: not getattr(defaults, name)}
        if refusal(**wanted):  # forward mode before gradviz runs it: the sentence instead
            boxes[name].click()
            assert dialog.options.message.text() == refusal(**wanted)
            continue
        boxes[name].setFocus()
        qtbot.keyClick(boxes[name], Qt.Key.Key_Space)  # the keyboard toggles a box
        assert window.run_settings.get(name) == wanted[name]
        toggled.append(name)
        run_and_wait(qtbot, window)
        request = [r for r in sent if r.op == "check"][-1]
        assert {n: getattr(request.settings, n) for n in NAMES} == wanted
        assert window.current.result.settings.to_dict()[name] == wanted[name]  # the worker ran with it
    assert {"fast_mode", "check_batched_grad"} <= set(toggled)


@pytest.mark.parametrize(
    ("function", "options"),
    [
        ("NumpyBackward", {"check_batched_grad": True}),  # fails only gradcheck's batched-gradient test
        ("OneCellOff", {"fast_mode": True}),  # fails the cells, passes fast mode's projections
    ],
)
def test_the_verdict_shown_is_gradchecks_with_the_same_options(qtbot, main_window, function, options):
    window = main_window
    fn = getattr(fns, function)
    show_function(window, function)
    run_and_wait(qtbot, window)
    assert window.current.result.passed == gradcheck_passes(fn)
    assert window.banner.state == ("passed" if gradcheck_passes(fn) else "failed")
    dialog = open_options(qtbot, window)
    for name, value in options.items():
        if dialog.options.boxes[name].isChecked() != value:
            dialog.options.boxes[name].click()
    run_and_wait(qtbot, window)
    expected = gradcheck_passes(fn, **options)
    assert expected != gradcheck_passes(fn)  # the option decides this Function's verdict
    result = window.current.result
    assert result.passed == expected
    assert window.banner.state == ("passed" if expected else "failed")
    named = {c.name: c for c in result.checks}
    for name in options:
        check = "batched_grad" if name == "check_batched_grad" else name
        assert named[check].passed == expected  # the named check carries the verdict
        assert check in window.banner.details.text() or check in window.banner.headline.text()
    if not expected:
        assert window.banner.headline.text().startswith("FAILED")
    save_shot(window, f"verdict-{function}", qtbot)


def test_the_options_survive_a_relaunch_and_come_with_a_session(qtbot, main_window, settings_store, tmp_path):
    """Saved as they change and read back at the next launch; then a session with forward mode
    alone (backward off) opened over them: both apply, though backward off before forward on, the
    order they come in, is a combination gradcheck refuses."""
    from gradviz.app.main_window import MainWindow
    from gradviz.schema.session import Session, load_session, save_session

    window = main_window
    dialog = open_options(qtbot, window)
    for name in ("fast_mode", "check_batched_grad"):
        dialog.options.boxes[name].click()
    qtbot.waitUntil(lambda: settings_store.value("run/check_batched_grad") in (True, "true"), timeout=10_000)
    save_shot(dialog, "options-dialog")
    save_shot(window, "options-window", qtbot)
    again = MainWindow(QSettings(settings_store.fileName(), QSettings.Format.IniFormat), auto_run=False)
    qtbot.addWidget(again)
    try:
        assert again.run_settings.fast_mode and again.run_settings.check_batched_grad
        assert not again.run_settings.check_forward_ad and again.run_settings.check_backward_ad
        assert not again.preferences.dropped
        assert again.run_bar.options_button.text() == "Checks: fast, batched"
        assert again.run_settings.check_settings().check_batched_grad
    finally:
        again.close()

    wanted = {"check_backward_ad": False, "check_batched_grad": False, "check_forward_ad": True, "fast_mode": False}
    assert refusal(check_backward_ad=False, check_batched_grad=True) and not refusal(**wanted)
    path = tmp_path / "options.gradviz"
    save_session(path, Session(code=JVP_SOURCE, run=wanted))
    assert window.source.apply_session(path, load_session(path))
    assert {n: window.run_settings.get(n) for n in wanted} == wanted
    assert window.run_bar.options_button.text() == "Checks: fwd, no bwd"
    assert "ignored" not in window.statusBar().currentMessage()
    saved = window.current_session().run
    assert {n: saved[n] for n in wanted} == wanted


# --- the forward-mode Jacobian ---------------------------------------------------------------------


@pytest.fixture
def forward_result(make_check_result):
    """A result whose forward blocks are the Jacobians of another backward (WrongFactor's, a
    factor off) against the same numerical ones: the core computes every array."""
    result = make_check_result(source=OPTION_SOURCE + "\nFUNCTION = 'Square'\n")
    other = make_check_result(source=OPTION_SOURCE + "\nFUNCTION = 'WrongFactor'\n")
    result = dataclasses.replace(result, forward_blocks=list(other.blocks))
    assert np.array_equal(result.blocks[0].numerical, other.blocks[0].numerical)
    return result


@pytest.fixture
def panel(qtbot):
    widget = JacobianPanel()
    qtbot.addWidget(widget)
    widget.resize(1280, 560)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def titles(panel) -> list[str]:
    return [plot.titleLabel.text for plot in panel.plot_items]


def test_the_switch_shows_the_forward_jacobian_and_its_errors(qtbot, panel, forward_result):
    result = forward_result
    backward, forward = result.blocks[0], result.forward_blocks[0]
    assert backward.passed and not forward.passed  # the core's verdicts, not typed
    panel.set_result(result)
    switch = panel.forward
    assert switch.isVisible() and switch.mode() != FORWARD
    assert titles(panel)[0] in TITLES[0]
    np.testing.assert_array_equal(panel.analytic_image.image, backward.analytic.astype(np.float32))
    assert panel.failing_outline.cells() == []

    switch.forward_button.setFocus()
    qtbot.keyClick(switch.forward_button, Qt.Key.Key_Space)  # keyboard: Tab to it, Space
    assert switch.mode() == FORWARD
    np.testing.assert_array_equal(panel.analytic_image.image, forward.analytic.astype(np.float32))
    np.testing.assert_array_equal(panel.numerical_image.image, backward.numerical.astype(np.float32))
    np.testing.assert_array_equal(panel.error_image.image, forward.error.astype(np.float32))
    assert titles(panel)[0] in FORWARD_TITLES[0] and titles(panel)[2] in FORWARD_TITLES[2]
    rows, cols = np.nonzero(forward.failing)
    assert rows.size and sorted(panel.failing_outline.cells()) == sorted(zip(rows.tolist(), cols.tolist()))
    panel.go_to_worst()
    assert panel.highlighted_cell() == forward.worst
    text = panel.readout.text()
    expected = cell_readout(result, forward, *forward.worst)
    assert text == expected.replace(": analytic ", ": forward (jvp) ", 1) and "fails" in text
    save_shot(panel, "forward-switch")

    switch.backward_button.click()
    np.testing.assert_array_equal(panel.analytic_image.image, backward.analytic.astype(np.float32))
    assert panel.readout.text() == cell_readout(result, backward, *forward.worst)
    assert titles(panel)[0] in TITLES[0]


def test_forward_mode_alone_draws_the_forward_blocks(qtbot, panel, forward_result):
    """check_backward_ad=False: no backward blocks, the forward ones drawn and titled as such."""
    result = dataclasses.replace(forward_result, blocks=[])
    forward = result.forward_blocks[0]
    panel.set_result(result)
    assert panel.forward.isVisible() and panel.forward.mode() == FORWARD
    assert not panel.forward.backward_button.isEnabled()
    assert panel.current_block() is forward
    np.testing.assert_array_equal(panel.analytic_image.image, forward.analytic.astype(np.float32))
    assert titles(panel)[0] in FORWARD_TITLES[0]
    assert panel.readout.text().startswith(f"{result.cell_label(forward, *forward.worst)}: forward (jvp) ")


def test_no_switch_without_forward_blocks(qtbot, panel, make_check_result):
    result = make_check_result(source=OPTION_SOURCE + "\nFUNCTION = 'Square'\n")
    panel.set_result(result)
    assert not panel.forward.isVisible() and panel.forward.mode() != FORWARD


def test_a_real_run_with_forward_mode_shows_the_forward_jacobian(qtbot, main_window):
    """A Function whose jvp is a factor off (its backward right), run by the worker with
    check_forward_ad: FAIL as gradcheck says, and the switch shows the wrong forward Jacobian."""
    window = main_window
    fn = jvp_functions.WrongJvp
    window.source.set_source(JVP_SOURCE, None, function="WrongJvp")
    run_and_wait(qtbot, window)
    assert window.current.result.passed == gradcheck_passes(fn, jvp_functions)  # backward alone: right
    assert not window.jacobians.forward.isVisible()
    dialog = open_options(qtbot, window)
    dialog.options.boxes["check_forward_ad"].click()
    assert not dialog.options.message.isVisible()
    run_and_wait(qtbot, window)
    expected = gradcheck_passes(fn, jvp_functions, check_forward_ad=True)
    result = window.current.result
    assert result.settings.check_forward_ad and result.forward_blocks
    assert result.passed == expected != gradcheck_passes(fn, jvp_functions)
    assert window.banner.state == ("passed" if expected else "failed")
    assert window.banner.headline.text().startswith(verdict_line(result))  # names the forward-mode cells
    panel = window.jacobians
    assert panel.forward.isVisible()
    panel.forward.forward_button.click()
    forward = result.forward_block(0, 0)
    np.testing.assert_array_equal(panel.analytic_image.image, forward.analytic.astype(np.float32))
    np.testing.assert_array_equal(panel.numerical_image.image, result.blocks[0].numerical.astype(np.float32))
    assert forward.n_failing and panel.highlighted_cell() is not None
    assert ": forward (jvp) " in panel.readout.text()
    save_shot(window, "forward-window", qtbot)

    dialog.options.boxes["check_backward_ad"].click()  # forward mode alone, as gradcheck allows
    dialog.options.boxes["check_batched_forward_grad"].click()
    assert not dialog.options.message.isVisible() and not window.run_settings.check_backward_ad
    run_and_wait(qtbot, window)
    result = window.current.result
    assert not result.blocks and result.forward_blocks
    options = {"check_forward_ad": True, "check_backward_ad": False, "check_batched_forward_grad": True}
    assert result.passed == gradcheck_passes(fn, jvp_functions, **options)
    assert BATCHED_FORWARD_GRAD in {c.name for c in result.checks}  # the named check, in the banner's list
    assert BATCHED_FORWARD_GRAD in window.banner.details.text() + window.banner.headline.text()
    assert panel.forward.mode() == FORWARD and not panel.forward.backward_button.isEnabled()
    assert panel.current_block() is not None and titles(panel)[0] in FORWARD_TITLES[0]


def test_the_block_list_is_marked_by_the_mode_on_screen(qtbot, panel, make_check_result):
    """Several blocks: in forward mode the selector and the overview mark the forward comparisons."""
    right = make_check_result("abs_product")
    wrong = make_check_result("buggy_abs_product_sign")  # its u block fails: the "forward" blocks here
    assert [b.shape for b in right.blocks] == [b.shape for b in wrong.blocks]
    result = dataclasses.replace(right, forward_blocks=list(wrong.blocks))
    panel.set_result(result)
    items = lambda: [panel.block_selector.itemText(k) for k in range(panel.block_selector.count())]  # noqa: E731
    assert all(b.passed for b in right.blocks) and all("✓" in text for text in items())
    panel.forward.forward_button.click()
    marks = ["✓" if b.passed else f"✗ {b.n_failing:,} failing" for b in wrong.blocks]
    assert "✓" not in marks or len(set(marks)) > 1
    assert [text.split("   ")[1] for text in items()] == marks
    shown = panel.current_block()
    assert panel.forward.shown(shown) is wrong.blocks[panel.block_selector.currentIndex()]
    panel.forward.backward_button.click()
    assert all("✓" in text for text in items())


def test_fast_mode_shows_the_verdict_first_then_fills_the_shown_blocks_maps(qtbot, main_window):
    """Checks… → fast_mode: the worker builds no map for the verdict; the block on screen gets its
    cells next, computed for it, equal to the ones an eager check builds."""
    import numpy as np

    import gradviz

    window = main_window
    show_function(window, "OneCellOff")
    dialog = open_options(qtbot, window)
    dialog.options.boxes["fast_mode"].click()
    dialog.close()
    run_and_wait(qtbot, window)
    result = window.current.result
    assert result.deferred_maps and not result.blocks
    assert result.passed == gradcheck_passes(fns.OneCellOff, fast_mode=True)
    panel = window.jacobians
    qtbot.waitUntil(lambda: panel.shown_region() is not None, timeout=RUN_TIMEOUT)
    region = panel.shown_region()
    (x,) = fns.example_inputs(torch.device("cpu"), torch.float64)
    eager = gradviz.check(fns.OneCellOff, x, raise_exception=False).blocks[0]
    assert region.shape == eager.analytic.shape  # 64 x 64: the whole block
    np.testing.assert_allclose(region.comparison.analytic, eager.analytic, rtol=0, atol=1e-12)
    np.testing.assert_allclose(region.comparison.numerical, eager.numerical, rtol=0, atol=1e-9)
    assert region.comparison.n_failing == eager.n_failing
    assert "no map was built" in panel.large_page.summary.text()
    save_shot(window, "fast-mode-maps-filled", qtbot)

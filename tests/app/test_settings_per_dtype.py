"""Run settings do not leak between files and launches: a suggested eps is for
that one re-run; eps, atol and rtol are the dtype's defaults (gradviz.schema.settings, as in the
CLI) unless the user typed one, per field; number fields show the value they hold, whole."""

from __future__ import annotations

from PySide6.QtCore import Qt

from gradviz.app.panels.run_bar import number_text
from gradviz.schema.settings import TOLERANCE_FIELDS, dtype_defaults
from gradviz.schema.sweep import Verdict
from tests.app.test_main_window import RUN_TIMEOUT, run_and_wait
from tests.app.why_sources import OFFSET_SIN, SQUARE, open_and_wait, write


def shown(window) -> dict[str, str]:
    """What the run bar's eps, atol and rtol fields show."""
    return {name: window.run_bar.tolerance[name].text() for name in TOLERANCE_FIELDS}


def defaults_text(dtype: str) -> dict[str, str]:
    own = dtype_defaults(dtype)
    return {name: number_text(getattr(own, name)) for name in TOLERANCE_FIELDS}


def type_into(qtbot, box, text: str) -> None:
    box.lineEdit().selectAll()
    qtbot.keyClicks(box.lineEdit(), text)
    qtbot.keyClick(box, Qt.Key.Key_Return)  # no keyboard tracking: the value is taken on Enter


def test_a_suggested_eps_is_for_one_rerun_not_the_next_file_or_launch(qtbot, main_window, settings_store, tmp_path):
    window = main_window
    open_and_wait(qtbot, window, write(tmp_path, "offset_sin.py", OFFSET_SIN))
    default_eps = dtype_defaults(window.run_settings.dtype).eps
    with qtbot.waitSignal(window.why.shown, timeout=RUN_TIMEOUT):
        run_and_wait(qtbot, window)
    panel = window.why.panel
    assert not window.current.result.passed and panel.result().verdict == Verdict.EPS_TOO_SMALL
    suggested = panel.result().best_eps
    assert suggested != default_eps and panel.rerun_button.isEnabled()
    window.why.dock.show()
    window.why.dock.raise_()
    with qtbot.waitSignal(window.result_shown, timeout=RUN_TIMEOUT):
        qtbot.mouseClick(panel.rerun_button, Qt.MouseButton.LeftButton)
    result = window.current.result
    assert result.passed and result.settings.eps == suggested  # the re-run ran at the suggestion
    assert window.run_settings.eps == default_eps  # ... and the run bar kept its eps
    assert window.run_bar.tolerance["eps"].text() == number_text(default_eps)
    window.close()

    # relaunch on the same settings file, open another file: the dtype's eps
    from gradviz.app.main_window import MainWindow

    second = MainWindow(settings_store, auto_run=False)
    qtbot.addWidget(second)
    try:
        second.show()
        open_and_wait(qtbot, second, write(tmp_path, "square.py", SQUARE))
        dtype = second.run_settings.dtype
        assert second.run_settings.eps == dtype_defaults(dtype).eps
        assert shown(second) == defaults_text(dtype)
    finally:
        second.close()


def test_a_saved_eps_the_user_did_not_type_is_not_restored(qtbot, settings_store):
    """run/typed names what the user typed; any other saved tolerance gives way to the dtype's."""
    from gradviz.app.main_window import MainWindow

    settings_store.setValue("run/dtype", "float32")
    settings_store.setValue("run/eps", "0.00316")
    settings_store.setValue("run/atol", "0.25")
    settings_store.setValue("run/typed", ["atol"])
    settings_store.sync()
    window = MainWindow(settings_store, auto_run=False)
    qtbot.addWidget(window)
    try:
        assert window.run_settings.dtype == "float32" and window.run_settings.eps == dtype_defaults("float32").eps
        assert window.run_settings.atol == 0.25 and window.run_settings.typed == {"atol"}
    finally:
        window.close()


def test_defaults_follow_the_dtype_unless_typed(qtbot, main_window, settings_store):
    window, bar = main_window, main_window.run_bar
    bar.dtype.setCurrentText("float64")
    assert shown(window) == defaults_text("float64")
    for dtype in ("float32", "float64", "float16", "float64"):  # the user picks each in the combo box
        bar.dtype.setCurrentText(dtype)
        assert shown(window) == defaults_text(dtype)
        assert window.runner.build_request().settings.tolerance() == dtype_defaults(dtype)
    # a typed value stays through dtype changes, per field; the others follow
    type_into(qtbot, bar.tolerance["eps"], "1e-7")
    assert window.run_settings.eps == 1e-7 and bar.tolerance["eps"].text() == "1e-7"
    bar.dtype.setCurrentText("float32")
    assert bar.tolerance["eps"].text() == "1e-7"
    assert bar.tolerance["atol"].text() == defaults_text("float32")["atol"]
    assert bar.tolerance["rtol"].text() == defaults_text("float32")["rtol"]
    settings = window.runner.build_request().settings
    assert (settings.eps, settings.atol) == (1e-7, dtype_defaults("float32").atol)
    # typed survives a relaunch too (it is the user's), untyped fields take the dtype's defaults
    window._save_settings()
    from gradviz.app.main_window import MainWindow

    second = MainWindow(settings_store, auto_run=False)
    qtbot.addWidget(second)
    try:
        assert second.run_settings.typed == {"eps"}
        assert shown(second) == {**defaults_text("float32"), "eps": "1e-7"}
    finally:
        second.close()

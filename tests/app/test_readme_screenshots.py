"""The README's screenshots of the window, taken as the README shows it: a buggy LinearFunction
twin checked at 1920x1080 and at 1280x720 (a maximized window's client area under openbox), with
every element of the product on screen and finished: both Jacobians and the error map drawn, the
hint, the autograd graph with a backward step marking its row, and the conv-BN memory study with
its result. The test asserts that state; with ``GRADVIZ_README_SHOTS=1`` it also writes the
pictures into resources/screenshots/ (the README's), else into the test artifacts.
"""

from __future__ import annotations

import os

import pytest

from tests.app.test_jacobian_view import settle
from tests.app.test_main_window import RUN_TIMEOUT, run_and_wait
from tests.paths import ARTIFACTS, ROOT

SHOTS = {(1920, 1061): "main_window.png", (1280, 701): "window_1280x720.png"}


@pytest.mark.slow
@pytest.mark.parametrize("size", sorted(SHOTS, reverse=True), ids=lambda s: f"{s[0]}x{s[1]}")
def test_the_readme_screenshot_shows_every_element_finished(qtbot, main_window, size):
    window = main_window
    window.resize(*size)
    qtbot.waitUntil(lambda: (window.width(), window.height()) == size)
    window.load_builtin("buggy_linear_transpose")
    with qtbot.waitSignal(window.memory_shown, timeout=RUN_TIMEOUT):
        run_and_wait(qtbot, window)
    result = window.current.result
    assert not result.passed and window.banner.state == "failed"
    assert window.banner.hint.isVisible() and window.banner.hint.text()
    settle(qtbot, window.jacobians)  # laid out for the size
    panel = window.jacobians
    assert panel.plots.isVisible() and panel.current_block() is not None and not panel.current_block().passed
    assert all(plot.isVisible() for plot in panel.plot_items)  # analytic, numerical, |A - N|
    window.graph.start_walk()  # the first backward step: the row of J it fills is marked
    assert window.graph.stepping() and panel.marked_rows() is not None
    assert window.docks["Autograd graph"].isVisible() and window.graph.selected_node() is not None
    study = window.memory.result()
    assert study is not None and not window.memory.is_measuring()  # finished, not measuring
    folder = ROOT / "resources" / "screenshots" if os.environ.get("GRADVIZ_README_SHOTS") == "1" else ARTIFACTS
    folder.mkdir(exist_ok=True)
    assert window.grab().save(str(folder / SHOTS[size]))

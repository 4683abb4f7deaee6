"""What presentation mode promises a lecturer, measured on the real window at a projector's
1280x720 and at 1920x1080 (out of full screen: a window manager keeps a full-screen window at
the screen's size, the tests' 1920x1200): the failing count readable on the shown thumbnail, A+
stopping before the maps' titles touch, leaving putting every font and dock back, the backward
view showing the row of J, the worst-cell step changing the screen, the clicker paging through
the code, what the clicker did said on the stage, the memory view and the tensor table all on
screen, A+ making every text larger."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QColor, QImage
from PySide6.QtWidgets import QAbstractScrollArea, QApplication, QLabel, QWidget

from gradviz.app.theme import PRESENTATION_MIN_PX
from tests.app.layout_check import layout_problems
from tests.app.test_main_window import RUN_TIMEOUT
from tests.app.test_presentation_views import settle
from tests.app.text_sizes import font_pixels, text_sizes
from tests.paths import ARTIFACTS

SIZES = ((1280, 720), (1920, 1080))


def at_size(qtbot, window, size: tuple[int, int]) -> None:
    """The presenting window ``size`` pixels, laid out: out of full screen, so a screen of any
    size (the tests' 1920x1200) holds a projector's 1280x720 (full screen, a window manager
    puts it back to the screen's size)."""
    if window.isFullScreen():
        window.showNormal()
    settle(qtbot, window, size)


def present(qtbot, window, size: tuple[int, int], example: str = "buggy_linear_transpose"):
    """Presenting ``example`` at ``size``, run by the clicker, its Jacobians on screen."""
    window.load_builtin(example)
    qtbot.keyClick(window, Qt.Key.Key_F11)
    at_size(qtbot, window, size)
    stage = window.presentation.stage
    with qtbot.waitSignal(window.result_shown, timeout=RUN_TIMEOUT):  # the clicker: the code to its end, run
        while stage.current == "code":
            qtbot.keyClick(stage, Qt.Key.Key_PageDown)
    at_size(qtbot, window, size)
    return stage


def grab(window, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    assert window.grab().save(str(ARTIFACTS / f"{name}.png"))


def luminance(color: QColor) -> float:
    """WCAG relative luminance."""

    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    return 0.2126 * linear(color.redF()) + 0.7152 * linear(color.greenF()) + 0.0722 * linear(color.blueF())


def contrast(a: QColor, b: QColor) -> float:
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def text_contrast(image: QImage, top: int, bottom: int) -> float:
    """Contrast of the most contrasting reddish pixel (a glyph's core) against the commonest
    colour (the background) in rows ``top``..``bottom`` of ``image``."""
    pixels = [image.pixelColor(x, y) for y in range(top, bottom) for x in range(4, image.width() - 4)]
    background = QColor(Counter(p.rgb() for p in pixels).most_common(1)[0][0])
    reds = [p for p in pixels if p.red() - p.green() > 60]
    assert reds, "no red text found"
    return max(contrast(p, background) for p in reds)


def test_the_shown_thumbnails_failing_count_is_readable(qtbot, main_window):
    window = main_window
    present(qtbot, window, SIZES[0])
    overview = window.jacobians.overview
    shown = overview.buttons[overview.current()]
    assert shown.isChecked() and shown.text().startswith("✗")
    image = shown.grab().toImage()
    ARTIFACTS.mkdir(exist_ok=True)
    image.save(str(ARTIFACTS / "present-thumbnail-checked.png"))
    icon_bottom = (shown.height() + shown.iconSize().height()) // 2  # the count lies under the icon
    ratio = text_contrast(image, min(icon_bottom, image.height() - 8), image.height() - 3)
    assert ratio >= 4.5, f"failing count on the shown thumbnail: {ratio:.2f}:1"


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_larger_text_stops_before_the_maps_titles_touch_or_a_control_is_cut(qtbot, main_window, size):
    """At 1280x720, A+ took fused_conv_bn's titles to 15 px apart ("Analytic Numerical |A − N|"
    read as one line)."""
    window = main_window
    stage = present(qtbot, window, size, "fused_conv_bn")
    jacobians = window.jacobians
    for _ in range(8):  # as often as a presenter might press A+
        stage.controls["bigger"].click()
        at_size(qtbot, window, size)
    grab(window, f"present-largest-text-{size[0]}x{size[1]}")
    titles = [p.titleLabel.item for p in jacobians.plot_items]
    rects = [t.mapRectToScene(t.boundingRect()) for t in titles]
    gaps = [b.left() - a.right() for a, b in itertools.pairwise(rects)]
    assert min(gaps) >= rects[0].height() / 2, (window.view.scale, gaps, rects[0].height())
    controls = (jacobians.block_selector, jacobians.worst_button, jacobians.reset_button, jacobians.view_note,
                jacobians.square_cells, jacobians.log_scale)  # fmt: skip
    cut = [(c.objectName() or type(c).__name__, c.width(), c.sizeHint().width()) for c in controls
           if c.isVisible() and c.width() < c.sizeHint().width()]  # fmt: skip
    assert not cut


def fonts(window) -> dict[str, float]:
    """Every widget's point size, named by its place in the window's tree."""
    found = {}

    def walk(widget, path: str) -> None:
        found[path] = widget.font().pointSizeF()
        for k, child in enumerate(c for c in widget.children() if isinstance(c, QWidget)):
            walk(child, f"{path}/{child.objectName() or type(child).__name__}[{k}]")

    walk(window, "window")
    return found


def dock_sizes(window) -> dict[str, tuple[int, int]]:
    return {title: (dock.width(), dock.height()) for title, dock in window.docks.items() if dock.isVisible()}


def test_leaving_after_larger_text_puts_every_font_and_dock_back(qtbot, main_window):
    window = main_window
    window.load_builtin("buggy_linear_transpose")
    qtbot.waitUntil(lambda: window.isVisible() and window.docks["Code"].isVisible())
    qtbot.wait(200)
    before_fonts, before_docks = fonts(window), dock_sizes(window)
    stage = present(qtbot, window, SIZES[0])
    for _ in range(3):
        stage.controls["bigger"].click()
        at_size(qtbot, window, SIZES[0])
    while stage.current != "memory":  # the worst cell, the backward steps, the memory study
        qtbot.keyClick(stage, Qt.Key.Key_PageDown)
    at_size(qtbot, window, SIZES[0])
    qtbot.keyClick(stage, Qt.Key.Key_PageUp)
    qtbot.keyClick(window, Qt.Key.Key_Escape)
    assert not window.in_presentation()
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    qtbot.waitUntil(lambda: dock_sizes(window).keys() == before_docks.keys())
    qtbot.wait(300)
    after_fonts = fonts(window)
    changed = {k: (v, after_fonts.get(k)) for k, v in before_fonts.items() if after_fonts.get(k, v) != v}
    assert not changed, "\n".join(f"{k}: {a} -> {b}" for k, (a, b) in list(changed.items())[:20])
    assert dock_sizes(window) == before_docks


def band_pixels(image: QImage) -> int:
    """Pixels of the row band's outline (ROW_BAND, orange-yellow) in ``image``."""
    found = 0
    for y in range(0, image.height(), 2):
        for x in range(0, image.width(), 2):
            c = image.pixelColor(x, y)
            found += c.red() > 235 and 150 <= c.green() <= 190 and c.blue() < 40
    return found


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_the_backward_view_shows_the_row_of_j_each_step_fills(qtbot, main_window, size):
    window = main_window
    stage = present(qtbot, window, size)
    while stage.current != "backward":  # the worst cell, then backward step 1: your Function's node
        qtbot.keyClick(stage, Qt.Key.Key_PageDown)
    at_size(qtbot, window, size)
    qtbot.waitUntil(lambda: window.jacobians.marked_rows() is not None)
    row = window.jacobians.marked_rows()[0]
    grab(window, f"present-backward-row-{size[0]}x{size[1]}")
    page = stage.page("backward").grab().toImage()
    assert band_pixels(page) > 50, "no row band in the backward view"
    shown = window.presentation.row_of_j
    assert shown.isVisible() and shown.band_shown() == (row - 0.5, row + 0.5)
    assert f"Row {row} of J" in shown.title.text() and f"row {row} of J" in shown.note.text()


def changed_fraction(a: QImage, b: QImage) -> float:
    """Share of pixels (sampled every 4th) that differ between two grabs of one size."""
    assert a.size() == b.size()
    points = [(x, y) for y in range(0, a.height(), 4) for x in range(0, a.width(), 4)]
    return sum(a.pixel(x, y) != b.pixel(x, y) for x, y in points) / len(points)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_the_worst_cell_step_changes_the_screen_in_a_small_block(qtbot, main_window, size):
    """buggy_linear_transpose's 30x55 block was framed whole with its worst cell highlighted
    already: the step left every pixel as it was."""
    window = main_window
    stage = present(qtbot, window, size)
    jacobians = window.jacobians
    assert max(jacobians.current_block().shape) <= 64 and jacobians.highlighted_cell() == jacobians.current_block().worst
    before = stage.page("jacobians").grab().toImage()
    qtbot.keyClick(stage, Qt.Key.Key_PageDown)  # the worst cell
    at_size(qtbot, window, size)
    assert stage.current == "jacobians"
    grab(window, f"present-worst-cell-{size[0]}x{size[1]}")
    after = stage.page("jacobians").grab().toImage()
    assert changed_fraction(before, after) > 0.1
    (x0, x1), (y0, y1) = jacobians.plot_items[0].getViewBox().viewRange()
    row, col = jacobians.current_block().worst
    assert x0 < col < x1 and y0 < row < y1 and x1 - x0 < 16  # zoomed in on its neighbourhood
    assert jacobians.highlighted_cell() == (row, col)


def shown_lines(code) -> list[int]:
    """Numbers (from 0) of the code's lines wholly inside the editor's viewport."""
    height, found = code.viewport().height(), []
    block = code.firstVisibleBlock()
    offset = code.contentOffset()
    while block.isValid():
        box = code.blockBoundingGeometry(block).translated(offset)
        if box.top() >= height:
            break
        if block.isVisible() and box.top() >= 0 and box.bottom() <= height:
            found.append(block.blockNumber())
        block = block.next()
    return found


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_the_code_view_opens_at_the_backward_and_the_clicker_pages_through_it(qtbot, main_window, size):
    """At 1280x720 the code view showed lines 1-25 and every built-in's backward below them."""
    window = main_window
    window.load_builtin("buggy_linear_transpose")
    qtbot.keyClick(window, Qt.Key.Key_F11)
    at_size(qtbot, window, size)
    stage, code = window.presentation.stage, window.editor.editor
    lines = code.toPlainText().split("\n")
    backward = next(k for k, line in enumerate(lines) if line.lstrip().startswith("def backward"))
    qtbot.waitUntil(lambda: backward in shown_lines(code))
    grab(window, f"present-code-at-backward-{size[0]}x{size[1]}")
    seen = set(shown_lines(code))
    for _ in range(len(lines)):  # Page Down reads on to the end, then runs and shows the Jacobians
        qtbot.keyClick(stage, Qt.Key.Key_PageDown)
        if stage.current != "code":
            break
        seen |= set(shown_lines(code))
    assert stage.current == "jacobians" and len(lines) - 1 in seen
    qtbot.waitUntil(lambda: not window.controller.busy, timeout=RUN_TIMEOUT)
    qtbot.keyClick(stage, Qt.Key.Key_PageUp)  # back to the code, then up to its top
    assert stage.current == "code"
    for _ in range(len(lines)):
        qtbot.keyClick(stage, Qt.Key.Key_PageUp)
        seen |= set(shown_lines(code))
        if 0 in seen:
            break
    assert stage.current == "code" and set(range(len(lines))) <= seen | {k for k, line in enumerate(lines) if not line.strip()}


def shown_texts(root) -> list[str]:
    return [label.text().replace("\u200b", "") for label in root.findChildren(QLabel) if label.isVisible()]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_what_the_clicker_did_is_said_on_the_stage(qtbot, main_window, size):
    """The status bar said it ("▶ worst cell"), but presenting hides the status bar."""
    window = main_window
    stage = present(qtbot, window, size)
    qtbot.keyClick(stage, Qt.Key.Key_PageDown)  # the worst cell
    said = [text for text in shown_texts(stage) if "worst cell" in text]
    assert said, shown_texts(stage)
    label = next(x for x in stage.findChildren(QLabel) if x.isVisible() and "worst cell" in x.text())
    assert font_pixels(label.font()) >= PRESENTATION_MIN_PX
    qtbot.waitUntil(lambda: label.height() >= label.heightForWidth(label.width()), timeout=1000)  # all its lines
    box = label.rect().translated(label.mapTo(window, label.rect().topLeft()))
    assert window.rect().contains(box)
    grab(window, f"present-said-{size[0]}x{size[1]}")
    qtbot.waitUntil(lambda: not label.isVisible(), timeout=5000)  # a moment later it goes


def on_screen(widget, root) -> bool:
    """All of ``widget`` lies in what ``root`` shows (not scrolled out, not below its bottom)."""
    box = widget.rect().translated(widget.mapTo(root, widget.rect().topLeft()))
    seen = widget.viewport() if isinstance(widget, QAbstractScrollArea) else widget  # a view's viewport covers it
    return root.rect().contains(box) and seen.visibleRegion().boundingRect().size() == seen.size()


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_the_memory_view_and_the_tensor_table_are_all_on_screen(qtbot, main_window, size):
    """At 1280x720 the memory study stacked its plots in its scroll area, the sweep below the
    fold; the backward view's tensor table cut its last column, "role"."""
    window = main_window
    stage = present(qtbot, window, size)
    qtbot.waitUntil(lambda: window.memory.result() is not None, timeout=RUN_TIMEOUT)
    window.presentation.show_view("backward")
    at_size(qtbot, window, size)
    table = window.graph.details
    assert table.isVisible() and table.columnCount() and table.rowCount()
    assert table.horizontalHeader().length() <= table.viewport().width(), "a column of the tensor table is cut"
    assert not layout_problems(window)
    window.presentation.show_view("memory")
    at_size(qtbot, window, size)
    grab(window, f"present-memory-{size[0]}x{size[1]}")
    memory, page = window.memory, stage.page("memory")
    for part in (memory.bar_plot, memory.sweep_plot, memory.headline, memory.measure_button):
        assert part.isVisible() and on_screen(part, page), part.objectName() or type(part).__name__
    assert not layout_problems(window)


def test_larger_text_makes_every_text_of_the_stage_larger(qtbot, main_window):
    """With a fixed 24 px floor, A+ from 1.3 to 1.5 left every text the floor held (the check
    boxes, the block selector, the buttons, the bar) as it was: 9 pt x 1.5 is still under 18 pt."""
    window = main_window
    stage = present(qtbot, window, SIZES[1], "buggy_kill_head_leak")

    def sizes() -> dict[str, float]:
        found: dict[str, float] = {}
        for pixels, what in text_sizes(stage):
            found[what] = min(pixels, found.get(what, pixels))
        return found

    before, scale = sizes(), window.view.scale
    assert min(before.values()) >= PRESENTATION_MIN_PX
    stage.controls["bigger"].click()
    at_size(qtbot, window, SIZES[1])
    assert window.view.scale > scale  # 1920x1080 has room for it
    grab(window, "present-one-size-larger-1920x1080")
    after = sizes()
    same = {what: px for what, px in before.items() if what in after and after[what] <= px}
    assert not same, same

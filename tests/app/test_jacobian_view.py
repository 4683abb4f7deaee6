"""The Jacobian view in the real window at a 1280x720 projector's and a 1920x1080 monitor's client
area: the heatmaps get the height, cells are square (a switch stretches them), the banner's
details fold into one line (its hint stays: tests/app/test_hint_in_view.py), several blocks get an overview, and colour-bar ticks never touch.

Results come from the real core (``make_check_result``) and are shown as the window shows a run's.
Sizes are a maximized window's client area under openbox (a 19 px title bar), measured with
xwininfo on 1280x720 and 1920x1080 screens.
"""

from __future__ import annotations

import itertools

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QFontMetricsF

from tests.app.jacobian_sources import CUMSUM_3000, SQUARE_900, TWO_BY_TWO
from tests.app.layout_check import graphics_texts

CLIENT_720 = (1280, 701)
CLIENT_1080 = (1920, 1061)
SHARE = 0.4  # of the window's height, each heatmap's view at least


def show(qtbot, window, result, size) -> None:
    """``result`` on screen in a window of ``size``, laid out."""
    window.current.set(result, request=window.current.request + 1)
    window.resize(*size)
    qtbot.waitUntil(lambda: (window.width(), window.height()) == size)
    settle(qtbot, window.jacobians)


def settle(qtbot, panel) -> None:
    """Wait until the views' rects and ranges stop changing (deferred relayouts done)."""
    seen = []

    def settled() -> bool:
        """The views' rects and ranges as they were at the last poll (deferred relayouts done)."""
        seen.append(view_rects(panel))
        return len(seen) > 2 and seen[-1] == seen[-2] == seen[-3]

    qtbot.waitUntil(settled)


def assert_maps_get_the_height(window) -> None:
    """Each map's block (not its view: grey bands above and below a block are no map) gets 40 %
    of the window's height, or as much as square cells of its view's whole width make it; cells
    are square."""
    panel = window.jacobians
    rows, cols = panel.current_block().shape
    rects = view_rects(panel)
    for width, height, per_col, per_row in rects:
        drawn_height, drawn_width = rows * per_row, cols * per_col
        assert drawn_height >= SHARE * window.height() or drawn_width >= 0.95 * width, (
            f"a {rows}x{cols} block drawn {drawn_width:.0f}x{drawn_height:.0f} px in a {width}x{height} px view"
        )
        assert per_row == pytest.approx(per_col, rel=0.02), f"cells are not square: {rects}"
        assert min(width, height) >= 120  # never a sliver, whichever way the block is long


def view_rects(panel):
    """(width px, height px, px per column, px per row) of each heatmap's view, from the widgets."""
    rects = []
    for plot in panel.plot_items:
        box = plot.getViewBox()
        rect = panel.plots.mapFromScene(box.sceneBoundingRect()).boundingRect()
        (x0, x1), (y0, y1) = box.viewRange()
        rects.append((rect.width(), rect.height(), rect.width() / (x1 - x0), rect.height() / (y1 - y0)))
    return rects


@pytest.mark.parametrize("size", [CLIENT_720, CLIENT_1080], ids=["720", "1080"])
@pytest.mark.parametrize("source", [SQUARE_900, TWO_BY_TWO], ids=["900x900", "2x2-blocks"])
def test_heatmaps_get_the_height_with_square_cells(qtbot, main_window, make_check_result, source, size):
    window = main_window
    result = make_check_result(source=source)
    show(qtbot, window, result, size)
    panel = window.jacobians
    assert_maps_get_the_height(window)
    # the whole block is in sight
    rows, cols = panel.current_block().shape
    (x0, x1), (y0, y1) = panel.plot_items[0].getViewBox().viewRange()
    assert x0 <= -0.5 and x1 >= cols - 0.5 and y0 <= -0.5 and y1 >= rows - 0.5


def test_cells_stretch_when_the_user_asks(qtbot, main_window, make_check_result):
    window = main_window
    show(qtbot, window, make_check_result(source=SQUARE_900), CLIENT_720)
    panel = window.jacobians
    qtbot.mouseClick(panel.square_cells, Qt.MouseButton.LeftButton)
    assert not panel.square_cells.isChecked()
    qtbot.waitUntil(lambda: abs(view_rects(panel)[0][2] / view_rects(panel)[0][3] - 1) > 0.1)
    (x0, x1), (y0, y1) = panel.plot_items[0].getViewBox().viewRange()
    assert x1 - x0 == pytest.approx(y1 - y0, rel=0.05)  # the block fills the view both ways
    qtbot.mouseClick(panel.square_cells, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: view_rects(panel)[0][2] == pytest.approx(view_rects(panel)[0][3], rel=0.02))


def test_banner_details_fold_into_one_line(qtbot, main_window, make_check_result):
    window = main_window
    result = make_check_result(source=TWO_BY_TWO)
    show(qtbot, window, result, CLIENT_720)
    banner = window.banner
    assert not result.passed and banner.details.text() and banner.hint.isVisible()
    # folded: the details on the headline's line, in the disclosure's tooltip; the hint under it
    assert not banner.details.isVisible() and banner.disclosure.isVisible()
    folded = banner.height()
    assert folded <= banner.headline.height() + banner.layout().spacing() + banner.hint.height() + 2
    assert "multiplied_by_grad_output" in banner.disclosure.toolTip()
    qtbot.mouseClick(banner.disclosure, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(banner.details.isVisible)
    assert banner.is_expanded() and banner.height() >= folded + banner.details.fontMetrics().height()
    # remembered for the next result, and folded again on demand
    show(qtbot, window, make_check_result(source=SQUARE_900), CLIENT_720)
    assert banner.details.isVisible()
    qtbot.mouseClick(banner.disclosure, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not banner.details.isVisible())


@pytest.mark.parametrize("size", [CLIENT_720, CLIENT_1080], ids=["720", "1080"])
def test_overview_shows_every_block_and_selects_one(qtbot, main_window, make_check_result, size):
    window = main_window
    result = make_check_result(source=TWO_BY_TWO)
    show(qtbot, window, result, size)
    panel, overview = window.jacobians, window.jacobians.overview
    assert overview.isVisible() and len(overview.buttons) == len(result.blocks) == 4
    # a row per output, a column per input; each thumbnail with its failing count
    for index, block in enumerate(result.blocks):
        button = overview.buttons[index]
        row, col, _, _ = overview.grid.getItemPosition(overview.grid.indexOf(button))
        assert (row - 1, col - 1) == (block.output, block.input)
        assert button.text() == ("✓" if block.passed else f"✗ {block.n_failing:,}")
    failing = [k for k, b in enumerate(result.blocks) if not b.passed]
    assert [(result.blocks[k].output, result.blocks[k].input) for k in failing] == [(1, 1)]  # the wrong block only
    assert panel.current_block() is result.blocks[failing[0]] and overview.current() == failing[0]
    # clicking a thumbnail shows its block; the drop-down follows
    passing = next(k for k, b in enumerate(result.blocks) if b.passed and b.shape != result.blocks[failing[0]].shape)
    with qtbot.waitSignal(panel.block_changed):
        qtbot.mouseClick(overview.buttons[passing], Qt.MouseButton.LeftButton)
    assert panel.current_block() is result.blocks[passing]
    assert panel.block_selector.currentIndex() == passing and overview.current() == passing
    assert panel.analytic_image.image.shape == result.blocks[passing].shape
    # and the drop-down moves the overview
    panel.block_selector.setCurrentIndex(failing[0])
    assert overview.current() == failing[0]
    settle(qtbot, panel)
    assert_maps_get_the_height(window)  # the overview does not cost the heatmaps their height


def tick_boxes(window, item):
    """The tick labels drawn inside pyqtgraph ``item`` (an axis or a colour bar), in window pixels."""
    view = window.jacobians.plots
    rect = view.mapFromScene(item.sceneBoundingRect()).boundingRect()
    area = rect.translated(view.viewport().mapTo(window, QPoint(0, 0)))
    boxes, _ = graphics_texts(window)
    return [b for b in boxes if b.where.startswith("tick") and area.contains(b.rect.center())]


def assert_apart(boxes, font, vertical: bool) -> None:
    """Neighbouring tick labels at least half an em apart: '-0.9-0.8-0.7' reads as one number."""
    gap = QFontMetricsF(font).horizontalAdvance("M") / 2
    key = (lambda b: b.rect.top()) if vertical else (lambda b: b.rect.left())
    ordered = sorted(boxes, key=key)
    assert ordered, "no tick label at all"
    for a, b in itertools.pairwise(ordered):
        space = b.rect.top() - a.rect.bottom() if vertical else b.rect.left() - a.rect.right()
        assert space >= gap, f"{a} and {b} are {space} px apart"


@pytest.mark.parametrize("size", [CLIENT_720, CLIENT_1080], ids=["720", "1080"])
def test_colour_bar_ticks_never_touch_on_a_3000_element_cumsum(qtbot, main_window, make_check_result, size):
    window = main_window
    show(qtbot, window, make_check_result(source=CUMSUM_3000), size)
    panel = window.jacobians
    for bar in (panel.value_bar, panel.error_bar):
        vertical = bar.axis.orientation in ("left", "right")
        assert_apart(tick_boxes(window, bar), bar.axis.style["tickFont"], vertical)
    for plot in panel.plot_items:
        axis = plot.getAxis("bottom")
        assert_apart(tick_boxes(window, axis), axis.style["tickFont"], False)


@pytest.mark.parametrize("top", [1 + 1e-9, 0.95, 3e-6, 1234.5, 7])
@pytest.mark.parametrize("length", [120, 260, 620, 900])
def test_horizontal_ticks_never_touch_whatever_the_range_and_length(qtbot, top, length):
    """A horizontal colour bar (exports and presentation draw them too) over the ranges users hit."""
    import pyqtgraph as pg
    from PySide6.QtWidgets import QVBoxLayout, QWidget

    from gradviz.app.plot_style import plain_ticks

    holder = QWidget()
    qtbot.addWidget(holder)
    view = pg.GraphicsLayoutWidget()
    QVBoxLayout(holder).addWidget(view)
    bar = pg.ColorBarItem(values=(-top, top), colorMap="CET-D1", orientation="horizontal", interactive=False)
    plain_ticks(bar.axis)
    view.addItem(bar)
    holder.resize(length, 120)
    holder.show()
    qtbot.waitExposed(holder)
    qtbot.waitUntil(lambda: bar.axis.width() > length / 2)  # laid out at the holder's width
    boxes = [b for b in graphics_texts(holder)[0] if b.where.startswith("tick")]
    assert_apart(boxes, bar.axis.style["tickFont"] or bar.axis.font(), False)


@pytest.mark.parametrize("size", [CLIENT_720, CLIENT_1080], ids=["720", "1080"])
@pytest.mark.parametrize("source", [SQUARE_900, TWO_BY_TWO], ids=["900x900", "2x2-blocks"])
def test_axes_label_only_rows_and_columns_that_exist(
    qtbot, main_window, make_check_result, source, size
):
    """A square 900x900 block in a tall view was labelled "-800 … 1800" down the grey above and
    below it; a 5-row block "-2 … 6". Every block of both results, at both window sizes."""
    window = main_window
    result = make_check_result(source=source)
    show(qtbot, window, result, size)
    panel = window.jacobians
    for index, block in enumerate(result.blocks):
        if panel.current_block() is not block:
            with qtbot.waitSignal(panel.block_changed):
                panel.block_selector.setCurrentIndex(index)
            settle(qtbot, panel)
        rows, cols = block.shape
        for plot in panel.plot_items:
            for name, count in (("left", rows), ("bottom", cols)):
                ticks = [int(b.text) for b in tick_boxes(window, plot.getAxis(name))]
                assert ticks, f"{name} axis of a {rows}x{cols} block has no tick label"
                assert all(0 <= t < count for t in ticks), f"{name} ticks {ticks} of a {rows}x{cols} block"

"""The banner's running clock: the headline counts every tick, its style is set only when it
changes (a new style sheet re-polishes the label, which a window waiting for a busy worker paid
ten times a second)."""

from __future__ import annotations

from gradviz.app.panels.verdict_banner import VerdictBanner


def test_the_running_clock_changes_the_text_and_not_the_style(qtbot):
    banner = VerdictBanner()
    qtbot.addWidget(banner)
    banner.show_running("LinearFunction")
    running_style = banner.headline.styleSheet()
    sheets: list[str] = []
    set_sheet = banner.headline.setStyleSheet
    banner.headline.setStyleSheet = lambda sheet: (sheets.append(sheet), set_sheet(sheet))
    first = banner.headline.text()
    qtbot.waitUntil(lambda: banner.headline.text() != first, timeout=5_000)  # the clock ticked
    assert banner.headline.text().startswith("Running LinearFunction… ")
    assert sheets == [] and banner.headline.styleSheet() == running_style
    banner.show_message("Passed.", "passed")  # another state: its own style, set at once
    assert len(sheets) == 1 and banner.headline.styleSheet() != running_style

"""The Output panel holds a bounded amount of text however many bursts a flood arrives in."""

from __future__ import annotations

from gradviz.app.panels.output_panel import FLUSH_MS, KEEP, MAX_SHOWN, OutputPanel


def test_many_bursts_never_hold_more_than_max_shown(qtbot):
    panel = OutputPanel()
    qtbot.addWidget(panel)
    line = "x" * 99 + "\n"
    for burst in range(8):  # each burst is flushed before the next: the slow machine's case
        panel.append(line * (KEEP // 100 + 50) + f"burst {burst}\n")
        qtbot.waitUntil(lambda b=burst: f"burst {b}" in panel.shown_text(), timeout=5 * FLUSH_MS + 5_000)
        assert len(panel.shown_text()) <= MAX_SHOWN
    shown = panel.shown_text()
    assert shown.startswith("[… ") and "characters not shown" in shown.splitlines()[0]
    assert shown.rstrip().endswith("burst 7")
    hidden = int(shown.split()[1].replace(",", ""))
    assert hidden + len(shown) >= panel.received - len(shown.splitlines()[0]) - 8  # the count is honest

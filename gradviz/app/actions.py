"""The window's menus and keyboard shortcuts as one table: each action's name, text, keys and
menu. The window supplies what each name does (``slots``); this module builds the menus from
the table, so a new command is one row here and one entry in the window's ``slots``.

Help → Keyboard shortcuts lists these with ``KEYS_HELP``, the keys that are not menu items.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMainWindow, QMenu

from gradviz.app.panels import check_options

_standard = QKeySequence.StandardKey
MENUS = (("file", "&File"), ("edit", "&Edit"), ("view", "&View"), ("run", "&Run"), ("help", "&Help"))
PRESENTATION_TIP = "Full screen, controls hidden, large high-contrast text (F11)"
WORST_KEY = "F8"  # next problem, as in IDEs; Ctrl+W closes the window (StandardKey.Close)
ERROR_KEY = "Ctrl+Shift+E"  # the failed run's line: marking it never moves the cursor, this does


@dataclass(frozen=True)
class ActionSpec:
    """One menu item: ``name`` is the key in ``MainWindow.actions`` and in the window's slots."""

    name: str
    text: str
    keys: tuple[str | QKeySequence.StandardKey, ...]
    menu: str
    checkable: bool = False


ACTIONS = (
    ActionSpec("new", "&New Function…", (_standard.New,), "file"),
    ActionSpec("open", "&Open…", (_standard.Open,), "file"),
    ActionSpec("save", "&Save", (_standard.Save,), "file"),
    ActionSpec("save_as", "Save &As…", (_standard.SaveAs,), "file"),
    ActionSpec("open_session", "Open Sess&ion…", ("Ctrl+Shift+O",), "file"),
    ActionSpec("save_session", "Save Sessio&n…", ("Ctrl+Alt+S",), "file"),
    ActionSpec("export", "&Export figures and data…", ("Ctrl+E",), "file"),
    # Ctrl+W as everywhere else, also where the platform's Close is Ctrl+F4 first (Windows)
    ActionSpec("close", "&Close window", (_standard.Close, "Ctrl+W"), "file"),
    ActionSpec("quit", "&Quit", (_standard.Quit,), "file"),
    ActionSpec("undo", "&Undo", (_standard.Undo,), "edit"),
    ActionSpec("redo", "&Redo", (_standard.Redo,), "edit"),
    ActionSpec("find", "&Find…", (_standard.Find,), "edit"),
    ActionSpec("copy_markdown", "Copy worst cells as &Markdown", ("Ctrl+Shift+M",), "edit"),
    ActionSpec("copy_latex", "Copy worst cells as &LaTeX", ("Ctrl+Shift+L",), "edit"),
    ActionSpec("presentation", "&Presentation mode", ("F11",), "view", checkable=True),
    ActionSpec("bigger", "&Larger text", ("Ctrl+=", "Ctrl++", _standard.ZoomIn), "view"),
    ActionSpec("smaller", "&Smaller text", ("Ctrl+-", _standard.ZoomOut), "view"),
    ActionSpec("reset_text", "&Normal text size", ("Ctrl+0",), "view"),
    ActionSpec("contrast", "&High contrast", ("Ctrl+Shift+H",), "view", checkable=True),
    ActionSpec("quiz", "&Quiz: hide the bug comments", ("Ctrl+Shift+Q",), "view", checkable=True),
    ActionSpec("reset_layout", "&Reset layout", (), "view"),
    ActionSpec("run", "&Run", ("Ctrl+Return", "Ctrl+Enter"), "run"),
    ActionSpec("cancel", "&Cancel", ("Esc",), "run"),
    ActionSpec("check_options", "gradcheck &options…", (check_options.SHORTCUT,), "run"),
    ActionSpec("worst", "Go to &worst cell", (WORST_KEY,), "run"),
    ActionSpec("error_line", "Go to &error line", (ERROR_KEY,), "run"),
    ActionSpec("step_next", "Backward step &forward", ("Alt+Right",), "run"),
    ActionSpec("step_prev", "Backward step &back", ("Alt+Left",), "run"),
    ActionSpec("next_example", "&Next example", ("Ctrl+PgDown",), "run"),
    ActionSpec("prev_example", "&Previous example", ("Ctrl+PgUp",), "run"),
    ActionSpec("shortcuts", "&Keyboard shortcuts", ("F1",), "help"),
    ActionSpec("guide", "&User guide", (), "help"),
    ActionSpec("about", "&About gradviz", (), "help"),
)

KEYS_HELP = (  # keys that are not menu items, for Help → Keyboard shortcuts
    ("Tab / Shift+Tab", "indent / dedent (four spaces) in the editor"),
    ("Home", "first non-blank character of the line, then its start"),
    ("Enter", "new line, indented; one level more after a ':'"),
    ("← → ↑ ↓, Page Up / Down", "step through the backward (when the graph has the focus)"),
    ("double-click a heatmap", "reset the zoom"),
    ("mouse wheel / drag", "zoom / pan the heatmaps and the graph"),
    (
        "Presentation: Page Down, →, ↓, Space",
        "next: run, the worst cell, the backward steps, the memory study, the next example",
    ),
    ("Presentation: Page Up, ←, ↑", "back: the previous backward step, the previous example"),
    ("Presentation: Esc", "leave presentation mode (when nothing runs)"),
)


def key_sequences(keys: tuple[str | QKeySequence.StandardKey, ...]) -> list[QKeySequence]:
    """Each key once, in order (a standard key is its platform's first binding, which may be
    a key also listed by name): Qt would call one key bound twice ambiguous."""
    unique: dict[str, QKeySequence] = {}
    for key in keys:
        sequence = QKeySequence(key)
        unique.setdefault(sequence.toString(), sequence)
    return list(unique.values())


def build_actions(
    window: QMainWindow, slots: Mapping[str, Callable[[], object]]
) -> tuple[dict[str, QMenu], dict[str, QAction]]:
    """The menu bar's menus and one QAction per row of ACTIONS, connected to ``slots[name]``
    and added to the window (so its keys work while the menu bar is hidden). KeyError for a row
    without a slot: every menu item does something."""
    menus = {name: window.menuBar().addMenu(title) for name, title in MENUS}
    actions: dict[str, QAction] = {}
    for spec in ACTIONS:
        action = QAction(spec.text, window)
        action.setShortcuts(key_sequences(spec.keys))
        action.setCheckable(spec.checkable)
        action.triggered.connect(slots[spec.name])
        menus[spec.menu].addAction(action)
        window.addAction(action)
        actions[spec.name] = action
    actions["presentation"].setToolTip(PRESENTATION_TIP)
    return menus, actions

"""The action table alone, on a bare QMainWindow: every row becomes a menu item bound to its
slot, no two actions share a key, Ctrl+W closes the window as everywhere else, and a row without a
slot is an error, not a dead menu item."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QMainWindow

from gradviz.app.actions import ACTIONS, MENUS, build_actions


@pytest.fixture
def window(qtbot):
    window = QMainWindow()
    qtbot.addWidget(window)
    return window


def test_each_row_is_a_menu_item_that_calls_its_slot(window):
    called: list[str] = []

    def slot(name: str):
        return lambda: called.append(name)

    slots = {spec.name: slot(spec.name) for spec in ACTIONS}
    menus, actions = build_actions(window, slots)
    assert list(menus) == [name for name, _title in MENUS] and list(actions) == [spec.name for spec in ACTIONS]
    for spec in ACTIONS:
        assert actions[spec.name] in menus[spec.menu].actions() and actions[spec.name] in window.actions()
        actions[spec.name].trigger()
    assert called == [spec.name for spec in ACTIONS]
    assert {name for name, action in actions.items() if action.isCheckable()} == {"presentation", "contrast", "quiz"}


def test_no_two_actions_share_a_key(window):
    _menus, actions = build_actions(window, {spec.name: lambda: None for spec in ACTIONS})
    owner: dict[str, str] = {}
    for name, action in actions.items():
        for key in {key.toString() for key in action.shortcuts()}:  # ZoomIn is Ctrl++ again on some systems
            assert owner.setdefault(key, name) == name, f"{key} is {owner[key]} and {name}"
    assert len(owner) > 25


def keys_of(action) -> set[str]:
    return {key.toString() for key in action.shortcuts()}


def test_ctrl_w_closes_the_window_and_the_worst_cell_has_a_key_of_its_own(window):
    _menus, actions = build_actions(window, {spec.name: lambda: None for spec in ACTIONS})
    close = {key.toString() for key in QKeySequence.keyBindings(QKeySequence.StandardKey.Close)}
    assert "Ctrl+W" in close  # every platform's Close (macOS's Cmd+W is Qt's Ctrl+W)
    assert {"Ctrl+W", QKeySequence(QKeySequence.StandardKey.Close).toString()} == keys_of(actions["close"])
    assert len(actions["close"].shortcuts()) == len(keys_of(actions["close"]))  # no key bound twice
    assert keys_of(actions["worst"]) and not keys_of(actions["worst"]) & close
    assert [name for name, action in actions.items() if "Ctrl+W" in keys_of(action)] == ["close"]


def test_a_row_without_a_slot_is_refused(window):
    slots = {spec.name: lambda: None for spec in ACTIONS if spec.name != "run"}
    with pytest.raises(KeyError, match="run"):
        build_actions(window, slots)

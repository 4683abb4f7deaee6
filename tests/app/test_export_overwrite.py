"""File → Export into a folder that already holds figures of
the same names asks first, listing them; No keeps every file as it was and writes nothing."""

from __future__ import annotations

from PySide6.QtWidgets import QMessageBox

from tests.app.test_main_window import RUN_TIMEOUT, answer_modal, run_and_wait


def test_export_asks_before_replacing_and_no_keeps_the_files(qtbot, main_window, tmp_path):
    window = main_window
    with qtbot.waitSignal(window.memory_shown, timeout=RUN_TIMEOUT):
        run_and_wait(qtbot, window)
    first = window.export_figures(tmp_path, data=True)  # an empty folder: no question
    assert tmp_path / "linear_jacobians.png" in first and tmp_path / "linear_jacobians.npz" in first
    mine = {p: f"the user's own {p.name}".encode() for p in (tmp_path / "linear_jacobians.png", tmp_path / "linear_jacobians.npz")}
    for path, data in mine.items():
        path.write_bytes(data)
    asked = []

    def say_no(dialog):
        asked.append(dialog.text())
        dialog.button(QMessageBox.StandardButton.No).click()

    answer_modal(qtbot, say_no)
    assert window.export_figures(tmp_path, data=True) == []
    assert all(path.read_bytes() == data for path, data in mine.items())  # nothing replaced
    assert len(asked) == 1 and "linear_jacobians.png" in asked[0] and "linear_jacobians.npz" in asked[0]
    assert f"{len(first)} file(s)" in asked[0]  # every file of the export is already there

    def say_yes(dialog):
        dialog.button(QMessageBox.StandardButton.Yes).click()

    answer_modal(qtbot, say_yes)
    again = window.export_figures(tmp_path, data=True)
    assert sorted(again) == sorted(first)
    assert (tmp_path / "linear_jacobians.png").read_bytes().startswith(b"\x89PNG")

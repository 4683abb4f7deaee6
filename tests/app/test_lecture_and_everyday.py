"""A lecture and everyday use in the real window: presentation mode and the clicker, the step-through marking the
row one backward call fills, stale results, copying the worst cells, the Help menu, the library
tree following the document."""

from __future__ import annotations

import re

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from tests.app.test_main_window import RUN_TIMEOUT, run_and_wait
from tests.app.text_sizes import text_sizes


def test_presentation_mode_and_the_clicker_walk_a_lecture(qtbot, main_window):
    window = main_window
    window.load_builtin("buggy_linear_transpose")
    qtbot.keyClick(window, Qt.Key.Key_F11)
    assert window.in_presentation() and window.isFullScreen()
    assert not window.menuBar().isVisible() and not window.run_bar.isVisible()
    assert window.view.scale >= 1.3 and window.view.high_contrast
    assert "#000000" in window.styleSheet()  # black on white, framed controls
    stage = window.presentation.stage
    assert stage.current == "code" and window.editor.isVisible() and not window.jacobians.isVisible()
    # Ctrl+= : one scale for all (texts below the 24 px floor stay at it until the scale lifts them)
    def largest() -> float:
        return max(pixels for pixels, _ in text_sizes(stage))

    scale, before = window.view.scale, largest()
    qtbot.keyClick(window, Qt.Key.Key_Equal, Qt.KeyboardModifier.ControlModifier)
    assert window.view.scale > scale and largest() >= before
    for _ in range(3):  # the floor holds small bases at 24 px until the scale lifts them past it
        if largest() > before:
            break
        qtbot.keyClick(window, Qt.Key.Key_Equal, Qt.KeyboardModifier.ControlModifier)
    assert largest() > before
    # the clicker: the code to its end, run (the Jacobians alone), the worst cell, the backward
    # one node at a time
    with qtbot.waitSignal(window.result_shown, timeout=RUN_TIMEOUT):
        for _ in range(10):
            qtbot.keyClick(stage, Qt.Key.Key_PageDown)
            if stage.current != "code":
                break
    assert stage.current == "jacobians" and window.jacobians.isVisible() and not window.editor.isVisible()
    block = window.jacobians.current_block()
    qtbot.keyClick(stage, Qt.Key.Key_PageDown)
    assert window.jacobians.highlighted_cell() == block.worst
    qtbot.keyClick(stage, Qt.Key.Key_PageDown)
    assert stage.current == "backward" and window.graph.isVisible()
    step, steps = window.graph.step_position()
    assert step == 0 and steps == 3
    # your Function's node: one backward call with a one-hot grad_output fills one row of J
    row = block.worst[0]
    assert window.jacobians.marked_rows() == (row, row)
    assert f"row {row} of J" in window.jacobians.readout.text()
    info = window.graph.node_info.text()  # what flows: the gradient in, the gradients out
    assert "gradient in:" in info and "gradients out:" in info
    assert not window.graph.prev_button.isEnabled() and window.graph.next_button.isEnabled()
    qtbot.keyClick(stage, Qt.Key.Key_PageUp)  # before the first step: back to the Jacobians
    assert stage.current == "jacobians"
    qtbot.keyClick(stage, Qt.Key.Key_PageUp)  # the code (at its backward)
    for _ in range(10):  # Page Up reads the code up to its top; before it, the previous example
        qtbot.keyClick(stage, Qt.Key.Key_PageUp)
        if window.document.builtin_name != "buggy_linear_transpose":
            break
    assert stage.current == "code" and window.document.builtin_name != "buggy_linear_transpose"
    # the quiz hides the answer; Esc (nothing running) leaves and puts everything back
    window.load_builtin("buggy_linear_transpose")
    window.actions["quiz"].trigger()
    assert window.editor.editor.quiz_hidden_lines() and stage.controls["quiz"].isChecked()
    window.actions["quiz"].trigger()
    qtbot.keyClick(window, Qt.Key.Key_Escape)
    assert not window.in_presentation() and window.menuBar().isVisible()
    assert window.view.scale == 1.0 and not window.view.high_contrast and window.styleSheet() == ""
    assert window.docks["Autograd graph"].widget() is window.graph and window.jacobians.isVisible()
    assert window.editor.isVisible()  # every lent panel back in its dock, shown


def test_stale_results_are_marked_and_the_banner_counts_a_run(qtbot, main_window):
    window = main_window
    run_and_wait(qtbot, window)
    name = window.current.result.function
    assert not window.jacobians.is_stale() and window.stale_reason() is None
    window.editor.editor.moveCursor(window.editor.editor.textCursor().MoveOperation.End)
    qtbot.keyClicks(window.editor.editor, "# edited")
    assert window.jacobians.is_stale()
    assert window.stale_reason().startswith(f"From the previous run of {name}: the code has changed")
    assert window.banner.stale_text() == window.stale_reason()
    window.editor.editor.undo()
    assert window.stale_reason() is None
    window.load_builtin("mul_constant")  # another example: the old result is marked, not hidden
    assert window.jacobians.is_stale() and f"previous run of {name}" in window.stale_reason()
    window.run()
    qtbot.waitUntil(lambda: re.fullmatch(r"Running.*… \d+\.\d s", window.banner.headline.text()) is not None)
    qtbot.waitSignal(window.result_shown, timeout=RUN_TIMEOUT).wait()
    assert not window.jacobians.is_stale()


def test_copy_the_worst_cells_as_markdown_and_latex(qtbot, main_window):
    window = main_window
    window.load_builtin("buggy_linear_transpose")
    run_and_wait(qtbot, window)
    block = window.jacobians.current_block()
    window.actions["copy_markdown"].trigger()
    markdown = QApplication.clipboard().text()
    lines = markdown.splitlines()
    assert lines[0].startswith("| cell | analytic") and len(lines) == 2 + 10
    assert lines[2].endswith("fails |") and f"| {block.max_abs_error:.2g} |" in lines[2]  # the worst first
    assert sum(line.endswith("fails |") for line in lines[2:]) == min(10, block.n_failing)
    window.actions["copy_latex"].trigger()
    latex = QApplication.clipboard().text()
    assert latex.startswith(r"\begin{tabular}") and latex.count(r"\\") == 1 + 10


def test_help_lists_the_shortcuts(qtbot, main_window):
    window = main_window
    qtbot.keyClick(window, Qt.Key.Key_F1)
    qtbot.waitUntil(lambda: getattr(window, "shortcuts_dialog", None) is not None)
    dialog = window.shortcuts_dialog
    qtbot.waitUntil(dialog.isVisible)
    text = dialog.findChild(type(window.banner.headline)).text()
    for words in ("F11", "Presentation mode", "Page Down", "Ctrl+F", "Find", "Tab / Shift+Tab", "F8", "Go to worst cell"):
        assert words in text
    dialog.close()


def test_the_library_tree_follows_the_document_and_arrow_keys_load(qtbot, main_window):
    window = main_window
    picker = window.picker
    assert picker.current_document().text(0).startswith("linear")
    window.load_builtin("kill_head")
    assert picker.current_document().text(0).startswith("kill_head")
    picker.tree.setFocus()
    qtbot.keyClick(picker.tree, Qt.Key.Key_Down)
    qtbot.waitUntil(lambda: window.document.builtin_name != "kill_head")
    assert picker.current_document().text(0).startswith(window.document.builtin_name)
    window.source.new_function()  # new text: nothing in the tree is the document
    assert picker.current_document() is None
    window.load_builtin("linear")  # the untouched template is not worth a "Save changes?"
    assert window.asked == []
    window.source.new_function()
    qtbot.keyClicks(window.editor.editor, "x")  # an edited one is
    window.load_builtin("linear")
    assert len(window.asked) == 1 and "untitled" in window.asked[0][2]

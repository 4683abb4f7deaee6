"""The real window, driven the way a person drives it: clicks, keys, the real worker process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
import torch
from PySide6.QtCore import Qt

from gradviz.app.memory_display import read_memory
from gradviz.core.loader import choose_function, load_file
from gradviz.schema.library import builtin_functions, find_builtin
from gradviz.schema.report import cell_readout
from tests.app.focus import has_focus
from tests.paths import ARTIFACTS, ROOT
from tests.real_world.oracle import gradcheck_passes

RUN_TIMEOUT = 60_000


def run_and_wait(qtbot, window, signal_name="result_shown"):
    with qtbot.waitSignal(getattr(window, signal_name), timeout=RUN_TIMEOUT):
        qtbot.keyClick(window, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)


def gradcheck_verdict(name: str) -> bool:
    loaded = load_file(find_builtin(name))
    fn = choose_function(loaded)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        args = loaded.example_inputs(torch.device("cpu"), torch.float64)
    return gradcheck_passes(fn.apply, args, eps=1e-6, atol=1e-5, rtol=1e-3)


def test_gui_process_does_not_import_torch():
    code = "import sys; import gradviz.app.main_window, gradviz.app.launch; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT), "QT_QPA_PLATFORM": "offscreen"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


@pytest.mark.slow
def test_default_example_runs_and_screenshot(qtbot, main_window):
    window = main_window
    assert window.document.builtin_name == "linear"
    with qtbot.waitSignal(window.memory_shown, timeout=RUN_TIMEOUT):
        run_and_wait(qtbot, window)
    assert window.current.result.passed and window.banner.state == "passed"
    assert [b.shape for b in window.current.result.blocks] == [(600, 400), (600, 600)]
    from gradviz.app.window_layout import default_size

    assert (window.width(), window.height()) == default_size()  # the screen's size, up to 1680x1020
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / "main_window.png"
    assert window.grab().save(str(path))
    assert path.stat().st_size > 10_000


@pytest.mark.parametrize("entry", builtin_functions(), ids=lambda e: e.name)
def test_pick_each_builtin_and_run(qtbot, main_window, entry):
    window = main_window
    item = next(i for i in window.picker.builtin_items() if i.data(0, Qt.ItemDataRole.UserRole) == entry.name)
    window.picker.tree.scrollToItem(item)
    rect = window.picker.tree.visualItemRect(item)
    qtbot.mouseClick(window.picker.tree.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert window.document.builtin_name == entry.name
    run_and_wait(qtbot, window)
    assert window.current.result.passed == gradcheck_verdict(entry.name)
    assert window.banner.state == ("passed" if window.current.result.passed else "failed")
    loaded = load_file(entry.path)
    fn = choose_function(loaded)
    assert window.current.result.function == fn.__name__


def replace_in_editor(window, old: str, new: str) -> None:
    text = window.editor.text()
    assert "\n" not in old and text.count(old) == 1
    cursor = window.editor.editor.document().find(old)
    assert not cursor.isNull()
    cursor.insertText(new)


def test_edit_and_rerun_fixes_the_bug(qtbot, main_window):
    window = main_window
    window.load_builtin("buggy_square_factor")
    run_and_wait(qtbot, window)
    assert not window.current.result.passed
    replace_in_editor(window, "return grad_output * x  #", "return 2 * grad_output * x  #")
    assert window.modified and window.windowTitle().startswith("buggy_square_factor.py (built-in)*")
    run_and_wait(qtbot, window)
    assert window.current.result.passed


def test_syntax_error_marks_line_and_keeps_text(qtbot, main_window):
    window = main_window
    replace_in_editor(window, "output = input.mm(weight.t())", "output = input.mm(weight.t()")
    before = window.editor.text()
    run_and_wait(qtbot, window, "run_failed")
    line = next(k for k, text in enumerate(before.splitlines(), 1) if "input.mm(weight.t()" in text)
    assert window.editor.editor.error_line in (line, line + 1)  # Python may report the next line
    assert window.editor.message.isVisible() and "Syntax error" in window.editor.message.text()
    assert window.editor.text() == before
    window.editor.editor.undo()
    run_and_wait(qtbot, window)
    assert window.current.result.passed


def test_error_in_backward_names_the_line(qtbot, main_window):
    window = main_window
    replace_in_editor(window, "grad_input = grad_output.mm(weight)", "grad_input = grad_output.mm(weigth)")
    run_and_wait(qtbot, window, "run_failed")
    line = next(k for k, text in enumerate(window.editor.text().splitlines(), 1) if "weigth" in text)
    assert window.editor.editor.error_line == line
    assert "NameError" in window.editor.message.text()


IGNORES_GRAD_OUTPUT = '''
import torch
from torch.autograd import Function

class SumOfSquares(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x * x).sum()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x  # never multiplied by g: right Jacobian (one row, g = 1), wrong backward

def example_inputs(device, dtype):
    return (torch.randn(5, device=device, dtype=dtype, requires_grad=True),)
'''


def test_banner_names_a_failing_check_beside_a_passing_jacobian(qtbot, main_window):
    window = main_window
    window.editor.set_text(IGNORES_GRAD_OUTPUT)
    run_and_wait(qtbot, window)
    assert not window.current.result.passed and all(b.passed for b in window.current.result.blocks)
    assert window.banner.state == "failed" and "multiplied_by_grad_output" in window.banner.headline.text()
    details = window.banner.details.text()
    assert "✗ <b>multiplied_by_grad_output</b>: backward is not multiplied by grad_output" in details
    assert "✗ <b>undefined_output_grads</b>" in details  # undefined grads arrive as zeros: the same bug
    assert details.endswith("✓ reentrant")  # passing checks share one line


HANG = '''
import torch
from torch.autograd import Function

class Hang(Function):
    @staticmethod
    def forward(ctx, x):
        while True:
            pass

    @staticmethod
    def backward(ctx, g):
        return g
'''


def test_cancel_stops_a_hung_run_and_next_run_works(qtbot, main_window):
    window = main_window
    original = window.editor.text()
    hang = HANG.replace("        while True:", "        print('looping', flush=True)\n        while True:")
    window.editor.set_text(hang)
    old_pid = window.worker.pid
    window.run()
    qtbot.waitUntil(lambda: "looping" in window.worker.output_text, timeout=RUN_TIMEOUT)
    qtbot.mouseClick(window.run_bar.cancel_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not window.worker.busy and window.run_bar.run_button.isEnabled(), timeout=1500)
    assert has_focus(window.editor.editor)  # back to the code after Cancel
    assert window.editor.text() == hang
    # the run's own process was stopped; the worker serves on, and says where the code hung
    assert window.worker.pid == old_pid and window.worker.is_ready
    loop = {k for k, text in enumerate(hang.splitlines(), 1) if "while True" in text or "pass" in text}
    qtbot.waitUntil(lambda: window.editor.editor.error_line in loop, timeout=2000)
    line = window.editor.editor.error_line
    assert window.banner.headline.text() == "Cancelled." and f"line {line}" in window.banner.details.text()
    window.editor.set_text(original)
    run_and_wait(qtbot, window)
    assert window.current.result.passed


def test_killed_worker_is_replaced_and_window_survives(qtbot, main_window):
    window = main_window
    text = window.editor.text()
    window.editor.set_text(HANG)
    window.run()
    qtbot.waitUntil(lambda: window.worker.busy)
    with qtbot.waitSignal(window.run_failed, timeout=RUN_TIMEOUT) as blocker:
        os.kill(window.worker.pid, signal.SIGKILL)
    assert "worker process" in blocker.args[0]
    assert window.banner.state == "error"
    assert window.editor.text() == HANG
    qtbot.waitUntil(lambda: window.worker.is_ready, timeout=RUN_TIMEOUT)
    window.editor.set_text(text)
    run_and_wait(qtbot, window)
    assert window.current.result.passed


def test_switch_blocks_and_hover_readout(qtbot, main_window):
    window = main_window
    window.load_builtin("buggy_linear_bias_axis")
    run_and_wait(qtbot, window)
    panel = window.jacobians
    block = panel.current_block()
    assert not block.passed and window.current.result.inputs[block.input].name == "bias"  # first failing block
    panel.set_block(0)
    block = panel.current_block()
    assert (block.output, block.input) == (0, 0)
    panel.hover_cell(3, 2)
    qtbot.waitUntil(lambda: panel.readout.text() == cell_readout(window.current.result, block, 3, 2))


def test_float32_run_shows_gradcheck_advice(qtbot, main_window):
    window = main_window
    window.run_bar.dtype.setCurrentText("float32")
    assert window.run_settings.dtype == "float32"
    run_and_wait(qtbot, window)
    assert window.current.result.dtype == "float32"
    assert "float64" in window.banner.details.text()
    assert "&#x27;" not in window.banner.details.text()  # quotes are not escaped twice


def test_cuda_is_disabled_with_a_reason_without_cuda(main_window):
    combo = main_window.run_bar.device
    names = [combo.itemData(k) for k in range(combo.count())]
    assert names[0] == "cpu"
    if not torch.cuda.is_available():
        k = names.index("cuda")
        assert not combo.model().item(k).isEnabled()
        assert "CUDA" in combo.itemData(k, Qt.ItemDataRole.ToolTipRole)


def test_open_and_save_files(qtbot, main_window, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QFileDialog

    window = main_window
    source = find_builtin("kill_head").read_text(encoding="utf-8")
    path = tmp_path / "mine.py"
    path.write_text(source, encoding="utf-8")
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(path), ""))
    with qtbot.waitSignal(window.source.loaded, timeout=10_000):  # read off the GUI thread
        window.actions["open"].trigger()
    assert window.editor.text() == source and window.document.path == path
    assert str(path) in [window.picker._groups["Recent files"].child(k).toolTip(0)
                         for k in range(window.picker._groups["Recent files"].childCount())]
    replace_in_editor(window, "return result, None", "return grad_output, None")
    qtbot.keyClick(window, Qt.Key.Key_S, Qt.KeyboardModifier.ControlModifier)
    assert path.read_text(encoding="utf-8") == window.editor.text()
    assert not window.modified
    run_and_wait(qtbot, window)
    assert not window.current.result.passed  # the saved edit broke backward: the gradient leaks


def test_memory_panel_is_measured_at_launch_and_on_request(qtbot, main_window):
    from gradviz.core.memory import conv_bn_study

    window = main_window
    with qtbot.waitSignal(window.memory_shown, timeout=RUN_TIMEOUT):
        run_and_wait(qtbot, window)
    options = window.memory.options()
    study = window.memory.result().study  # the worker's dict, read once into the typed study
    expected = conv_bn_study(
        options["layers"], tuple(options["shape"]), options["out_channels"], options["kernel"],
        options["device"], options["dtype"],
    )
    for variant in ("unfused", "fused"):
        assert study.variants[variant].saved_bytes == expected.variants[variant].saved_bytes
    window.memory.layers_spin.setValue(2)
    with qtbot.waitSignal(window.memory_shown, timeout=RUN_TIMEOUT):
        qtbot.mouseClick(window.memory.measure_button, Qt.MouseButton.LeftButton)
    assert window.memory.result().study.layers == 2
    # a study that cannot be read is shown as an error in the panel, not a crash: the controller reads
    # the worker's answer and sends one it cannot read as memory_failed, with the reason (test_run_controller)
    _, error = read_memory({"study": {"layers": 2}, "sweep": []})
    window.controller.memory_failed.emit(error)
    assert window.memory.result() is None
    assert window.memory.message_text().startswith("The memory study could not be read")


def test_graph_panel_shows_the_checked_function(qtbot, main_window):
    from gradviz.core.graph import graph_of_source

    window = main_window
    window.load_builtin("fused_conv_bn")
    run_and_wait(qtbot, window)
    expected = graph_of_source(load_file(find_builtin("fused_conv_bn"))).to_dict()
    assert [n.name for n in window.current.graph.nodes] == [n["name"] for n in expected["nodes"]]
    assert f"{len(expected['nodes'])} nodes" in window.graph.summary.text()
    custom = next(n for n in expected["nodes"] if n["kind"] == "custom")
    assert window.graph.selected_node() == custom["id"]
    assert window.graph.details.rowCount() == len(custom["saved"])


def answer_modal(qtbot, answer) -> None:
    """Call ``answer(dialog)`` on the next modal dialog, as a person would fill it in."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    def poll():
        dialog = QApplication.activeModalWidget()
        if dialog is None:
            QTimer.singleShot(20, poll)
        else:
            answer(dialog)

    QTimer.singleShot(0, poll)


def test_export_figures_writes_three_pngs_and_the_data(qtbot, main_window, tmp_path):
    window = main_window
    with qtbot.waitSignal(window.memory_shown, timeout=RUN_TIMEOUT):
        run_and_wait(qtbot, window)

    def fill(dialog):
        dialog.folder.setText(str(tmp_path))
        dialog.accept()

    answer_modal(qtbot, fill)
    qtbot.keyClick(window, Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)
    written = sorted(p.name for p in tmp_path.glob("*.png"))
    assert written == ["linear_graph.png", "linear_jacobians.png", "linear_memory.png"]
    assert all((tmp_path / name).stat().st_size > 5_000 for name in written)
    assert (tmp_path / "linear_jacobians.npz").is_file()
    assert len(list(tmp_path.glob("linear_analytic_*.csv"))) == len(window.current.result.blocks)
    # the next export dialog starts in the folder used last
    seen = []

    def look(dialog):
        seen.append(dialog.folder.text())
        dialog.reject()

    answer_modal(qtbot, look)
    window.actions["export"].trigger()
    assert seen == [str(tmp_path)]


def test_export_to_a_missing_folder_says_so(qtbot, main_window, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QMessageBox

    window = main_window
    run_and_wait(qtbot, window)
    warnings = []
    monkeypatch.setattr(QMessageBox, "warning", lambda *a, **k: warnings.append(a[2]))
    missing = tmp_path / "no" / "such" / "folder"
    assert window.export_figures(missing) == []
    assert len(warnings) == 1 and str(missing) in warnings[0]
    assert not missing.exists()


def test_export_figures_as_svg_pdf_and_png_at_a_chosen_size_with_the_caption(qtbot, main_window, tmp_path):
    from xml.etree import ElementTree

    from PySide6.QtGui import QImage

    window = main_window
    window.load_builtin("buggy_linear_transpose")
    run_and_wait(qtbot, window)
    assert not window.current.result.passed
    written = window.export_figures(tmp_path, names=("jacobians", "graph"), formats=("svg", "pdf", "png"), size=(1280, 720))
    assert sorted(p.suffix for p in written) == [".pdf", ".pdf", ".png", ".png", ".svg", ".svg"]
    svg = (tmp_path / "buggy_linear_transpose_jacobians.svg").read_text(encoding="utf-8")
    root = ElementTree.fromstring(svg)  # well-formed
    assert root.tag.endswith("svg")
    words = " ".join(t.strip() for t in root.itertext() if t.strip())
    assert "LinearFunction" in words and "FAILED" in words  # the caption: Function and verdict
    assert (tmp_path / "buggy_linear_transpose_graph.pdf").read_bytes().startswith(b"%PDF")
    image = QImage(str(tmp_path / "buggy_linear_transpose_jacobians.png"))
    assert (image.width(), image.height()) == (1280, 720)


def test_ctrl_w_closes_the_window_after_asking_about_unsaved_changes(qtbot, main_window, monkeypatch):
    """Ctrl+W is File → Close window, as in every other program (Go to worst cell has a key of
    its own): it goes through the same unsaved-changes prompt as closing the window does."""
    from PySide6.QtWidgets import QMessageBox

    window = main_window
    assert "Ctrl+W" not in {key.toString() for key in window.actions["worst"].shortcuts()}
    window.editor.editor.insertPlainText("# mine\n")
    answers = iter([QMessageBox.StandardButton.Cancel, QMessageBox.StandardButton.Discard])
    asked = []
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: asked.append(a[1]) or next(answers))
    qtbot.keyClick(window.editor.editor, Qt.Key.Key_W, Qt.KeyboardModifier.ControlModifier)
    assert asked == ["Unsaved changes"] and window.isVisible()  # Cancel: the window and the text stay
    assert window.editor.text().startswith("# mine\n")
    qtbot.keyClick(window.editor.editor, Qt.Key.Key_W, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=10_000)
    assert asked == ["Unsaved changes", "Unsaved changes"]

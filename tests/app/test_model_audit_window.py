"""File → Audit a model… in a real window with the real worker: the model view shows every custom
node call painted by its verdict (the wrong one red with its failing count), and a click on it shows
that node's check in the banner and maps as a single check's result is shown."""

from __future__ import annotations

import os

from PySide6.QtCore import Qt

from gradviz.app.why_link import NODE_RERUNS
from gradviz.schema.requests import NodeRef, Region
from tests.paths import ROOT

MODELS = ROOT / "tests" / "core" / "audit_models.py"
WRONG = "rest → BadRMSNormFn, call 2 of 2"
RIGHT = "first → BadRMSNormFn, call 1 of 2"


def test_audit_shows_the_wrong_node_red_and_opens_its_maps(qtbot, main_window):
    window = main_window
    qtbot.waitUntil(lambda: window.worker.is_ready, timeout=30_000)
    link = window.audit_link
    if os.environ.get("GRADVIZ_SCREENSHOT"):
        window.resize(1920, 1080)
        qtbot.waitUntil(lambda: window.width() == 1920, timeout=5_000)
    assert link.audit(MODELS, "TwoNorms")
    qtbot.waitUntil(lambda: WRONG in link.view.buttons, timeout=60_000)
    wrong, right = link.view.buttons[WRONG], link.view.buttons[RIGHT]
    assert "#c62828" in wrong.styleSheet() and "failing cell" in wrong.text()
    assert "#2e7d32" in right.styleSheet() and "passed" in right.text()
    assert link.view.title.text().startswith("FAILED")
    qtbot.mouseClick(wrong, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(
        lambda: window.current.result is not None and not window.current.result.passed, timeout=20_000
    )
    assert window.current.result.function == "BadRMSNormFn"
    qtbot.waitUntil(lambda: window.banner.state == "failed", timeout=5_000)
    assert "out0[" in window.banner.headline.text() + window.banner.details.text()  # names the failing cell
    # the node's own graph at its captured inputs, stepped through as a check's
    graph = window.graph._graph
    assert graph is not None and any(n.name == "BadRMSNormFnBackward" for n in graph.nodes)
    window.graph.start_walk()
    first = window.graph.step_position()
    window.graph.step(1)
    assert window.graph.step_position() != first and first[1] == len(graph.backward_order) > 1
    # Why? sweeps this node at its inputs in the model, never the editor's code as if it were the node
    with qtbot.waitSignal(window.why.shown, timeout=60_000):
        pass
    sweep = window.why.panel.result()
    assert sweep is not None and sweep.function == "BadRMSNormFn" and sweep.verdict.value == "backward_wrong"
    assert "backward wrong" in window.why.panel.headline_text().lower()
    assert not window.why.panel.rerun_button.isEnabled() and window.why.panel.rerun_button.toolTip() == NODE_RERUNS
    # and a region of its block is of this node too
    sent = []
    run_region = window.controller.run_region
    window.controller.run_region = lambda request: (sent.append(request), run_region(request))[1]
    window.jacobians.region_requested.emit(Region(0, 1, 0, 0, 2, 2))
    assert sent and sent[0].code.node == NodeRef(2, link._shown[1][1]["inputs"])
    assert sent[0].code.function == "TwoNorms" and sent[0].code.path == str(MODELS)
    if os.environ.get("GRADVIZ_SCREENSHOT"):  # resources/screenshots/model_audit.png, at 1920x1080
        window.grab().save(os.environ["GRADVIZ_SCREENSHOT"])


MANY_CALLS = '''
import torch

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad

class Many(torch.nn.Module):
    def forward(self, x):
        for k in range(2000):
            x = Square.apply(x * 0.5 + k * 1e-3)
        return x

def example_inputs(device, dtype):
    return (torch.randn(6, device=device, dtype=dtype, requires_grad=True),)
'''


def test_cancel_stops_the_audit_after_its_progress_shows(qtbot, main_window, tmp_path):
    window = main_window
    path = tmp_path / "many.py"
    path.write_text(MANY_CALLS, encoding="utf-8")
    qtbot.waitUntil(lambda: window.worker.is_ready, timeout=30_000)
    view = window.audit_link.view
    assert window.audit_link.audit(path, "Many")
    qtbot.waitUntil(lambda: view.progress.value() > 0 and view.progress.maximum() == 2000, timeout=60_000)
    qtbot.waitUntil(lambda: "left" in view.progress.format(), timeout=20_000)  # the time left, from the rate
    assert "of 2000" in view.progress.format()
    qtbot.mouseClick(view.cancel, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not window.controller.audit_running, timeout=20_000)
    assert "ancel" in view.title.text() and view.buttons == {} and view.cancel.isHidden()

"""File → Audit a model…: the audit job sent through the run controller, its answer drawn in the
model view, and a clicked node's check result shown in the Jacobian panel, banner and graph as a
single check's is (the worker wrote each node's arrays as a check's; the result loader reads them)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QFileDialog, QInputDialog

from gradviz.app.panels.model_view import ModelView
from gradviz.app.result_loader import LoadedCheck, ResultLoader
from gradviz.schema.graph import GraphModel
from gradviz.schema.requests import AuditRequest, CheckRequest, CodeSource, NodeRef

TITLE = "Model audit"
GRAPH_NOTE = "This node's graph could not be drawn."


class AuditLink(QObject):
    """Owns the model view dock and the audit's requests for one window."""

    def __init__(self, window: Any) -> None:
        """``window``: the main window (its controller, run settings, panels and menus)."""
        super().__init__(window)
        self.window = window
        self.view = ModelView()
        self.dock = window.add_panel(TITLE, self.view, scroll=False)
        self.loader = ResultLoader(window.jacobians.view_pixels, self)
        self._audit = 0
        self._sent: AuditRequest | None = None  # the audit sent last
        self._shown: tuple[AuditRequest, list[dict]] | None = None  # the audit on screen and its node documents
        self._node: dict = {}  # the document of the node being opened
        controller = window.controller
        controller.audit_started.connect(lambda request: setattr(self, "_audit", request))
        controller.audit_progress.connect(self.view.set_progress)
        controller.audit_finished.connect(self._on_audit_finished)
        controller.audit_failed.connect(
            lambda _request, error: self.view.set_error(error.get("message") or "The audit failed.")
        )
        self.view.cancel_requested.connect(controller.cancel_audit)
        self.view.node_chosen.connect(self.open_node)
        self.loader.loaded.connect(self._on_loaded)
        self.loader.failed.connect(lambda _request, message: self.view.set_error(message))
        self.action = QAction("Audit a &model…", window)
        self.action.triggered.connect(self.audit_dialog)
        file_menu = window.actions["quit"].associatedObjects()[0]
        file_menu.insertAction(window.actions["quit"], self.action)

    def audit_dialog(self) -> None:
        """Ask for a file and the model's class or factory name, then audit it."""
        path, _ = QFileDialog.getOpenFileName(self.window, "Audit a model", "", "Python files (*.py)")
        if not path:
            return
        name, ok = QInputDialog.getText(
            self.window, "Audit a model", "nn.Module class or factory in the file:"
        )
        if ok and name.strip():
            self.audit(Path(path), name.strip())

    def audit(self, path: Path, name: str) -> bool:
        """Send the audit of ``name`` in ``path`` with the run bar's settings; False if the worker is busy."""
        settings = self.window.run_settings
        request = AuditRequest(
            code=CodeSource(path=str(path), function=name),
            settings=settings.check_settings(),
            timeout=settings.timeout or None,
            node_files=True,  # each checked node's arrays as a check's: a clicked node opens as one
        )
        sent = self.window.controller.run_audit(request)
        if sent:
            self._sent = request
        self.dock.show()
        self.dock.raise_()
        if sent:
            self.view.set_running(f"{path.name}:{name}")
        else:
            self.view.set_error("The worker is busy: audit again once the run ends.")
        return sent

    def _on_audit_finished(self, _request: int, payload: dict) -> None:
        if self._sent is not None:
            self._shown = (self._sent, payload.get("nodes", []))
        self.view.set_audit(payload)

    def node_request(self, document: dict) -> CheckRequest | None:
        """What the node's sweep and regions are of: the audited model's code with this node's
        place and input digest, and the audit's settings (None: not a node of the audit shown)."""
        if self._shown is None or not document.get("inputs"):
            return None
        audit, documents = self._shown
        place = next((k for k, other in enumerate(documents, start=1) if other == document), None)
        if place is None:
            return None
        code = replace(audit.code, node=NodeRef(place, document["inputs"]))
        return CheckRequest(code=code, settings=audit.settings, timeout=audit.timeout)

    def open_node(self, document: dict) -> None:
        """The node's check result, read from its files, shown as a check's."""
        if document.get("files"):
            self._node = document
            self.loader.load(self._audit, document["files"])

    def _on_loaded(self, request: int, loaded: LoadedCheck) -> None:
        """The node's result and its graph at its captured inputs (stepping through its backward
        works as for a check); a graph the worker could not draw says why."""
        graph, error = None, self._node.get("graph_error") or GRAPH_NOTE
        if self._node.get("graph") is not None:
            try:
                graph, error = GraphModel.from_dict(self._node["graph"]), None
            except (KeyError, TypeError, ValueError) as exc:
                error = f"{GRAPH_NOTE} ({exc})"
        self.window.current.set(
            loaded.result, request=request, graph=graph, graph_error=error, displays=loaded.displays,
            node=self.node_request(self._node),
        )  # fmt: skip

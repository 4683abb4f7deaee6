"""File → Export and Edit → Copy worst cells: every figure of the window (the heatmaps, the
graph, the memory study, the Why? sweep) as PNG, SVG or PDF with a caption carrying the Function,
the verdict and the hint; the numbers behind the Jacobians as CSV and .npz; the worst cells as a
Markdown or LaTeX table. Dialogs start in the folder used last.

Built from the collaborators it reads (the settings file, the result and document on screen, the
panels that draw), not from the window (tests give it fakes)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QSettings
from PySide6.QtWidgets import QApplication, QDialog, QMessageBox, QWidget

from gradviz.app import tables
from gradviz.app.figures import mark_ui_only
from gradviz.app.state import SourceDocument
from gradviz.schema.report import verdict_line
from gradviz.schema.results import LargeBlock
from gradviz.schema.units import counted

if TYPE_CHECKING:
    from gradviz.app.state import CurrentResult
    from gradviz.schema.results import CheckResult

FOLDER_KEY = "folders/last"  # where the export and session dialogs start
# a panel's items that show the UI's state, not the data: the rows the backward step-through
# marks on the analytic map (JacobianPanel.row_band) and the frames of the cell under the mouse
# (JacobianPanel.highlight_rects). Figures are drawn without them.
UI_ONLY_ITEMS = ("row_band", "highlight_rects")


def data_paths(result: CheckResult, folder: Path, stem: str) -> list[Path]:
    """The files ``tables.write_arrays`` writes, named before anything is written."""
    csv = [folder / f"{stem}_{kind}_{tables.block_key(b)}.csv" for b in result.blocks for kind in tables.ARRAYS]
    return [*csv, folder / f"{stem}_jacobians.npz"]


def file_stem(document: SourceDocument, default: str) -> str:
    """The name files written for ``document`` start with: its file's stem, else ``default``
    (never "<editor>", which Windows refuses in a file name)."""
    return document.path.stem if document.path is not None and document.path.stem else default


def copied_cells(copied: int, failing: int) -> str:
    """What a copy holds, in the true count: "the 3 failing cells", "the 10 worst of 57 failing cells"."""
    if copied == failing:
        return f"the {counted(failing, 'failing cell')}"
    return f"the {copied:,} worst of {counted(failing, 'failing cell')}"


class Exports(QObject):
    """The window's figures by name, and the dialogs and files that carry them elsewhere."""

    def __init__(
        self,
        window: QWidget,
        *,
        settings: QSettings,
        current: CurrentResult,
        document: SourceDocument,
        jacobians: Any,
        graph: Any,
        memory: Any,
        say: Callable[[str, int], None],
    ) -> None:
        """``window``: the parent of the dialogs; ``jacobians``, ``graph``, ``memory``: the panels
        whose figures need a result drawn; ``say(text, ms)``: a line in the status bar."""
        super().__init__(window)
        self.window, self.settings, self.current, self.document = window, settings, current, document
        self.jacobians, self.graph, self.memory, self._say = jacobians, graph, memory, say
        self._figure_panels: dict[str, QWidget] = {}

    def register_figures(self, panel: QWidget | object) -> None:
        """Offer ``panel``'s figures in the export dialog: it has ``figures()`` (names) and
        ``export(name, path, size=, caption=)`` (the Why? panel can join the same way)."""
        for name in panel.figures():
            self._figure_panels[name] = panel
        for attr in UI_ONLY_ITEMS:
            found = getattr(panel, attr, None)
            for item in found if isinstance(found, list) else [found] if found is not None else []:
                mark_ui_only(item)

    def last_folder(self) -> str:
        folder = self.settings.value(FOLDER_KEY, "")
        return folder if isinstance(folder, str) and folder and Path(folder).is_dir() else str(Path.home())

    def remember_folder(self, path: Path) -> None:
        folder = path if path.is_dir() else path.parent
        self.settings.setValue(FOLDER_KEY, str(folder))

    def _figures_available(self) -> dict[str, bool]:
        drawn = {
            self.jacobians: self.jacobians.current_block() is not None,
            self.graph: bool(self.current.graph and self.current.graph.nodes),
            self.memory: self.memory.result() is not None,
        }
        return {
            name: drawn[panel] if panel in drawn else getattr(panel, "has_figure", lambda: True)()
            for name, panel in self._figure_panels.items()
        }

    def export_dialog(self) -> None:
        # imported when first asked for, not at window start
        from gradviz.app.export_dialog import ExportDialog

        result = self.current.result
        data = result is not None and bool(result.blocks or result.large_blocks)
        dialog = ExportDialog(self.window, self.last_folder(), self._figures_available(), data=data)
        if dialog.exec() != QDialog.DialogCode.Accepted:
            return
        choice = dialog.choice()
        self.remember_folder(choice.folder)
        self.export_figures(choice.folder, names=choice.names, formats=choice.formats, size=choice.size, data=choice.data)

    def export_figures(
        self,
        folder: Path,
        *,
        names: tuple[str, ...] = ("jacobians", "graph", "memory"),
        formats: tuple[str, ...] = ("png",),
        size: tuple[int, int] = (1920, 1080),
        data: bool = False,
        overwrite: bool = False,
    ) -> list[Path]:
        """Write each figure in each format (for slides, with a caption), and with ``data`` the
        numbers behind the Jacobians as CSV and .npz; a figure with nothing to draw is skipped.

        Files of the same names already in ``folder`` are listed in a question first; nothing is
        written unless the user agrees (or ``overwrite``)."""
        stem = file_stem(self.document, "gradviz")
        available = self._figures_available()
        skipped = [name for name in names if not available.get(name, False)]
        figures = {
            Path(folder) / f"{stem}_{name}.{fmt}": name for name in names if name not in skipped for fmt in formats
        }
        with_data = data and self.current.result is not None
        planned = [*figures, *(data_paths(self.current.result, Path(folder), stem) if with_data else [])]
        existing = [p for p in planned if p.exists() or p.is_symlink()]
        if existing and not overwrite and not self.confirm_replace(Path(folder), existing):
            self._say(f"Nothing exported: {counted(len(existing), 'file')} in {folder} kept", 8000)
            return []
        written: list[Path] = []
        try:
            for path, name in figures.items():
                self._figure_panels[name].export(name, str(path), size=size, caption=self.figure_caption(name))
                written.append(path)
            if with_data:
                written += tables.write_arrays(self.current.result, Path(folder), stem)
        except OSError as exc:
            QMessageBox.warning(self.window, "Cannot export", str(exc))
        if written:
            note = f" (nothing to draw yet: {', '.join(skipped)})" if skipped else ""
            self._say(f"Exported {counted(len(written), 'file')} to {folder}{note}", 8000)
        return written

    def confirm_replace(self, folder: Path, existing: list[Path]) -> bool:
        """Ask before replacing files: each is named (the first 12 in the text, all under Show
        Details); No, the default, keeps them all and writes nothing."""
        shown = "\n".join(p.name for p in existing[:12])
        more = f"\n… and {len(existing) - 12} more" if len(existing) > 12 else ""
        box = QMessageBox(
            QMessageBox.Icon.Warning,
            "Replace files?",
            f"{folder} already holds {len(existing)} file(s) this export would replace:\n\n{shown}{more}\n\n"
            "Replace them?",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            self.window,
        )
        box.setObjectName("replace_files")
        box.setDetailedText("\n".join(str(p) for p in existing))
        box.setDefaultButton(QMessageBox.StandardButton.No)
        return box.exec() == QMessageBox.StandardButton.Yes

    def figure_caption(self, name: str) -> str:
        """The Function, the verdict and the hint, under a figure."""
        if name.startswith("memory"):
            return ""  # the memory panel's own headline
        result = self.current.result
        if result is None:
            return ""
        lines = [f"{result.function} from {self.source_words()} · {result.device}, {result.dtype}", verdict_line(result)]
        block = self.jacobians.current_block()
        if block is not None:
            lines += [f"Hint ({result.block_title(block)}): {h}" for h in block.hints]
        if self.jacobians.is_stale():
            lines.append("(from an earlier run: the editor has changed since)")
        return "\n".join(lines)

    def source_words(self) -> str:
        """Where the Function came from, in words: "the built-in example buggy_silu_term.py",
        "model.py", "unsaved editor text"."""
        document = self.document
        if document.target:
            return document.target[0]
        if document.builtin_name:
            return f"the built-in example {document.builtin_name}.py"
        return document.path.name if document.path else "unsaved editor text"

    def copy_worst_cells(self, style: str = "markdown") -> str:
        """The failing cells of the block on screen, worst first, as a Markdown or LaTeX table on
        the clipboard; the status bar says how many fail in all. Nothing fails: nothing copied."""
        result = self.current.result
        block = self.jacobians.current_block() or self.jacobians.current_large_block()
        if result is None or block is None:
            self._say("No result to copy yet: run a check first.", 5000)
            return ""
        rows = tables.worst_cells(result, block)
        title = result.block_title(block)
        if not rows:  # nothing fails: an empty table would say nothing, and the old clipboard stays
            how = "its search found" if isinstance(block, LargeBlock) else "there is"  # a search may stop early
            self._say(f"Nothing copied: {how} no failing cell in {title}.", 5000)
            return ""
        text = tables.markdown_table(rows) if style == "markdown" else tables.latex_table(rows)
        QApplication.clipboard().setText(text)
        self._say(f"Copied {copied_cells(len(rows), tables.n_failing(block))} of {title} as {style}", 5000)
        return text


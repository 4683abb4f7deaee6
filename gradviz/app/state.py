"""Small state objects, one per concern, each emitting a signal per change (napari/glue style).

Views take a state in ``__init__``, subscribe there, update their widgets with signals
blocked, and write back through the state's setters.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal


@dataclass
class RunValues:
    """What a run is asked to do; the defaults are gradcheck's."""

    device: str = "cpu"
    dtype: str = "float64"
    eps: float = 1e-6
    atol: float = 1e-5
    rtol: float = 1e-3
    seed: int = 0
    timeout: int = 120  # seconds before a run is stopped as hung; 0: never (gradviz's, not the core's)


class RunSettings(QObject):
    """The run bar's state: device, dtype, tolerances, seed."""

    changed = Signal(str)  # the field's name

    def __init__(self, values: RunValues | None = None) -> None:
        super().__init__()
        self._values = values or RunValues()

    def get(self, name: str) -> Any:
        return getattr(self._values, name)

    def set(self, name: str, value: Any) -> None:
        if getattr(self._values, name) != value:
            setattr(self._values, name, value)
            self.changed.emit(name)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self._values)

    def update(self, values: dict[str, Any]) -> None:
        known = {f.name for f in fields(RunValues)}
        for name, value in values.items():
            if name in known:
                self.set(name, type(getattr(self._values, name))(value))


class SourceDocument(QObject):
    """The code being debugged: its file (if any) and the Function chosen in it."""

    path_changed = Signal()
    function_changed = Signal()

    def __init__(self) -> None:
        super().__init__()
        self._path: Path | None = None
        self._function: str | None = None
        self.builtin_name: str | None = None  # set while the text is an unmodified built-in

    @property
    def path(self) -> Path | None:
        return self._path

    def set_path(self, path: Path | None, *, builtin: str | None = None) -> None:
        self.builtin_name = builtin
        if path != self._path:
            self._path = path
            self.path_changed.emit()

    @property
    def function(self) -> str | None:
        return self._function

    def set_function(self, name: str | None) -> None:
        if name != self._function:
            self._function = name
            self.function_changed.emit()

    @property
    def filename(self) -> str:
        """What tracebacks call the code: the file path, or <editor> for unsaved text."""
        return str(self._path) if self._path else "<editor>"

    @property
    def title(self) -> str:
        if self.builtin_name:
            return f"{self.builtin_name}.py (built-in)"
        return self._path.name if self._path else "untitled.py"

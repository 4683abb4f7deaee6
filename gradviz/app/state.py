"""Small state objects, one per concern, each emitting a signal per change (napari/glue style).

Views take a state in ``__init__``, subscribe there, update their widgets with signals blocked,
and write back through the state. Settings are the schema's own types (``CheckSettings``,
``MemoryOptions``): the defaults, the validation and the fields themselves live there; a state's
``<field>_changed`` signals and properties are made from those fields (``SchemaState``).
"""

from __future__ import annotations

import dataclasses
import os
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

from PySide6.QtCore import QObject, Signal

from gradviz.app.code_version import CodeVersion
from gradviz.schema.errors import SettingsError
from gradviz.schema.graph import GraphModel
from gradviz.schema.requests import CheckRequest
from gradviz.schema.results import CheckResult
from gradviz.schema.settings import (
    GRADCHECK_FLAGS,
    RUN_TIMEOUT_S,
    TOLERANCE_FIELDS,
    CheckSettings,
    MemoryOptions,
    dtype_defaults,
)

PREVIOUS_RUN = "From the previous run of {name}"  # how every stale note on a panel opens


def _field(name: str) -> property:
    return property(lambda self: self.get(name), lambda self, value: self.set(name, value), doc=name)


QT_TYPES: dict[Any, type] = {str: str, float: float, bool: bool}  # any other value travels as object:
# a seed reaches 2**64 - 1 (more than a Qt int holds), a shape is a tuple, a limit may be None


class _SchemaStateType(type(QObject)):  # type: ignore[misc]
    """Builds each state class's ``<field>_changed`` signal and property from its schema's fields.

    Qt reads a class's signals when the class is made, so they are added to its namespace here,
    before the QObject metaclass sees it (glue's callback properties, napari's EventedModel: a
    field is declared once, in the schema, and its change signal comes with it).
    """

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any):
        schema = namespace.get("schema")
        if schema is not None:
            hints = typing.get_type_hints(schema)
            extra = namespace.get("EXTRA_FIELDS", {})
            names = namespace.get("FIELDS") or tuple(f.name for f in dataclasses.fields(schema))
            namespace["FIELDS"] = tuple(names)
            for field_name in names:
                kind = extra[field_name] if field_name in extra else hints[field_name]
                namespace.setdefault(f"{field_name}_changed", Signal(QT_TYPES.get(kind, object)))
                namespace.setdefault(field_name, _field(field_name))
        return super().__new__(mcs, name, bases, namespace, **kwargs)


class SchemaState(QObject, metaclass=_SchemaStateType):
    """A schema dataclass behind signals: ``<field>_changed`` and a property for each of its fields.

    ``FIELDS`` (default: every field of ``schema``, in its order) are the ones this state carries;
    ``EXTRA_FIELDS`` names the state's own values beyond the schema, with their types. ``set``
    raises SettingsError for a value the schema refuses; ``update`` (values from a session or
    QSettings) drops such a value and says why, so a bad file is never fatal.
    """

    schema: ClassVar[type]
    FIELDS: ClassVar[tuple[str, ...]]
    EXTRA_FIELDS: ClassVar[dict[str, type]] = {}
    changed = Signal(str)  # the name of a field that changed, after that field's own signal

    def __init__(self, values: Any = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._values = values if values is not None else self.schema()
        self._values.validate()
        self._types = {**typing.get_type_hints(self.schema), **self.EXTRA_FIELDS}

    def get(self, name: str) -> Any:
        return getattr(self._values, name)

    def set(self, name: str, value: Any) -> None:
        """Validate ``value`` with the schema, store it and emit ``<name>_changed`` if it differs."""
        if name not in self.FIELDS:
            raise SettingsError(f"{name} is not a setting here (known: {', '.join(self.FIELDS)}).")
        if self._types.get(name) is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        candidate = self.schema.from_dict({**self._values.to_dict(), name: value})  # validates
        if getattr(candidate, name) != getattr(self._values, name):
            self._values = candidate
            self._emit(name)

    def set_together(self, values: Mapping[str, Any]) -> None:
        """Set several values at once, validated as one (gradcheck's options depend on one
        another: check_backward_ad=False needs check_forward_ad=True, whichever arrives first);
        SettingsError leaves every value as it was. A signal for each value that changed."""
        unknown = [name for name in values if name not in self.FIELDS]
        if unknown:
            raise SettingsError(f"{unknown[0]} is not a setting here (known: {', '.join(self.FIELDS)}).")
        candidate = self.schema.from_dict({**self._values.to_dict(), **values})  # validates
        old, self._values = self._values, candidate
        for name in values:
            if getattr(candidate, name) != getattr(old, name):
                self._emit(name)

    def _emit(self, name: str) -> None:
        getattr(self, f"{name}_changed").emit(self.get(name))
        self.changed.emit(name)

    def update(self, values: Mapping[str, Any], *, from_text: bool = False) -> list[str]:
        """Apply each value that passes validation; return a sentence for each one dropped.

        ``from_text``: the values are strings (QSettings' INI files), parsed by the field's type.
        """
        dropped = []
        for name, value in values.items():
            try:
                self.set(name, self._parse(name, value) if from_text else value)
            except SettingsError as exc:
                dropped.append(exc.message)
        return dropped

    def to_dict(self) -> dict[str, Any]:
        """The fields in FIELDS as JSON-ready values (a session's ``run`` or ``memory``)."""
        values = self._values.to_dict()
        return {name: values[name] if name in values else self.get(name) for name in self.FIELDS}

    def _parse(self, name: str, value: Any) -> Any:
        kind = self._types.get(name, str)
        if kind is bool and value in ("true", "false"):  # QSettings' INI files hold booleans as text
            return value == "true"
        if not isinstance(value, str) or kind not in (int, float):
            return value
        try:
            return kind(value)
        except ValueError:
            raise SettingsError(f"{name} must be a number, not {value!r}.") from None


class RunSettings(SchemaState):
    """The run bar's state: the CheckSettings a run is sent with, and the window's time limit.

    ``FIELDS`` chooses which of CheckSettings' fields the window sets (the others keep their
    defaults) and the order they are restored in; their signals, types and checks are the schema's.
    eps, atol and rtol follow the dtype (``dtype_defaults``, as the CLI's do) unless the user
    typed one: a typed value stays, per field, when the dtype changes (``typed``). Values set by
    the program (``set``) are not typed; ``type_value`` is the user's own, and ``update`` (a
    session, the saved settings, a target's settings) counts a value as typed when it is not the
    dtype's default.

    gradcheck's own options (``GRADCHECK_FLAGS``: fast_mode, check_batched_grad, ...) are run
    settings too: they go with each request, persist and make a result stale like the others.
    They come after the tolerances in ``FIELDS`` with check_forward_ad before check_backward_ad, so
    values restored one at a time onto the defaults always pass ``CheckSettings.validate``.
    ``masked`` is not among them: it changes only sparse inputs, and gradviz refuses a sparse
    input that needs a gradient (the window could not show what it does).
    """

    schema = CheckSettings
    FIELDS = (
        "device", "dtype", "eps", "atol", "rtol", "seed", "timeout",
        "fast_mode", "check_forward_ad", "check_backward_ad", "check_batched_grad", "check_batched_forward_grad",
    )  # fmt: skip
    EXTRA_FIELDS: ClassVar[dict[str, type]] = {"timeout": int}  # the window's time limit: whole seconds, 0: never

    def __init__(
        self, values: CheckSettings | None = None, timeout: int = RUN_TIMEOUT_S, parent: QObject | None = None
    ) -> None:
        super().__init__(values, parent)
        self._timeout = check_run_timeout(timeout)
        own = dtype_defaults(self._values.dtype)
        self._typed = {name for name in TOLERANCE_FIELDS if getattr(self._values, name) != getattr(own, name)}

    @property
    def typed(self) -> frozenset[str]:
        """The tolerances the user typed: they stay when the dtype changes."""
        return frozenset(self._typed)

    def type_value(self, name: str, value: Any) -> None:
        """The user typed ``value`` for ``name``: it stays through dtype changes."""
        self.set(name, value)
        if name in TOLERANCE_FIELDS:
            self._typed.add(name)

    def forget_typed(self, names: Any = TOLERANCE_FIELDS) -> None:
        """``names`` follow the dtype again, taking its defaults now."""
        self._typed -= set(names)
        self._follow_dtype()

    def _follow_dtype(self) -> None:
        own = dtype_defaults(self._values.dtype)
        for name in TOLERANCE_FIELDS:
            if name not in self._typed:
                super().set(name, getattr(own, name))

    def update(self, values: Mapping[str, Any], *, from_text: bool = False) -> list[str]:
        """As ``SchemaState.update``, the dtype first; a tolerance that is not the dtype's default
        counts as typed, one that is follows the dtype."""
        problems: dict[str, list[str]] = {}  # the dtype goes first (it brings its tolerances); the sentences keep the given order
        flags = {name: values[name] for name in GRADCHECK_FLAGS if name in values and name in self.FIELDS}
        if len(flags) > 1:  # gradcheck's options together, whatever their order; one at a time if refused
            try:
                self.set_together({n: self._parse(n, v) if from_text else v for n, v in flags.items()})
                problems.update({name: [] for name in flags})
            except SettingsError:
                pass
        for name in sorted((n for n in values if n not in problems), key=lambda name: name != "dtype"):
            problems[name] = super().update({name: values[name]}, from_text=from_text)
        dropped = [sentence for name in values for sentence in problems[name]]
        own = dtype_defaults(self._values.dtype)
        for name in TOLERANCE_FIELDS:
            if name in values:
                if getattr(self._values, name) != getattr(own, name):
                    self._typed.add(name)
                else:
                    self._typed.discard(name)
        return dropped

    def check_settings(self) -> CheckSettings:
        """A copy of what the next run is asked to do."""
        return replace(self._values)

    def get(self, name: str) -> Any:
        return self._timeout if name == "timeout" else super().get(name)

    def set(self, name: str, value: Any) -> None:
        if name == "dtype":
            changed = value != self._values.dtype
            super().set(name, value)
            if changed:
                self._follow_dtype()
        elif name != "timeout":
            super().set(name, value)
        elif check_run_timeout(value) != self._timeout:
            self._timeout = value
            self._emit("timeout")


def check_run_timeout(value: object) -> int:
    """The window's run time limit: whole seconds, 0 meaning never."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SettingsError(f"timeout must be a whole number of seconds >= 0 (0: never), not {value!r}.")
    return value


class MemorySettings(SchemaState):
    """The memory panel's state: the conv-BN stack the next measurement builds."""

    schema = MemoryOptions

    def options(self) -> MemoryOptions:
        """A copy of the options the next measurement is asked for."""
        return replace(self._values)


class CurrentResult(QObject):
    """The check on screen: its CheckResult, the request it answered, and the graph that came with it."""

    changed = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.result: CheckResult | None = None
        self.request = 0  # the worker request the result answered; 0 before the first
        self.graph: GraphModel | None = None  # the checked Function's autograd graph
        self.graph_error: str | None = None  # why there is no graph
        self.displays: dict = {}  # display prep made off the GUI thread (gradviz.app.display)
        self.node: CheckRequest | None = None  # set when the result is an audit node's (see ``set``)

    def set(
        self,
        result: CheckResult,
        *,
        request: int,
        graph: GraphModel | None = None,
        graph_error: str | None = None,
        displays: dict | None = None,
        node: CheckRequest | None = None,
    ) -> None:
        """``node``: the result is a model audit's node, not the window's latest Run; its code
        names that node (``CodeSource.node``), so a sweep or a region of it is of that node."""
        self.result, self.request = result, request
        self.graph, self.graph_error = graph, graph_error
        self.displays = displays or {}
        self.node = node
        self.changed.emit()


@dataclass(frozen=True)
class RunSnapshot:
    """What the window showed when a check was sent (or shows now): compared, they say whether
    the result on screen still belongs to the editor."""

    code: CodeVersion | str  # a version compares without copying the editor's text
    function: str | None
    settings: tuple[tuple[str, Any], ...]  # the run bar's settings, sorted by name
    target: tuple[str, str | None] | None  # (pkg.mod:Name, inputs file) while checking a target
    title: str  # the document's title


@dataclass(frozen=True)
class ShownCheck:
    """The check on screen: what it was asked for and the Function its result is of."""

    asked: RunSnapshot
    function: str


class ShownRun(QObject):
    """What was asked and what is shown: the latest Run's request, the checks in flight, the check
    on screen and whether the last run failed. The run controller feeds it; the window and the
    Why? dock read it. Why the result on screen is stale is decided here and nowhere else.

    ``now`` returns what the window shows now (None without a window: nothing is then stale);
    ``busy`` whether a check is in flight or waiting.
    """

    changed = Signal()  # a check was sent, shown or failed: the stale reason may have changed
    stale_changed = Signal(object)  # why the result on screen is stale now (str), or None: it is current

    def __init__(
        self,
        now: Callable[[], RunSnapshot | None] | None = None,
        busy: Callable[[], bool] | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._now = now or (lambda: None)
        self._busy = busy or (lambda: False)
        self.asked: CheckRequest | None = None  # what the latest Run asked for (the Why? dock sweeps it)
        self.sent_request: CheckRequest | None = None  # what the latest check was sent with (regions use it)
        self._in_flight: dict[int, RunSnapshot | None] = {}  # request id: what the window showed when sent
        self.shown: ShownCheck | None = None
        self.failed = False  # the last run failed: the result on screen is older
        self.changed.connect(self.refresh)

    def watch(self, *signals: Any) -> None:
        """Signals that change what the window shows now (an edit, another file or Function, a
        setting): after each, the views hear the stale reason again (``stale_changed``)."""
        for signal in signals:
            signal.connect(self.refresh)

    def refresh(self, *_args: Any) -> None:
        """Say the stale reason now to the views that show it."""
        self.stale_changed.emit(self.stale_reason())

    # --- fed by the run controller -------------------------------------------------------------
    def note_asked(self, request: CheckRequest) -> None:
        """Run was pressed (or the Why? dock re-runs) with ``request``."""
        self.asked = request

    def note_sent(self, request_id: int, request: CheckRequest) -> None:
        self.sent_request = request
        self._in_flight[request_id] = self.now(keep=True)
        self.changed.emit()

    def note_shown(self, request_id: int, function: str) -> None:
        """The result of ``request_id`` (a check of ``function``) is on screen now."""
        asked = self._in_flight.pop(request_id, None)
        self.shown = ShownCheck(asked, function) if asked is not None else None
        self.failed = False
        self.changed.emit()

    def note_failed(self, request_id: int, *, error: bool) -> None:
        """The check ``request_id`` ended without a result; ``error``: it failed (not cancelled)."""
        self._in_flight.pop(request_id, None)
        self.failed = error
        self.changed.emit()

    def note_worker_died(self) -> None:
        self._in_flight.clear()
        self.failed = True
        self.changed.emit()

    # --- read by the views ---------------------------------------------------------------------
    def now(self, *, keep: bool = False) -> RunSnapshot | None:
        """What the window shows now (the Why? dock compares its own sweeps with it); ``keep``:
        to hold after the editor changes (its code is read now, once)."""
        snapshot = self._now()
        if keep and snapshot is not None and isinstance(snapshot.code, CodeVersion):
            snapshot.code.frozen()
        return snapshot

    def stale_reason(self) -> str | None:
        """Why the result on screen no longer matches the editor, in words; None when it does."""
        shown, now = self.shown, self._now()
        if shown is None or now is None:
            return None
        asked = shown.asked
        previous = PREVIOUS_RUN.format(name=shown.function)
        if self._busy():
            return f"{previous}: a new run is in flight."
        if self.failed:
            return f"{previous}: the last run failed (see above)."
        if asked.title != now.title or asked.target != now.target:
            return f"{previous} in {asked.title}: another file is in the editor."
        if asked.code != now.code:
            return f"{previous}: the code has changed since. Run (Ctrl+Enter) to update."
        if asked.function not in (now.function, None) or asked.settings != now.settings:
            return f"{previous}, with other settings. Run (Ctrl+Enter) to update."
        return None

    def is_current(self) -> bool:
        """A result of what the editor holds now is on screen."""
        return self.shown is not None and self.stale_reason() is None

    def running_name(self) -> str:
        """What the banner calls the check in flight: the chosen Function, else the one on screen
        when it is of this document, else the document."""
        now = self._now()
        if now is None:
            return ""
        if now.function:
            return now.function
        if self.shown is not None and self.shown.asked.title == now.title:
            return self.shown.function
        return now.title


def shown_name(path: Path) -> str:
    """A file's name as a title can show it: a name that is not UTF-8 (Latin-1 ``caf\\xe9.py``)
    shows its odd bytes as ``\\xe9`` instead of losing them."""
    return os.fsencode(path.name).decode("utf-8", "backslashreplace")


class SourceDocument(QObject):
    """The code being debugged: its file (if any) and the Function chosen in it."""

    path_changed = Signal()
    function_changed = Signal()

    def __init__(self) -> None:
        super().__init__()
        self._path: Path | None = None
        self._function: str | None = None
        self.builtin_name: str | None = None  # set while the text is an unmodified built-in
        # set while the window checks a Function where it lives (gradviz.show, gradviz app --target):
        # (target, inputs file); the worker imports it, the editor only describes it
        self.target: tuple[str, str | None] | None = None

    @property
    def path(self) -> Path | None:
        return self._path

    def set_path(self, path: Path | None, *, builtin: str | None = None) -> None:
        self.builtin_name = builtin
        self.target = None  # another document: no longer the target
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
        if self.target:
            return self.target[0]
        if self.builtin_name:
            return f"{self.builtin_name}.py (built-in)"
        return shown_name(self._path) if self._path else "untitled.py"

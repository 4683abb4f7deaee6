"""One dataclass per job the worker runs, shared by the window, the CLI, the API and the worker.

A request travels as one JSON object: ``{"op": ..., "id": n, "out_dir": ..., <its fields>}``.
``to_dict`` writes every field; ``from_dict`` refuses a missing or an unknown key and a value of
the wrong type, naming it, so that a sender and the worker can never drift apart silently (a key
sent under one name and read under another was a lost option nobody saw). The shared part that
says where the user's code is, ``CodeSource``, is one dataclass for every job that runs it.
``request_schema()`` is the JSON Schema of all of them; ``gradviz/schema/json/request.schema.json``
is its shipped copy (a test holds the two equal).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar, Union

from gradviz.schema.errors import SettingsError
from gradviz.schema.settings import CheckSettings, MemoryOptions, SweepOptions

ENVELOPE = ("op", "id", "out_dir")  # what the client adds around a request's own fields


@dataclass(frozen=True)
class NodeRef:
    """One custom call of a model's forward, as an audit listed it.

    ``call`` is its 1-based place in call order; ``inputs`` the digest of the arguments the audit
    captured there (``gradviz.core.audit_node.inputs_digest``). The forward is run again to find
    the call, and must give it the same arguments: a sweep or a region of a node is never of
    other inputs than the ones its check saw.
    """

    call: int
    inputs: str

    def validate(self) -> None:
        if self.call < 1:
            raise SettingsError(f"A node's call is counted from 1, not {self.call}.")


@dataclass(frozen=True)
class CodeSource:
    """Where the worker finds the user's code, and which Function in it.

    Exactly one of ``target`` (``pkg.mod:Name`` or ``file.py:Name``, imported by the worker),
    ``path`` (a file) or ``source`` (editor text) is loaded, in that order; ``path`` may come
    with a ``target`` that names a Function of that file. ``filename`` is what tracebacks call
    the code (a path, or ``<editor>``); ``parameters``: for a module factory, ``True`` checks
    all of its parameters, a tuple of names checks those. With ``node``, ``function`` names a
    model (an ``nn.Module`` class or factory, as for an audit) and the code is that node's
    Function or op at the inputs the model's forward gives it.
    """

    source: str | None = None
    filename: str | None = None
    path: str | None = None
    target: str | None = None
    inputs_path: str | None = None
    function: str | None = None
    parameters: bool | tuple[str, ...] | None = None
    node: NodeRef | None = None

    def validate(self) -> None:
        if self.source is None and self.path is None and self.target is None:
            raise SettingsError("A request names no code: give source text, a file or a target.")
        if self.node is not None and self.source is not None:
            raise SettingsError("A node of a model audit is found in a file or a target, not in editor text.")

    @property
    def shown_name(self) -> str:
        """What an error calls this code: the file, else the filename given, else ``<editor>``."""
        return self.path or self.filename or "<editor>"


@dataclass(frozen=True)
class Region:
    """A rectangle of one Jacobian block: ``rows`` rows from ``row0``, ``cols`` columns from ``col0``."""

    output: int
    input: int
    row0: int
    col0: int
    rows: int
    cols: int

    def validate(self) -> None:
        for name in ("output", "input", "row0", "col0"):
            if getattr(self, name) < 0:
                raise SettingsError(f"A region's {name} must be 0 or more, not {getattr(self, name)}.")
        for name in ("rows", "cols"):
            if getattr(self, name) < 1:
                raise SettingsError(f"A region's {name} must be 1 or more, not {getattr(self, name)}.")


@dataclass(frozen=True)
class CheckRequest:
    """Check one Function: both Jacobians, compared under gradcheck's rule.

    ``sweep``: also the eps sweep, with these options; ``arrays``: the blocks as .npy files in
    the run's folder (else inline in the summary); ``maps``: with fast_mode, when both Jacobians
    are built ("eager": always, "failing": for a failing check, "deferred": never; see
    ``core.check.check_function``); ``graph``: also the autograd graph;
    ``report``: also the report document and its table (the CLI prints them); ``save``: a folder
    the blocks are saved to (``overwrite`` replaces files there); ``batched_crash``: set by the
    worker when it runs the check again without vmap after the batched run died.
    """

    op: ClassVar[str] = "check"
    code: CodeSource
    settings: CheckSettings = field(default_factory=CheckSettings)
    timeout: float | None = None
    sweep: SweepOptions | None = None
    arrays: bool = True
    maps: str = "eager"
    graph: bool = True
    report: bool = False
    save: str | None = None
    overwrite: bool = False
    batched_crash: bool = False


@dataclass(frozen=True)
class SweepRequest:
    """The eps sweep of one Function (``gradviz sweep``, the window's Why? panel)."""

    op: ClassVar[str] = "sweep"
    code: CodeSource
    settings: CheckSettings = field(default_factory=CheckSettings)
    timeout: float | None = None
    options: SweepOptions = field(default_factory=SweepOptions)
    batched_crash: bool = False


@dataclass(frozen=True)
class GraphRequest:
    """The autograd graph of one forward: its nodes, saved tensors and backward order."""

    op: ClassVar[str] = "graph"
    code: CodeSource
    settings: CheckSettings = field(default_factory=CheckSettings)
    timeout: float | None = None


@dataclass(frozen=True)
class RegionRequest:
    """Cells of a block too large to hold, computed exactly at the inputs of the same check."""

    op: ClassVar[str] = "region"
    code: CodeSource
    region: Region
    settings: CheckSettings = field(default_factory=CheckSettings)
    timeout: float | None = None


@dataclass(frozen=True)
class MemoryRequest:
    """The conv-BN memory study; with ``sweep``, also over depths and batch sizes."""

    op: ClassVar[str] = "memory"
    options: MemoryOptions = field(default_factory=MemoryOptions)
    sweep: bool = True
    timeout: float | None = None


@dataclass(frozen=True)
class AuditRequest:
    """One forward of a model, every custom node call checked at its captured inputs.

    ``max_checks``: distinct calls checked at most (None: all); ``node_files``: each checked
    node's blocks as .npy files in the run's folder, as a check's, and its autograd graph (the
    window opens them).
    """

    op: ClassVar[str] = "audit"
    code: CodeSource
    settings: CheckSettings = field(default_factory=CheckSettings)
    timeout: float | None = None
    max_checks: int | None = None
    node_files: bool = False


Request = Union[CheckRequest, SweepRequest, GraphRequest, RegionRequest, MemoryRequest, AuditRequest]  # noqa: UP007
REQUEST_TYPES: dict[str, type] = {
    cls.op: cls for cls in (CheckRequest, SweepRequest, GraphRequest, RegionRequest, MemoryRequest, AuditRequest)
}
RUN_OPS = tuple(REQUEST_TYPES)  # each runs user code (or torch) in a fresh process


@dataclass(frozen=True)
class Envelope:
    """A request as the worker received it: its id, the folder its files go to, and the job."""

    id: int
    out_dir: str
    request: Request

    def to_message(self) -> dict[str, Any]:
        """The line that carries this request again (to a spawned run process)."""
        return to_message(self.request, self.id, self.out_dir)


def to_message(request: Request, request_id: int, out_dir: str) -> dict[str, Any]:
    """The line a client sends for ``request``.

    Args:
        request: the job.
        request_id: the client's number for it; every answer carries it.
        out_dir: the folder the worker writes the job's files to.

    Returns:
        The JSON-ready message.
    """
    return {"op": request.op, "id": request_id, "out_dir": out_dir, **to_dict(request)}


def from_message(message: dict[str, Any]) -> Envelope:
    """The typed request in a message a client sent.

    Raises:
        SettingsError: an unknown op, a missing or unknown key, or a value of the wrong type.
    """
    if not isinstance(message, dict):
        raise SettingsError(f"A request is a JSON object, not {type(message).__name__}.")
    op = message.get("op")
    cls = REQUEST_TYPES.get(op) if isinstance(op, str) else None
    if cls is None:
        raise SettingsError(f"Unknown request {op!r}; the requests are {', '.join(RUN_OPS)}.")
    request_id, out_dir = message.get("id"), message.get("out_dir")
    if not isinstance(request_id, int) or isinstance(request_id, bool) or not isinstance(out_dir, str):
        raise SettingsError(f"A {op} request needs an integer id and an out_dir folder.")
    body = {key: value for key, value in message.items() if key not in ENVELOPE}
    return Envelope(request_id, out_dir, from_dict(cls, body))


def to_dict(value: Any) -> dict[str, Any]:
    """Every field of a request (or of its parts), nested parts as dicts, tuples as lists."""
    if isinstance(value, CheckSettings | SweepOptions | MemoryOptions):
        return value.to_dict()
    return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}


def from_dict(cls: type, data: dict[str, Any]) -> Any:
    """A ``cls`` from ``data``, which must hold exactly its fields.

    Raises:
        SettingsError: naming the missing, unknown or mistyped keys.
    """
    what = _what(cls)
    if not isinstance(data, dict):
        raise SettingsError(f"{what} is a JSON object, not {type(data).__name__}.")
    names = [f.name for f in dataclasses.fields(cls)]
    missing = [name for name in names if name not in data]
    unknown = sorted(set(data) - set(names))
    if missing or unknown:
        parts = [f"missing {', '.join(missing)}" if missing else "", f"unknown {', '.join(unknown)}" if unknown else ""]
        raise SettingsError(f"{what}: {'; '.join(p for p in parts if p)}.")
    hints = typing.get_type_hints(cls)
    value = cls(**{name: _parse(hints[name], data[name], f"{what}'s {name}") for name in names})
    if hasattr(value, "validate"):
        value.validate()
    return value


def request_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a request message, one branch per op."""
    branches = []
    for op, cls in REQUEST_TYPES.items():
        body = _object_schema(cls)
        body["properties"] = {
            "op": {"const": op},
            "id": {"type": "integer"},
            "out_dir": {"type": "string"},
            **body["properties"],
        }
        body["required"] = [*ENVELOPE, *body["required"]]
        branches.append(body)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "gradviz worker request",
        "description": "One job for the worker: check, sweep, graph, region, memory or audit.",
        "oneOf": branches,
    }


def _what(cls: type) -> str:
    op = getattr(cls, "op", None)
    return f"A {op} request" if op else f"A request's {cls.__name__}"


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_dict(value)
    return value


_SETTINGS_TYPES = (CheckSettings, SweepOptions, MemoryOptions)  # strict from_dict of their own, defaults filled


def _parse(kind: Any, value: Any, where: str) -> Any:
    """``value`` read as the annotated ``kind``; SettingsError naming ``where`` if it is not one."""
    options = typing.get_args(kind) if typing.get_origin(kind) in (Union, types.UnionType) else (kind,)
    if value is None:
        if type(None) in options:
            return None
        raise SettingsError(f"{where} may not be null.")
    for option in options:
        if option is type(None):
            continue
        if option in _SETTINGS_TYPES:
            if isinstance(value, dict):
                return option.from_dict(value)
        elif isinstance(option, type) and dataclasses.is_dataclass(option):
            if isinstance(value, dict):
                return from_dict(option, value)
        elif typing.get_origin(option) is tuple:
            item = typing.get_args(option)[0]
            if isinstance(value, list) and all(_is(item, v) for v in value):
                return tuple(value)
        elif _is(option, value):
            return float(value) if option is float else value
    raise SettingsError(f"{where} cannot be {value!r}.")


def _is(kind: type, value: Any) -> bool:
    if kind is bool:
        return isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, kind)


def _object_schema(cls: type) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    return {
        "type": "object",
        "properties": {name: _schema_of(hints[name]) for name in names},
        "required": names,
        "additionalProperties": False,
    }


_JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string", type(None): "null"}


def _schema_of(kind: Any) -> dict[str, Any]:
    if typing.get_origin(kind) in (Union, types.UnionType):
        return {"anyOf": [_schema_of(option) for option in typing.get_args(kind)]}
    if kind in _SETTINGS_TYPES:  # their fields have defaults: any subset, none unknown
        return {"type": "object", "propertyNames": {"enum": [f.name for f in dataclasses.fields(kind)]}}
    if dataclasses.is_dataclass(kind):
        return _object_schema(kind)  # type: ignore[arg-type]
    if typing.get_origin(kind) is tuple:
        return {"type": "array", "items": _schema_of(typing.get_args(kind)[0])}
    return {"type": _JSON_TYPES[kind]}

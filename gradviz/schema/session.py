"""``.gradviz`` session files: the code, the chosen Function and every setting, as JSON.

A session is plain text a person can read and diff, never a pickle: opening one cannot run code.
Loading validates everything before anything is applied, so a corrupt file or one written by a
newer gradviz gives one clear message and changes nothing. The file's kind and size are checked
before a byte is read (a FIFO, a device, a directory or a 100 MB file is refused at once), and
the JSON is strict: no NaN or Infinity, no number that overflows (an integer past 64 bits, a
float past 1e308), no nesting too deep to parse.
"""

from __future__ import annotations

import json
import math
import types
import typing
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from gradviz.schema.atomic_write import os_reason, write_atomically
from gradviz.schema.errors import ErrorKind, GradvizError, UserCodeError
from gradviz.schema.json_schemas import stamp
from gradviz.schema.settings import SEED_RANGE, CheckSettings
from gradviz.schema.source_files import MAX_SOURCE_BYTES, read_regular_bytes
from gradviz.schema.strict_json import dumps
from gradviz.schema.units import format_bytes

FORMAT = "gradviz-session"
VERSION = 1
SUFFIX = ".gradviz"
MAX_SESSION_BYTES = 4 * MAX_SOURCE_BYTES  # the code, JSON-escaped, and a few settings
MAX_LAYOUT_CHARS = 2**20
INT_RANGE = (SEED_RANGE[0], SEED_RANGE[1])  # the widest integer a session holds: a seed


class SessionError(GradvizError):
    """A session file that cannot be read as a gradviz session."""

    kind = ErrorKind.SESSION


@dataclass
class Session:
    code: str
    function: str | None = None  # which Function of the code; None: the only/first one
    path: str | None = None  # the .py file the code came from, if any
    builtin: str | None = None  # the built-in example the code came from, if any
    run: dict[str, Any] = field(default_factory=dict)  # CheckSettings fields (device, dtype, eps...), timeout
    memory: dict[str, Any] = field(default_factory=dict)  # the memory panel's options
    layout: str | None = None  # the window's dock layout (Qt saveState, base64)


_TYPES: dict[str, tuple[type, ...]] = {
    "code": (str,),
    "function": (str, type(None)),
    "path": (str, type(None)),
    "builtin": (str, type(None)),
    "run": (dict,),
    "memory": (dict,),
    "layout": (str, type(None)),
}
_JSON_TYPES: dict[Any, tuple[type, ...]] = {
    float: (int, float),  # JSON writes 1.0 as 1
    int: (int,),
    str: (str,),
    bool: (bool,),
    type(None): (type(None),),
}


def _json_types(annotation: Any) -> tuple[type, ...]:
    """The JSON value types a field annotated ``annotation`` takes (``int | None``: int or null)."""
    members = typing.get_args(annotation) if isinstance(annotation, types.UnionType) else (annotation,)
    return tuple(t for member in members for t in _JSON_TYPES[member])


def run_setting_types() -> dict[str, tuple[type, ...]]:
    """What a session's ``run`` may hold: every CheckSettings field, by its type, and the window's
    time limit (whole seconds, 0: never). The values themselves are validated where they are used."""
    hints = typing.get_type_hints(CheckSettings)
    return {**{f.name: _json_types(hints[f.name]) for f in fields(CheckSettings)}, "timeout": (int,)}


_RUN_TYPES = run_setting_types()
MEMORY_TYPES: dict[str, tuple[type, ...]] = {
    "layers": (int,), "shape": (list,), "out_channels": (int,), "kernel": (int,), "device": (str,), "dtype": (str,),
}  # fmt: skip


def _four_whole_numbers(value: object) -> bool:
    return isinstance(value, list) and len(value) == 4 and all(isinstance(v, int) and not isinstance(v, bool) for v in value)


def save_session(path: str | Path, session: Session) -> None:
    """Write atomically (``atomic_write``): a crash or a full disk mid-save leaves the old file,
    never half a file."""
    path = Path(path)
    data = {"format": FORMAT, "version": VERSION, **stamp(asdict(session))}
    try:
        write_atomically(path, dumps(data, indent=2) + "\n")
    except (OSError, ValueError) as exc:
        raise SessionError(f"Cannot save the session to {path}: {os_reason(exc)}.") from None


def load_session(path: str | Path) -> Session:
    """Read and validate a session file; raises SessionError saying what is wrong."""
    path = Path(path)
    try:
        raw = read_regular_bytes(path, MAX_SESSION_BYTES, "a gradviz session")
    except UserCodeError as exc:
        raise SessionError(exc.message.replace("Cannot read", "Cannot open", 1)) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise SessionError(f"{path.name} is not a gradviz session: it is not UTF-8 text.") from None
    return session_from_dict(strict_loads(text, path.name), path.name)


def strict_loads(text: str, name: str = "the session") -> Any:
    """JSON as a session may hold it; SessionError for broken JSON, NaN or Infinity, a number
    that overflows, or nesting too deep for the parser."""

    def constant(word: str) -> None:
        raise SessionError(f"{name} holds {word}: a session's numbers must be finite.")

    def real(digits: str) -> float:
        value = float(digits)
        if not math.isfinite(value):
            raise SessionError(f"{name} holds the number {digits[:40]}, which overflows (past 1e308).")
        return value

    def whole(digits: str) -> int:
        low, high = INT_RANGE
        value = int(digits) if len(digits) <= 21 else None
        if value is None or not low <= value <= high:
            shown = digits if len(digits) <= 40 else f"{digits[:20]}… ({len(digits)} digits)"
            raise SessionError(f"{name} holds the integer {shown}, which overflows (past 64 bits).")
        return value

    try:
        return json.loads(text, parse_constant=constant, parse_float=real, parse_int=whole)
    except json.JSONDecodeError as exc:
        raise SessionError(
            f"{name} is not a valid session file: broken JSON at line {exc.lineno}, column {exc.colno} "
            f"({exc.msg})."
        ) from None
    except RecursionError:
        raise SessionError(f"{name} is not a session: its JSON is nested too deeply to read.") from None
    except (MemoryError, ValueError) as exc:
        raise SessionError(f"{name} is not a valid session file ({type(exc).__name__}).") from None


def session_from_dict(data: Any, name: str = "the session") -> Session:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise SessionError(f"{name} is not a gradviz session file (no \"format\": \"{FORMAT}\").")
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise SessionError(f"{name} has no valid version number.")
    if version > VERSION:
        raise SessionError(
            f"{name} was written by a newer gradviz (session version {version}; this one reads up to "
            f"{VERSION}). Update gradviz to open it."
        )
    if "code" not in data:
        raise SessionError(f"{name} has no \"code\".")
    if isinstance(data["code"], str) and len(data["code"].encode("utf-8", "surrogatepass")) > MAX_SOURCE_BYTES:
        raise SessionError(
            f"{name}: its code is more than the {format_bytes(MAX_SOURCE_BYTES)} gradviz reads as source code."
        )
    values: dict[str, Any] = {}
    for key, accepted in _TYPES.items():
        if key in data:
            if not isinstance(data[key], accepted) or isinstance(data[key], bool):
                raise SessionError(f"{name}: \"{key}\" has the wrong type ({type(data[key]).__name__}).")
            values[key] = data[key]
    if isinstance(values.get("path"), str) and ("\0" in values["path"] or not values["path"]):
        raise SessionError(f"{name}: \"path\" is not a file path.")
    if len(values.get("layout") or "") > MAX_LAYOUT_CHARS:
        raise SessionError(f"{name}: \"layout\" is too long to be a window layout.")
    for key, value in values.get("run", {}).items():
        allowed = _RUN_TYPES.get(key)
        if allowed is None:
            raise SessionError(f"{name}: unknown run setting \"{key}\".")
        if not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed):
            raise SessionError(f"{name}: run setting \"{key}\" has the wrong type ({type(value).__name__}).")
    for key, value in values.get("memory", {}).items():
        allowed = MEMORY_TYPES.get(key)
        if allowed is None:
            raise SessionError(f"{name}: unknown memory option \"{key}\".")
        if not isinstance(value, allowed) or isinstance(value, bool):
            raise SessionError(f"{name}: memory option \"{key}\" has the wrong type ({type(value).__name__}).")
        if key == "shape" and not _four_whole_numbers(value):
            raise SessionError(f"{name}: memory option \"shape\" must be four whole numbers N, C, H, W.")
    return Session(**values)

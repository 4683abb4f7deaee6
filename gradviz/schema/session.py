"""``.gradviz`` session files: the code, the chosen Function and every setting, as JSON.

A session is plain text a person can read and diff, never a pickle: opening one cannot run code.
Loading validates everything before anything is applied, so a corrupt file or one written by a
newer gradviz gives one clear message and changes nothing.
"""

from __future__ import annotations

import json
import types
import typing
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from gradviz.schema.errors import ErrorKind, GradvizError
from gradviz.schema.settings import CheckSettings

FORMAT = "gradviz-session"
VERSION = 1
SUFFIX = ".gradviz"


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


def save_session(path: str | Path, session: Session) -> None:
    """Write atomically: a crash mid-save leaves the old file, never half a file."""
    path = Path(path)
    data = {"format": FORMAT, "version": VERSION, **asdict(session)}
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(json.dumps(data, indent=2, allow_nan=False) + "\n", encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        raise SessionError(f"Cannot save the session to {path}: {exc.strerror or exc}.") from None


def load_session(path: str | Path) -> Session:
    """Read and validate a session file; raises SessionError saying what is wrong."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SessionError(f"{path.name} is not a gradviz session: it is not UTF-8 text.") from None
    except OSError as exc:
        raise SessionError(f"Cannot open {path}: {exc.strerror or exc}.") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SessionError(
            f"{path.name} is not a valid session file: broken JSON at line {exc.lineno}, column {exc.colno} "
            f"({exc.msg})."
        ) from None
    return session_from_dict(data, path.name)


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
    values = {}
    for key, accepted in _TYPES.items():
        if key in data:
            if not isinstance(data[key], accepted) or isinstance(data[key], bool):
                raise SessionError(f"{name}: \"{key}\" has the wrong type ({type(data[key]).__name__}).")
            values[key] = data[key]
    for key, value in values.get("run", {}).items():
        accepted = _RUN_TYPES.get(key)
        if accepted is None:
            raise SessionError(f"{name}: unknown run setting \"{key}\".")
        if not isinstance(value, accepted) or (isinstance(value, bool) and bool not in accepted):
            raise SessionError(f"{name}: run setting \"{key}\" has the wrong type ({type(value).__name__}).")
    return Session(**values)

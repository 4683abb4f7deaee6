"""What the window remembers between launches, in QSettings: its layout, the run settings, the
memory study's options, the last source, the recent files, and (off unless the user turns it
on) which files may run by themselves at launch.

Everything read back is checked before it is used: a value of the wrong type or out of range
(``timeout=abc``, ``atol=inf``, a list where a path belongs, a layout Qt cannot restore) is
dropped, named in ``dropped``, and removed from the file so it is never read or saved again.
The file itself is checked before Qt reads it (``settings_store``): a directory, a FIFO or a
huge file where it should be is set aside, and a ``@Variant(…)`` value is removed unread,
because PySide6 unpickles such a value when the file is parsed (a crafted settings file would
otherwise run code). Nothing read here can stop the window from starting.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote_from_bytes, unquote_to_bytes

from PySide6.QtCore import QSettings, QStandardPaths
from PySide6.QtWidgets import QMainWindow

from gradviz.schema.settings import TOLERANCE_FIELDS

MAX_RECENT = 8
MAX_KNOWN_RUNS = 64  # files remembered as run by the user (for run-at-launch)
MAX_PATH_CHARS = 4096
MAX_SETTINGS_BYTES = 2**20  # gradviz writes a few kB: anything bigger is not its settings
RUN_KNOWN_FILES_AT_LAUNCH = "launch/run_known_files"
KNOWN_RUNS = "launch/known_runs"
TYPED = "typed"  # run/typed: the tolerances the user typed (the others follow the dtype)
BYTES_PREFIX = "bytes:"  # a kept path whose name is not UTF-8 (its bytes follow, %-escaped)
UNSAFE_VALUE = "@Variant("  # a serialized QVariant: PySide6 unpickles the Python ones on read


def settings_path() -> Path:
    """Where QSettings("gradviz", "gradviz") keeps the user's settings on Linux."""
    config = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.GenericConfigLocation)
    return Path(config or Path.home() / ".config") / "gradviz" / "gradviz.conf"


def check_settings_file(path: Path) -> list[str]:
    """Make ``path`` safe for QSettings to read: set aside anything that is not a regular file
    of sane size, and remove the lines that hold serialized QVariants. A sentence per change."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return []
    except OSError as exc:
        return [f"the settings file {path} cannot be read ({exc.strerror or exc})"]
    why = None
    if not stat.S_ISREG(info.st_mode):
        why = "it is not a regular file"
    elif info.st_size > MAX_SETTINGS_BYTES:
        why = f"it is {info.st_size:,} bytes, far more than gradviz writes"
    if why is not None:
        aside = path.with_name(f"{path.name}.damaged-{int(time.time())}")
        try:
            path.rename(aside)
        except OSError as exc:
            return [f"the settings file {path} is unusable ({why}) and could not be moved ({exc.strerror or exc})"]
        return [f"the settings file {path} was set aside as {aside.name} ({why}); defaults are used"]
    try:
        lines = path.read_bytes().split(b"\n")
    except OSError as exc:
        return [f"the settings file {path} cannot be read ({exc.strerror or exc})"]
    unsafe = [line for line in lines if UNSAFE_VALUE.encode() in line]
    if not unsafe:
        return []
    keys = ", ".join(line.split(b"=", 1)[0].decode("utf-8", "replace").strip() for line in unsafe)
    try:
        path.write_bytes(b"\n".join(line for line in lines if UNSAFE_VALUE.encode() not in line))
    except OSError as exc:
        return [f"the settings file {path} holds values gradviz never writes ({keys}) and cannot be "
                f"cleaned ({exc.strerror or exc})"]
    return [f"settings gradviz never writes were removed unread: {keys}"]


def settings_store() -> tuple[QSettings, list[str]]:
    """The user's settings, after ``check_settings_file``; a sentence for each problem found."""
    path = settings_path()
    problems = check_settings_file(path)
    if path.exists() and not path.is_file():  # could not be set aside: keep this launch's settings elsewhere
        path = Path(QStandardPaths.writableLocation(QStandardPaths.StandardLocation.TempLocation)) / "gradviz.conf"
        problems += check_settings_file(path)
    return QSettings(str(path), QSettings.Format.IniFormat), problems


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def path_setting(path: Path | str) -> str:
    """``path`` as QSettings can keep it: itself, or (a name that is not UTF-8, such as a Latin-1
    ``caf\\xe9.py``, which Qt would silently drop characters of) its bytes, %-escaped."""
    text = str(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return BYTES_PREFIX + quote_from_bytes(os.fsencode(text), safe="/")
    return text


def setting_path(value: str) -> Path:
    """The path ``path_setting`` kept."""
    if value.startswith(BYTES_PREFIX):
        return Path(os.fsdecode(unquote_to_bytes(value[len(BYTES_PREFIX) :])))
    return Path(value)


def _plain_path(value: Any) -> str | None:
    """``value`` when it is a usable absolute path (as ``path_setting`` keeps it), else None."""
    if not isinstance(value, str) or not value or len(value) > MAX_PATH_CHARS or "\0" in value:
        return None
    return value if os.path.isabs(setting_path(value)) else None


def _as_text(value: Any) -> Any:
    """How a value is stored: numbers as text (QSettings cannot hold an int past 2**63; the
    states parse text by the field's type), a tuple as a list."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, tuple | list):
        return [_as_text(v) for v in value]
    return value


class Preferences:
    def __init__(self, store: QSettings) -> None:
        self.store = store
        self.dropped: list[str] = []  # what was read back bad and dropped, one sentence each

    def _drop(self, key: str, why: str) -> None:
        """Remove a value that failed its check: it is never read (or saved) again."""
        self.store.remove(key)
        self.dropped.append(why)

    # --- layout ----------------------------------------------------------------------------
    def save_layout(self, window: QMainWindow) -> None:
        self.store.setValue("window/geometry", window.saveGeometry())
        self.store.setValue("window/state", window.saveState())

    # --- run settings and memory options ---------------------------------------------------
    def restore_values(self, group: str, state, skip: tuple[str, ...] = ()) -> None:
        """Apply the values saved under ``group/`` to a SchemaState (RunSettings,
        MemorySettings); each one it refuses is dropped and named."""
        for name in state.FIELDS:
            key = f"{group}/{name}"
            if name in skip or not self.store.contains(key):
                continue
            value = self.store.value(key)
            if isinstance(value, list):  # a list comes back as text items: parse each like a number
                value = [_parse_number(v) for v in value]
            problems = state.update({name: value}, from_text=isinstance(value, str))
            if problems:
                self._drop(key, f"saved setting {key}: {' '.join(problems)}")

    def save_values(self, group: str, values: dict[str, Any]) -> None:
        for key, value in values.items():
            self.store.setValue(f"{group}/{key}", _as_text(value))

    def restore_run(self, state) -> None:
        """The run settings (a RunSettings): the saved dtype, device, seed and time limit, and of
        eps, atol and rtol only those the user typed (``run/typed``); the others take the dtype's
        defaults, whatever value was saved beside them. A file from before ``run/typed`` keeps the
        tolerances that are not its dtype's defaults, as typed (``RunSettings.update``)."""
        typed_key = f"run/{TYPED}"
        if not self.store.contains(typed_key):
            self.restore_values("run", state)
            return
        typed = self.store.value(typed_key, [])
        typed = [typed] if isinstance(typed, str) else typed if isinstance(typed, list) else []
        typed = {name for name in typed if name in TOLERANCE_FIELDS}
        self.restore_values("run", state, skip=tuple(name for name in TOLERANCE_FIELDS if name not in typed))
        state.forget_typed(set(TOLERANCE_FIELDS) - typed)
        for name in typed:  # a typed value equal to the dtype's default stays typed
            state.type_value(name, state.get(name))

    def save_run(self, state) -> None:
        """The run settings, with which tolerances the user typed (``restore_run``)."""
        self.save_values("run", state.to_dict())
        self.store.setValue(f"run/{TYPED}", sorted(state.typed))

    def run_values(self, names: tuple[str, ...]) -> dict[str, Any]:
        """The saved run settings among ``names``, unchecked (``restore_values`` checks them)."""
        return {k: self.store.value(f"run/{k}") for k in names if self.store.contains(f"run/{k}")}

    def save_run_values(self, values: dict[str, Any]) -> None:
        self.save_values("run", values)

    # --- sources ---------------------------------------------------------------------------
    def last_source(self) -> str:
        """``builtin:NAME``, an absolute file path, or ''."""
        last = self.store.value("source/last", "")
        if isinstance(last, str) and ((last.startswith("builtin:") and len(last) < 200) or _plain_path(last)):
            return last
        if last:
            self._drop("source/last", "the saved last file is not a file path")
        return ""

    def save_last_source(self, builtin: str | None, path: Path | None) -> None:
        if builtin:
            self.store.setValue("source/last", f"builtin:{builtin}")
        elif path:
            self.store.setValue("source/last", path_setting(path))

    def recent(self) -> list[str]:
        """Recent files that still exist, newest first; entries that are not paths are dropped."""
        value = self.store.value("source/recent", [])
        values = [value] if isinstance(value, str) else value if isinstance(value, list) else [value]
        paths = [p for p in map(_plain_path, values) if p][:MAX_RECENT]
        if value and len(paths) != len(values):
            self._drop("source/recent", "entries of the recent files that are not file paths")
            if paths:
                self.store.setValue("source/recent", paths)
        return [p for p in paths if setting_path(p).is_file()]

    def remember(self, path: Path) -> list[str]:
        """Put ``path`` first among the recent files; return the new list (as ``path_setting``
        keeps each: ``setting_path`` gives the path back)."""
        kept = path_setting(path)
        paths = [kept, *(p for p in self.recent() if p != kept)][:MAX_RECENT]
        self.store.setValue("source/recent", paths)
        return paths

    def forget_recent(self) -> None:
        """No recent files (File → Open Recent → Clear)."""
        self.store.remove("source/recent")

    # --- what may run by itself at launch ----------------------------------------------------
    def run_known_files_at_launch(self) -> bool:
        """Whether a file the user ran before, unchanged since, may run at launch (default: no)."""
        value = self.store.value(RUN_KNOWN_FILES_AT_LAUNCH, False)
        if isinstance(value, bool):
            return value
        if value in ("true", "false"):
            return value == "true"
        self._drop(RUN_KNOWN_FILES_AT_LAUNCH, "the saved run-at-launch choice is not true or false")
        return False

    def set_run_known_files_at_launch(self, allowed: bool) -> None:
        self.store.setValue(RUN_KNOWN_FILES_AT_LAUNCH, bool(allowed))

    def known_runs(self) -> list[str]:
        """``<sha256 of the text> <path>`` of the files the user ran, newest first."""
        value = self.store.value(KNOWN_RUNS, [])
        values = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        return [v for v in values if isinstance(v, str) and len(v) < MAX_PATH_CHARS + 80][:MAX_KNOWN_RUNS]

    def note_run(self, path: Path, text: str) -> None:
        """The user ran ``path`` with exactly this text."""
        entry = f"{text_digest(text)} {path}"
        self.store.setValue(KNOWN_RUNS, [entry, *(e for e in self.known_runs() if e != entry)][:MAX_KNOWN_RUNS])

    def ran_before(self, path: Path, text: str) -> bool:
        return f"{text_digest(text)} {path}" in self.known_runs()

    def sync(self) -> None:
        self.store.sync()


def _parse_number(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            continue
    return value

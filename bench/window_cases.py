"""The window's side of bench/robustness.py: files that must be refused at once, never read
whole or waited on, and values read back from disk that must be dropped, never used.

Each case does the real thing (a real FIFO nobody writes to, ``/dev/zero``, a directory, a
sparse 100 MB file, JSON nested 100,000 deep, ``Infinity``, ``timeout=abc``) through the very
functions the window calls, and passes when it is refused (or dropped) within ``LIMIT_S``.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

LIMIT_S = 2.0
SESSION = {"format": "gradviz-session", "version": 1, "code": "x = 1\n"}


def _sparse(path: Path, size: int) -> Path:
    with open(path, "wb") as f:
        f.truncate(size)
    return path


def _refused(read: Callable[[Path], object], path: Path, errors: tuple[type[BaseException], ...]) -> Callable:
    def case() -> str:
        try:
            read(path)
        except errors:
            return ""
        return "read, not refused"

    return case


def _settings_set_aside(make: Callable[[Path], object], folder: Path) -> Callable:
    from gradviz.app.preferences import check_settings_file

    def case() -> str:
        ini = folder / "gradviz.conf"
        make(ini)
        problems = check_settings_file(ini)
        if not problems:
            return "not noticed"
        return (
            ""
            if not ini.exists() or (ini.is_file() and b"@Variant" not in ini.read_bytes())
            else "still there"
        )

    return case


def _setting_dropped(key: str, text: str, folder: Path) -> Callable:
    from PySide6.QtCore import QSettings

    from gradviz.app.preferences import Preferences
    from gradviz.app.state import RunSettings

    def case() -> str:
        ini = folder / f"{key}.ini"
        ini.write_text(f"[run]\n{key}={text}\n", encoding="utf-8")
        store = QSettings(str(ini), QSettings.Format.IniFormat)
        settings = RunSettings()
        default = settings.get(key)
        preferences = Preferences(store)
        preferences.restore_values("run", settings)
        store.sync()
        if settings.get(key) != default:
            return f"used {settings.get(key)!r}"
        if not preferences.dropped or text in ini.read_text(encoding="utf-8"):
            return "kept in the file"
        return ""

    return case


def window_cases(folder: Path) -> list[tuple[str, Callable[[], str]]]:
    """(name, case): a case returns '' when the window's answer is right, else what went wrong."""
    from gradviz.app.file_loading import LoadRefused, read_session, read_source
    from gradviz.app.recovery import RecoveryDamaged, read_recovery

    def fifo(name: str) -> Path:
        path = folder / name
        os.mkfifo(path)
        return path

    def write(name: str, data: str | bytes) -> Path:
        path = folder / name
        path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
        return path

    def directory(name: str) -> Path:
        path = folder / name
        path.mkdir()
        return path

    refused = (LoadRefused,)
    damaged = (RecoveryDamaged,)
    deep = "[" * 100_000 + "]" * 100_000
    return [
        ("open .py: FIFO", _refused(read_source, fifo("a.py"), refused)),
        ("open .py: /dev/zero", _refused(read_source, Path("/dev/zero"), refused)),
        ("open .py: directory", _refused(read_source, directory("d.py"), refused)),
        ("open .py: 100 MB", _refused(read_source, _sparse(folder / "big.py", 100 * 2**20), refused)),
        ("open .py: not UTF-8", _refused(read_source, write("latin1.py", b"x = '\xe9'\n"), refused)),
        ("session: FIFO", _refused(read_session, fifo("a.gradviz"), refused)),
        ("session: /dev/zero", _refused(read_session, Path("/dev/zero"), refused)),
        ("session: directory", _refused(read_session, directory("d.gradviz"), refused)),
        ("session: 100 MB", _refused(read_session, _sparse(folder / "big.gradviz", 100 * 2**20), refused)),
        ("session: nested too deep", _refused(read_session, write("deep.gradviz", deep), refused)),
        (
            "session: Infinity",
            _refused(
                read_session,
                write("inf.gradviz", json.dumps(SESSION)[:-1] + ', "run": {"eps": Infinity}}'),
                refused,
            ),
        ),
        (
            "session: huge integer",
            _refused(
                read_session, write("int.gradviz", json.dumps({**SESSION, "run": {"seed": 10**400}})), refused
            ),
        ),
        (
            "recovery: wrong types",
            _refused(read_recovery, write("r1.json", '{"text": 5, "title": [], "saved_at": "x"}'), damaged),
        ),
        ("recovery: not UTF-8", _refused(read_recovery, write("r2.json", b"\xff\xfe{}"), damaged)),
        ("recovery: nested too deep", _refused(read_recovery, write("r3.json", deep), damaged)),
        ("recovery: directory", _refused(read_recovery, directory("r4.json"), damaged)),
        ("settings: directory", _settings_set_aside(lambda p: p.mkdir(), folder / "s1")),
        ("settings: FIFO", _settings_set_aside(os.mkfifo, folder / "s2")),
        ("settings: 100 MB", _settings_set_aside(lambda p: _sparse(p, 100 * 2**20), folder / "s3")),
        (
            "settings: @Variant",
            _settings_set_aside(lambda p: p.write_text("[run]\nseed=@Variant(\\0)\n"), folder / "s4"),
        ),
        ("setting: timeout=abc", _setting_dropped("timeout", "abc", folder)),
        ("setting: atol=inf", _setting_dropped("atol", "inf", folder)),
        ("setting: eps=-1", _setting_dropped("eps", "-1", folder)),
    ]


def run_window_cases() -> tuple[int, int]:
    """Print a line per case; (passed, failed)."""
    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix="gradviz-window-cases-") as tmp:
        folder = Path(tmp)
        for sub in ("s1", "s2", "s3", "s4"):
            (folder / sub).mkdir()
        for name, case in window_cases(folder):
            started = time.monotonic()
            try:
                why = case()
            except Exception as exc:  # a case that crashes is a failure, named
                why = f"{type(exc).__name__}: {exc}"
            seconds = time.monotonic() - started
            if not why and seconds > LIMIT_S:
                why = f"took {seconds:.1f} s"
            passed += not why
            failed += bool(why)
            verdict = f"FAIL ({why})" if why else "ok"
            print(f"{name:<28} {'refused':<22} {'-' if why else 'refused':<22} {seconds:8.2f}  {verdict}")
    return passed, failed

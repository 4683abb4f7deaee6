"""What the window keeps on disk, seen from real app processes: the layout and settings are saved
as they change (a kill -9 keeps them), and settings or recovery files that are damaged, of the
wrong kind or crafted never stop the app from starting: each bad value is dropped with a
message, removed from the file, and the next launch starts clean."""

from __future__ import annotations

import json
import os
import pickle
import struct
from pathlib import Path

import pytest
from PySide6.QtCore import QByteArray, QSettings, Qt

from gradviz.app.recovery import RECOVERY_ENV
from gradviz.app.window_layout import MEMORY_DOCK
from gradviz.schema.settings import RUN_TIMEOUT_S, CheckSettings
from tests.app.app_process import (
    QUICK,
    kill_9,
    lines,
    read_until,
    run_app,
    settings_file,
    start_app,
    states,
)


@pytest.mark.slow
def test_layout_and_settings_are_saved_as_they_change_and_survive_a_kill_9(qtbot, tmp_path, monkeypatch):
    from gradviz.app.main_window import MainWindow

    child = start_app(tmp_path, **QUICK, steps=[f"hide:{MEMORY_DOCK}", "dtype:float32", "wait_saved", "hold"])
    try:
        read_until(child, "HOLDING")
    finally:
        kill_9(child.pid)  # no clean exit: nothing is saved at the end
        child.wait(10)
    monkeypatch.setenv(RECOVERY_ENV, str(tmp_path / "recovery"))
    for ini, hidden, dtype in ((settings_file(tmp_path), True, "float32"), (tmp_path / "fresh.ini", False, "float64")):
        window = MainWindow(QSettings(str(ini), QSettings.Format.IniFormat), auto_run=False)
        qtbot.addWidget(window)
        window.show()
        try:
            assert window.docks[MEMORY_DOCK].isHidden() == hidden
            assert window.run_settings.dtype == dtype and window.run_bar.dtype.currentText() == dtype
        finally:
            window.close()


class RunsCode:
    """Unpickling this writes a file: what a crafted @Variant in a settings file would do."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def pickled_variant(obj) -> str:
    """How PySide6 writes a Python object into an INI file (and unpickles it when reading)."""
    data = pickle.dumps(obj, protocol=4)
    name = b"PySide::PyObjectWrapper\0"
    blob = struct.pack(">I", 0x7F) + struct.pack(">I", len(name)) + name + struct.pack(">I", len(data)) + data
    return "@Variant(" + "".join(f"\\x{byte:02x}" for byte in blob) + ")"


@pytest.mark.slow
def test_a_settings_file_full_of_bad_values_is_cleaned_once(tmp_path):
    sentinel = tmp_path / "unpickled"
    ini = settings_file(tmp_path)
    ini.parent.mkdir(parents=True)
    ini.write_text(
        "[run]\ntimeout=abc\natol=inf\nseed=" + "9" * 5000 + "\neps=1e-07\n"
        "[memory]\nlayers=" + pickled_variant(RunsCode(str(sentinel))) + "\nshape=1, x, 3\n"
        "[source]\nlast=relative/path.py\nrecent=7\n"
        "[window]\nstate=@ByteArray(garbage)\ngeometry=hello\n"
        "[launch]\nrun_known_files=maybe\n",
        encoding="utf-8",
    )
    code, out = run_app(tmp_path, **QUICK, steps=["state", "quit"])
    assert code == 0, out
    [state] = states(out)
    assert not sentinel.exists()  # the pickled value was removed unread
    assert state["run"]["eps"] == 1e-7  # a good value next to bad ones is kept
    assert state["run"]["atol"] == CheckSettings().atol and state["run"]["timeout"] == RUN_TIMEOUT_S
    told = " ".join(state["notices"])
    for named in ("run/timeout", "run/atol", "run/seed", "memory/shape", "dock layout", "window size",
                  "last file", "recent files", "run-at-launch", "layers"):
        assert named in told, named
    text = ini.read_text(encoding="utf-8")
    assert "abc" not in text and "inf" not in text and "@Variant" not in text and "9" * 50 not in text
    code, out = run_app(tmp_path, **QUICK, steps=["state", "quit"])  # the next launch: nothing left to drop
    assert code == 0, out
    assert states(out)[0]["notices"] == []


@pytest.mark.slow
def test_a_directory_fifo_or_huge_file_where_the_settings_belong(tmp_path):
    ini = settings_file(tmp_path)
    ini.parent.mkdir(parents=True)
    for make, why in (
        (lambda: ini.mkdir(), "not a regular file"),
        (lambda: os.mkfifo(ini), "not a regular file"),  # Qt would block reading it, for ever
        (lambda: open(ini, "wb").truncate(100 * 2**20), "far more than gradviz writes"),
    ):
        make()
        steps = ["dtype:float32", "wait_saved", "state", "quit"]
        code, out = run_app(tmp_path, **QUICK, steps=steps, timeout=120)
        assert code == 0, out
        assert any("set aside" in n and why in n for n in states(out)[0]["notices"]), out
        assert ini.is_file()  # fresh settings, saved where they belong
        assert QSettings(str(ini), QSettings.Format.IniFormat).value("run/dtype") == "float32"
        ini.unlink()
        for aside in ini.parent.glob("gradviz.conf.damaged-*"):
            aside.rmdir() if aside.is_dir() else aside.unlink()


@pytest.mark.slow
def test_damaged_recovery_files_at_launch(tmp_path):
    folder = tmp_path / "recovery"
    folder.mkdir()
    (folder / "recovery-wtypes.json").write_text(json.dumps({"text": 5, "title": [], "saved_at": "x"}))
    (folder / "recovery-wdeep.json").write_text("[" * 100_000 + "]" * 100_000)
    (folder / "recovery-wdir.json").mkdir()
    latin = tmp_path / "latin1.py"
    latin.write_bytes(b"x = '\xe9'\n")
    (folder / "recovery-wgood.json").write_text(
        json.dumps({"text": "# kept\n", "title": "latin1.py", "path": str(latin), "saved_at": 2.0})
    )
    code, out = run_app(tmp_path, **QUICK, steps=["state", "quit"], CHILD_ANSWER="Yes")
    assert code == 0, out
    [state] = states(out)
    assert state["text"] == "# kept\n" and state["path"] == str(latin)  # restored; its file was not read
    assert sum("damaged recovery file" in n for n in state["notices"]) == 3
    assert lines(out, "WARNED:") == []
    # nothing left to offer
    code, out = run_app(tmp_path, **QUICK, steps=["state", "quit"], CHILD_ANSWER="No")
    assert code == 0, out
    assert not lines(out, "ASKED:") and states(out)[0]["notices"] == []
    assert not list(Path(folder).glob("recovery-*"))


def saved_state(dock_names: list[str], toolbars: tuple[str, ...] = ("run_toolbar", "presentation_toolbar")):
    """What ``saveState`` writes for a main window with these docks and toolbars: another
    program's layout, or a gradviz's with other panels."""
    from PySide6.QtWidgets import QDockWidget, QMainWindow, QToolBar

    other = QMainWindow()
    for name in toolbars:
        bar = QToolBar(name)
        bar.setObjectName(name)
        other.addToolBar(bar)
    for name in dock_names:
        dock = QDockWidget(name)
        dock.setObjectName(name)
        other.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, dock)
        dock.hide()
    state = other.saveState()
    other.deleteLater()
    return state


def our_docks() -> list[str]:
    from gradviz.app.window_layout import DOCKS, dock_name

    return [dock_name(title) for title in (*DOCKS, "Why?")]


BAD_LAYOUTS = {
    "not a layout": lambda: QByteArray(b"\x00\x00\x00\xff\x00\x00\x00\x00" + bytes(range(256))),
    "another program's": lambda: saved_state([*our_docks(), "dock_profiler"], ("main_toolbar",)),
    "a panel of this window missing": lambda: saved_state(our_docks()[:-1]),
}


@pytest.fixture(params=list(BAD_LAYOUTS))
def bad_layout(request, settings_store):
    """The settings of ``main_window`` with a saved dock layout that is not this window's; the
    docks are all hidden in it where it names them, so a layout that was applied shows."""
    settings_store.setValue("window/state", BAD_LAYOUTS[request.param]())
    settings_store.setValue("window/layout_auto", False)  # the user's own arrangement: restored as saved
    settings_store.sync()
    return request.param


def test_a_layout_that_is_not_this_windows_gives_the_default_and_one_line(
    bad_layout, main_window, settings_store
):
    from gradviz.app.saved_layout import state_problem
    from gradviz.app.window_layout import size_class

    window = main_window
    told = [n for n in window.source.notices if "dock layout" in n]
    assert len(told) == 1, window.source.notices
    assert "dock layout" in window.statusBar().currentMessage()
    assert window.layout_manager.auto and window.layout_manager.kind == size_class(window.width(), window.height())
    assert all(dock.isVisible() for dock in window.docks.values())
    kept = QSettings(settings_store.fileName(), QSettings.Format.IniFormat).value("window/state")
    assert kept is None or state_problem(window, bytes(kept)) is None  # gone, or the default saved since


def test_the_names_a_saved_layout_holds(qtbot):
    from gradviz.app.saved_layout import state_names

    assert state_names(bytes(saved_state(["dock_code", "dock_why"], ("run_toolbar",)))) == {
        "dock_code", "dock_why", "run_toolbar",
    }  # fmt: skip
    assert state_names(b"\x00\x00\x00\xff" + bytes(range(256))) == set()


def test_the_rectangles_a_saved_geometry_holds(qtbot):
    from PySide6.QtWidgets import QMainWindow

    from gradviz.app.saved_geometry import read_geometry

    window = QMainWindow()
    qtbot.addWidget(window)
    window.setGeometry(40, 60, 640, 480)
    blob = bytes(window.saveGeometry())
    saved = read_geometry(blob)
    assert saved is not None and not saved.maximized and not saved.full_screen
    assert saved.geometry == saved.normal == (40, 60, 640, 480)
    window.setWindowState(Qt.WindowState.WindowMaximized)
    assert read_geometry(bytes(window.saveGeometry())).maximized
    assert read_geometry(blob[:-1]) is None and read_geometry(b"\x00" + blob[1:]) is None

"""Recovery where it is hard: a read-only or full state folder (real tmpfs mounts, in a mount
namespace of the app's own), the same process id at every launch (real PID namespaces, as in
containers), two windows alive at once. Each time a real app process is killed with kill -9 and
the next window gets the text back."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from gradviz.app.recovery import RECOVERY_ENV, RecoveryStore
from tests.app.app_process import QUICK, kill_9, lines, read_until, run_app, start_app, states
from tests.app.saves_helpers import answer_recovery

MARKER = "# typed before the crash"


def namespaces_work(*flags: str) -> bool:
    if shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", *flags, "true"], capture_output=True).returncode == 0


needs_mount_ns = pytest.mark.skipif(not namespaces_work("-Urm"), reason="no user+mount namespaces here")
needs_pid_ns = pytest.mark.skipif(not namespaces_work("-Urpf", "--mount-proc"), reason="no PID namespaces here")

# the state folder as the app sees it: a fresh tmpfs over it, read-only or already full
MOUNTS = {
    "read-only": 'mount -t tmpfs -o ro tmpfs "$0" && exec "$@"',
    "full": 'mount -t tmpfs -o size=64k tmpfs "$0" && { dd if=/dev/zero of="$0/filler" bs=4k count=64 '
    '2>/dev/null; exec "$@"; }',
}


def restore_in_a_new_window(qtbot, monkeypatch, settings_store, folders: list[Path]) -> str:
    """What a new window offers back from ``folders``: its editor text."""
    from gradviz.app.main_window import MainWindow

    monkeypatch.setenv(RECOVERY_ENV, os.pathsep.join(map(str, folders)))
    answer_recovery(monkeypatch, "restore")
    window = MainWindow(settings_store, auto_run=False)
    qtbot.addWidget(window)
    try:
        assert window.offer_recovery()
        return window.editor.text()
    finally:
        window.close()


@needs_mount_ns
@pytest.mark.parametrize("trouble", list(MOUNTS))
def test_autosave_into_a_folder_that_refuses_tells_once_and_keeps_the_text_elsewhere(
    qtbot, tmp_path, monkeypatch, settings_store, trouble
):
    state, fallback = tmp_path / "state", tmp_path / "fallback"
    state.mkdir()
    prefix = ("unshare", "-Urm", "sh", "-c", MOUNTS[trouble], str(state))
    steps = [f"type:\\n{MARKER}\\n", "wait_recovery", "type:# and more\\n", "wait_recovery", "state", "hold"]
    child = start_app(
        tmp_path, **QUICK, steps=steps, prefix=prefix,
        GRADVIZ_RECOVERY_DIR=os.pathsep.join([str(state), str(fallback)]),
    )
    try:
        out = read_until(child, "HOLDING")
    finally:
        kill_9(child.pid)
        child.wait(10)
    [kept] = lines(out, "RECOVERY:")[-1:]
    assert Path(kept).parent == fallback  # the text went to the next folder
    told = [n for n in states(out)[-1]["notices"] if "Autosave" in n]
    assert len(told) == 1, told  # once, though it autosaved twice
    reason = "read-only" if trouble == "read-only" else "full"
    assert str(state) in told[0] and reason in told[0] and str(fallback) in told[0]
    assert not any(state.iterdir())  # nothing reached the real folder under the mount
    assert MARKER in restore_in_a_new_window(qtbot, monkeypatch, settings_store, [state, fallback])


@needs_mount_ns
def test_when_no_folder_takes_the_text_the_user_is_told_to_save(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    prefix = ("unshare", "-Urm", "sh", "-c", MOUNTS["read-only"], str(state))
    code, out = run_app(
        tmp_path, **QUICK, steps=[f"type:{MARKER}", "autosave", "autosave", "state", "quit"], prefix=prefix,
        GRADVIZ_RECOVERY_DIR=str(state),
    )  # fmt: skip
    assert code == 0, out
    told = [n for n in states(out)[-1]["notices"] if "Autosave" in n]
    assert len(told) == 1 and "Save your work" in told[0] and "read-only" in told[0], told


@needs_pid_ns
def test_same_process_id_at_every_launch(tmp_path):
    """In a container every launch may be pid 1: the text of the one killed is still offered."""
    prefix = ("unshare", "-Urpf", "--kill-child", "--mount-proc")
    steps = [f"type:\\n{MARKER}\\n", "wait_recovery", "hold"]
    child = start_app(tmp_path, **QUICK, steps=steps, prefix=prefix)
    try:
        read_until(child, "HOLDING")
        [app] = Path(f"/proc/{child.pid}/task/{child.pid}/children").read_text().split()
        assert Path(f"/proc/{app}/status").read_text().count("NSpid:") == 1
        nspid = Path(f"/proc/{app}/status").read_text().split("NSpid:")[1].split("\n")[0].split()
        assert nspid[-1] == "1"  # the app is pid 1 in its namespace
        kill_9(int(app))
    finally:
        child.kill()
        child.wait(10)
    code, out = run_app(tmp_path, **QUICK, steps=["state", "quit"], prefix=prefix)
    assert code == 0, out
    assert any("without saving your changes" in asked for asked in lines(out, "ASKED:"))
    assert MARKER in states(out)[0]["text"]
    assert not list((tmp_path / "recovery").glob("recovery-*"))  # restored, then a clean exit


def test_a_live_windows_text_is_never_offered_to_another(qtbot, main_window, settings_store, monkeypatch):
    from gradviz.app.main_window import MainWindow

    first = main_window
    first.editor.editor.insertPlainText(MARKER + "\n")
    first.source.autosave()
    assert first.source.flush_autosave() and first.recovery.file.exists()
    second = MainWindow(settings_store, auto_run=False)
    qtbot.addWidget(second)
    try:
        assert second.recovery.directory == first.recovery.directory
        assert second.recovery.orphans() == ([], [])  # locked by a live window
        assert not second.offer_recovery()
    finally:
        second.close()
    assert first.recovery.file.exists()  # the other window's exit left it alone


def test_damaged_recovery_files_are_set_aside_and_named(qtbot, main_window, tmp_path):
    window = main_window
    folder = window.recovery.directory
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "recovery-wtypes.json").write_text(json.dumps({"text": 5, "title": [], "saved_at": "x"}))
    (folder / "recovery-wbytes.json").write_bytes(b"\xff\xfe{}")
    (folder / "recovery-wdeep.json").write_text("[" * 100_000 + "]" * 100_000)
    (folder / "recovery-wdir.json").mkdir()
    latin = tmp_path / "latin1.py"
    latin.write_bytes(b"x = '\xe9'\n")  # the file a good record came from is not UTF-8: never read
    (folder / "recovery-wgood.json").write_text(
        json.dumps({"text": "kept\n", "title": "latin1.py", "path": str(latin), "saved_at": 2.0})
    )
    recovered, problems = RecoveryStore(folder).orphans()
    assert [r.text for r in recovered] == ["kept\n"]
    assert len(problems) == 4 and all("set aside" in p for p in problems)
    assert sorted(p.name for p in folder.glob("damaged-*")) == [
        "damaged-recovery-wbytes.json", "damaged-recovery-wdeep.json", "damaged-recovery-wdir.json",
        "damaged-recovery-wtypes.json",
    ]  # fmt: skip
    for r in recovered:
        RecoveryStore.discard(r)
    assert RecoveryStore(folder).orphans() == ([], [])  # never read again

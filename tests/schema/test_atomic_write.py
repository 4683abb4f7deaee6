"""The one way gradviz writes a file the user keeps: on a real full disk the old file stays
whole; a path that became a symbolic link is replaced, never written through; and the stamp of
what was read tells a save that the file changed behind its back."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
from pathlib import Path

import pytest

from gradviz.schema.atomic_write import os_reason, write_atomically
from gradviz.schema.file_stamp import change_since, stamp_of
from gradviz.schema.session import Session, SessionError, load_session, save_session
from tests.fill_disk import fill, small_tmpfs

OLD = "print('the original')\n" * 20  # 440 bytes
NEW = "x = 1  # a much longer new text\n" * 4000  # 128 KB: more than the disk has left


def test_a_full_disk_leaves_the_old_file_whole(tmp_path):
    with small_tmpfs(tmp_path / "disk") as disk:
        target = disk / "mine.py"
        target.write_text(OLD, encoding="utf-8")
        fill(disk)
        with pytest.raises(OSError) as caught:
            write_atomically(target, NEW)
        assert caught.value.errno == errno.ENOSPC
        assert os_reason(caught.value) == "No space left on device"
        assert target.read_text(encoding="utf-8") == OLD
        assert sorted(p.name for p in disk.iterdir()) == ["filler", "mine.py"]  # no temporary file left


def test_a_session_saved_onto_a_full_disk_keeps_the_old_session(tmp_path):
    with small_tmpfs(tmp_path / "disk") as disk:
        target = disk / "work.gradviz"
        save_session(target, Session(code=OLD))
        fill(disk)
        with pytest.raises(SessionError, match="No space left on device"):
            save_session(target, Session(code=NEW))
        assert load_session(target).code == OLD
        assert sorted(p.name for p in disk.iterdir()) == ["filler", "work.gradviz"]


def test_the_new_file_keeps_the_old_ones_permissions(tmp_path):
    target = tmp_path / "script.py"
    target.write_text(OLD)
    target.chmod(0o750)
    write_atomically(target, NEW)
    assert stat.S_IMODE(target.stat().st_mode) == 0o750 and target.read_text() == NEW
    fresh = tmp_path / "fresh.py"
    write_atomically(fresh, "x\n", mode=0o600)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600


def test_a_link_is_replaced_and_what_it_points_to_is_not_written(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    link = tmp_path / "mine.py"
    link.symlink_to(victim)
    write_atomically(link, NEW)
    assert victim.read_text() == "precious\n"
    assert not link.is_symlink() and link.read_text() == NEW


def test_the_stamp_sees_every_change_behind_our_back(tmp_path):
    path = tmp_path / "mine.py"
    path.write_bytes(OLD.encode())
    stamp = stamp_of(path, OLD.encode())
    assert change_since(stamp) is None
    os.utime(path, ns=(1, 1))  # touched: same text, other mtime
    assert change_since(stamp) is None
    path.write_bytes(OLD.replace("original", "ORIGINAL").encode())  # same size, other text
    assert change_since(stamp) == "another program changed it"
    path.unlink()
    assert change_since(stamp) == "it was deleted or moved away"
    other = tmp_path / "other.py"
    other.write_bytes(OLD.encode())  # the same text, behind a link
    path.symlink_to(other)
    assert change_since(stamp) == f"it was replaced by a symbolic link to {other}"


def test_a_file_opened_through_a_link_is_written_through_it(tmp_path):
    real = tmp_path / "real.py"
    real.write_bytes(OLD.encode())
    link = tmp_path / "link.py"
    link.symlink_to("real.py")
    stamp = stamp_of(link, OLD.encode())
    assert stamp.link == "real.py" and stamp.write_to == real
    assert change_since(stamp) is None
    elsewhere = tmp_path / "elsewhere.py"
    elsewhere.write_bytes(OLD.encode())
    link.unlink()
    link.symlink_to(elsewhere)
    assert "now points to" in change_since(stamp)


def test_a_read_only_filesystem_refuses_and_changes_nothing(tmp_path):
    with small_tmpfs(tmp_path / "disk") as disk:
        (disk / "a.py").write_text(OLD)
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        with pytest.raises(OSError) as caught:
            write_atomically(disk / "a.py", NEW)
        assert os_reason(caught.value) == "Read-only file system"
        assert [p.name for p in disk.iterdir()] == ["a.py"] and (disk / "a.py").read_text() == OLD


def test_a_relative_path_works(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_atomically(Path("rel.py"), "x\n")
    assert (tmp_path / "rel.py").read_text() == "x\n"

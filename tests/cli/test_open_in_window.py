"""What ``gradviz FILE.py``, ``gradviz SESSION.gradviz`` and ``gradviz app --target`` ask of the
window, checked on a small fake window (no Qt): the real one is driven in tests/api/test_show.py."""

from __future__ import annotations

import json

import pytest

from gradviz.app.launch import open_requested, parse_app_args, refuse_arguments
from gradviz.schema.settings import CheckSettings


class FakeWindow:
    def __init__(self, with_targets: bool = True) -> None:
        self.calls: list[tuple] = []
        if with_targets:
            self.open_target = lambda *args: self.calls.append(("open_target", *args))

    def open_file(self, path):
        self.calls.append(("open_file", path))

    def open_session(self, path):
        self.calls.append(("open_session", path))
        return True


@pytest.fixture
def files(tmp_path):
    (tmp_path / "f.py").write_text("")
    (tmp_path / "s.gradviz").write_text("{}")
    (tmp_path / "inputs.pt").write_bytes(b"")
    (tmp_path / "settings.json").write_text(json.dumps(CheckSettings(eps=1e-4).to_dict()))
    return tmp_path


def test_a_python_file_opens_as_text_and_nothing_runs(files):
    window = FakeWindow()
    args = parse_app_args([str(files / "f.py")])
    assert refuse_arguments(args) is None
    assert open_requested(window, args) is True  # True: run_app starts no run of its own
    assert window.calls == [("open_file", files / "f.py")]


def test_a_session_opens_as_a_session(files):
    window = FakeWindow()
    assert open_requested(window, parse_app_args([str(files / "s.gradviz")]))
    assert window.calls == [("open_session", files / "s.gradviz")]


def test_a_target_goes_to_open_target_with_inputs_and_settings(files):
    window = FakeWindow()
    argv = [
        "--target",
        "pkg.ops:Cube",
        "--inputs",
        str(files / "inputs.pt"),
        "--settings",
        str(files / "settings.json"),
    ]
    args = parse_app_args(argv)
    assert refuse_arguments(args) is None
    assert open_requested(window, args)
    [(name, target, inputs, settings)] = window.calls
    assert (name, target, inputs) == ("open_target", "pkg.ops:Cube", str(files / "inputs.pt"))
    assert CheckSettings.from_dict(settings).eps == 1e-4


def test_a_window_without_open_target_says_so_in_one_line_and_starts_as_usual(files, capsys):
    window = FakeWindow(with_targets=False)
    assert open_requested(window, parse_app_args(["--target", "pkg.ops:Cube"])) is False
    assert window.calls == []
    err = capsys.readouterr().err
    assert "cannot open targets yet" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["missing.py"], "cannot open missing.py: no such file"),
        (["--inputs", "x.pt"], "--inputs and --settings go with --target"),
        (["--target", "a:B", "--inputs", "nowhere.pt"], "--inputs nowhere.pt: no such file"),
        (["--target", "a:B", "--settings", "SETTINGS"], "is not gradviz settings"),
    ],
)
def test_bad_arguments_are_refused_before_qt_starts(files, monkeypatch, argv, message):
    monkeypatch.chdir(files)
    (files / "SETTINGS").write_text('{"eps": -1}')
    assert message in refuse_arguments(parse_app_args(argv))

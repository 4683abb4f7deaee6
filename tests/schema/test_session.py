"""Session files: a round trip keeps everything; every kind of bad file is one clear SessionError."""

from __future__ import annotations

import json

import pytest

from gradviz.schema.session import VERSION, Session, SessionError, load_session, save_session


def full_session() -> Session:
    return Session(
        code="import torch\n# ünïcode\n",
        function="LinearFunction",
        path="/tmp/mine.py",
        builtin=None,
        run={"device": "cpu", "dtype": "float32", "eps": 1e-4, "atol": 1e-3, "rtol": 1e-2, "seed": 7},
        memory={"layers": 2, "shape": [4, 3, 16, 16]},
        layout="AAAA",
    )


def test_round_trip_keeps_every_field(tmp_path):
    path = tmp_path / "s.gradviz"
    save_session(path, full_session())
    assert load_session(path) == full_session()
    data = json.loads(path.read_text(encoding="utf-8"))  # plain, readable JSON
    assert data["format"] == "gradviz-session" and data["version"] == VERSION


def _write(tmp_path, content) -> object:
    path = tmp_path / "bad.gradviz"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return path


GOOD = {"format": "gradviz-session", "version": 1, "code": "x = 1\n"}


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"format": "gradviz-session", "version": 1,\n "code": ', "broken JSON at line 2"),
        (b"\xff\xfe\x00junk", "not UTF-8"),
        ({"hello": 1}, "not a gradviz session"),
        ([1, 2, 3], "not a gradviz session"),
        ({**GOOD, "version": VERSION + 1}, "newer gradviz"),
        ({**GOOD, "version": "one"}, "version"),
        ({k: v for k, v in GOOD.items() if k != "code"}, '"code"'),
        ({**GOOD, "code": 5}, '"code" has the wrong type'),
        ({**GOOD, "run": {"eps": "tiny"}}, '"eps" has the wrong type'),
        ({**GOOD, "run": {"seed": True}}, '"seed" has the wrong type'),
        ({**GOOD, "run": {"colour": "red"}}, 'unknown run setting "colour"'),
        ({**GOOD, "memory": []}, '"memory" has the wrong type'),
    ],
)
def test_bad_files_raise_a_clear_error(tmp_path, content, expected):
    with pytest.raises(SessionError) as info:
        load_session(_write(tmp_path, content))
    assert expected in info.value.message


def test_missing_file_and_unwritable_folder(tmp_path):
    with pytest.raises(SessionError, match="Cannot open"):
        load_session(tmp_path / "nope.gradviz")
    with pytest.raises(SessionError, match="Cannot save"):
        save_session(tmp_path / "no" / "such" / "dir.gradviz", full_session())


def test_minimal_session_gets_defaults(tmp_path):
    session = load_session(_write(tmp_path, GOOD))
    assert session.code == "x = 1\n" and session.function is None and session.run == {}


def test_run_settings_are_the_check_settings_and_the_timeout():
    """One list of settings: a new CheckSettings field is a valid session setting without an edit here."""
    from dataclasses import fields

    from gradviz.schema.session import run_setting_types
    from gradviz.schema.settings import CheckSettings

    types = run_setting_types()
    assert set(types) == {f.name for f in fields(CheckSettings)} | {"timeout"}
    assert types["eps"] == (int, float) and types["seed"] == (int,) and types["device"] == (str,)
    assert types["max_jacobian_bytes"] == (int, type(None)) and types["jacobian_only"] == (bool,)


@pytest.mark.parametrize(
    "run",
    [
        {"eps": 1, "atol": 0, "rtol": 1e-2, "seed": 2**40},
        {"jacobian_only": True, "all_checks": False, "max_jacobian_bytes": None, "timeout": 0},
        {"chunk_bytes": 2**20, "nondet_tol": 0.0, "dtype": "float32", "device": "cuda:1"},
    ],
)
def test_every_check_setting_is_accepted_by_its_type(tmp_path, run):
    assert load_session(_write(tmp_path, {**GOOD, "run": run})).run == run


@pytest.mark.parametrize(
    ("run", "expected"),
    [
        ({"jacobian_only": 1}, '"jacobian_only" has the wrong type (int)'),
        ({"max_jacobian_bytes": 1.5}, '"max_jacobian_bytes" has the wrong type (float)'),
        ({"timeout": 2.5}, '"timeout" has the wrong type (float)'),
        ({"timeout": None}, '"timeout" has the wrong type (NoneType)'),
    ],
)
def test_run_settings_of_the_wrong_type_are_refused(tmp_path, run, expected):
    with pytest.raises(SessionError) as info:
        load_session(_write(tmp_path, {**GOOD, "run": run}))
    assert expected in info.value.message

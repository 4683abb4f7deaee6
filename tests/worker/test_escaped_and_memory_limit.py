"""The two small modules the worker's run and handlers share (apart from ``run`` and
``supervisor``, so the worker's modules import in one direction): an exception that
escaped the core, as the error a run answers, and the memory a run may use."""

from __future__ import annotations

import importlib
import os
import sys

import pytest

from gradviz.protocol.launch import MEMORY_ENV
from gradviz.schema.requests import CodeSource
from gradviz.worker.escaped import escaped_error
from gradviz.worker.memory_limit import MEMORY_SHARE, default_memory_limit

USER_FILE = "<editor>"  # what an editor run's code is compiled under
USER_CODE = "def backward(ctx, g):\n    raise SystemExit(3)\n"


def raised_in_user_code(source: str, call: str) -> BaseException:
    scope: dict = {}
    exec(compile(source, USER_FILE, "exec"), scope)
    try:
        scope[call](None, None)
    except BaseException as exc:  # SystemExit too: what the run catches
        return exc
    raise AssertionError("the user's code did not raise")


def test_an_exit_in_the_users_backward_names_the_phase_and_the_line():
    error = escaped_error(raised_in_user_code(USER_CODE, "backward"), CodeSource(source=USER_CODE))
    assert error["kind"] == "backward" and error["lineno"] == 2
    assert "sys.exit(3)" in error["message"]


def test_an_exception_outside_the_users_file_is_gradvizs_own_bug(capsys):
    try:
        {}["missing"]
    except KeyError as exc:
        error = escaped_error(exc, CodeSource(filename="/elsewhere/user.py"))
    assert error == {"kind": "internal", "message": "Internal error in gradviz: KeyError: 'missing'"}
    assert "KeyError" in capsys.readouterr().err  # the traceback, for a bug report


def test_an_exit_in_a_module_targets_code_names_the_modules_line(tmp_path, monkeypatch):
    """A ``pkg.mod:Name`` target sent without a filename: the error still names the module's line,
    read from the module the run imported (as the loader names its file)."""
    (tmp_path / "exits_mod.py").write_text(USER_CODE)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("exits_mod")
    try:
        module.backward(None, None)
    except SystemExit as exc:
        error = escaped_error(exc, CodeSource(target="exits_mod:backward"))
    finally:
        del sys.modules["exits_mod"]
    assert error["kind"] == "backward" and error["lineno"] == 2
    assert error["filename"] == str((tmp_path / "exits_mod.py").resolve())


@pytest.mark.parametrize(
    ("value", "expected"),
    [("512", 512 * 2**20), ("0.5", 2**19), ("-3", 0), ("0", 0), ("inf", 0), ("Unlimited", 0), ("1e300", 2**63 - 1)],
)
def test_the_memory_limit_in_megabytes_from_the_environment(monkeypatch, value, expected):
    monkeypatch.setenv(MEMORY_ENV, value)
    assert default_memory_limit() == expected


def test_without_a_usable_setting_a_run_may_use_a_share_of_physical_memory(monkeypatch):
    monkeypatch.setenv(MEMORY_ENV, "lots")
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert default_memory_limit() == int(physical * MEMORY_SHARE)

"""Runs wait passively at the end of OpenMP regions (``protocol.launch.RUNTIME_ENVIRONMENT``): a spinning
thread on a busy machine takes the core its partner needs. What a run's own code sees,
forked and spawned; a setting the user made stands."""

from __future__ import annotations

import pytest

from gradviz.schema.requests import CheckRequest, CodeSource
from gradviz.worker.client import WorkerClient
from gradviz.worker.start_method import START_ENV
from tests.sources import SQUARE

WAIT_POLICY_ENV = "OMP_WAIT_POLICY"

SEEN = (
    SQUARE
    + """
import os
open({out!r}, "w").write(os.environ.get("OMP_WAIT_POLICY", "unset"))
"""
)


@pytest.mark.parametrize(
    ("method", "users", "expected"),
    [("fork", None, "PASSIVE"), ("spawn", None, "PASSIVE"), ("fork", "ACTIVE", "ACTIVE")],
)
def test_a_run_waits_passively_unless_the_user_chose(tmp_path, monkeypatch, method, users, expected):
    monkeypatch.setenv(START_ENV, method)
    if users is None:
        monkeypatch.delenv(WAIT_POLICY_ENV, raising=False)
    else:
        monkeypatch.setenv(WAIT_POLICY_ENV, users)
    path, seen = tmp_path / "square.py", tmp_path / "seen"
    path.write_text(SEEN.format(out=str(seen)), encoding="utf-8")
    with WorkerClient(output=None) as client:
        reply = client.request(CheckRequest(CodeSource(path=str(path)), timeout=120, arrays=False, graph=False))
    assert reply.ok, reply.error
    assert seen.read_text(encoding="utf-8") == expected

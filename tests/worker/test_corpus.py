"""Every bad input in tests/corpus through ``gradviz check FILE --json``, as CI runs it.

Each case gives the exit code, the error kind, a piece of the message and the line the error
must name (tests/corpus/index.json; each file's docstring says the same). The command runs in this
process (the ``cli`` fixture), every case served by the module's one worker: each case's code
runs, crashes or hangs in a run process of its own, and the worker serves on after it (or is
replaced, as the CLI's client replaces a dead one).
"""

from __future__ import annotations

import json
import re
import time

import pytest
import torch

from tests.cli.runner import InProcessCli
from tests.paths import CORPUS

INDEX = json.loads((CORPUS / "index.json").read_text(encoding="utf-8"))["cases"]
DEFAULT_TIMEOUT = 20
EXPECTED_LINE = re.compile(rb"^Expected: .*$", re.M)
MARKER = b"# <- expected line"


def expected_text(case: dict) -> str:
    """The docstring's ``Expected:`` line for an index entry."""
    text = f"Expected: exit {case['exit']}"
    if "kind" in case:
        text += f", kind {case['kind']}"
    if "message" in case:
        text += f', message "{case["message"]}"'
    if "line" in case:
        text += f", line {case['line']}"
    return text + "."


def runnable(case: dict) -> bool:
    return not case.get("cuda") or torch.cuda.is_available()


def run_case(cli: InProcessCli, case: dict) -> tuple[object, float]:
    args = ["check", str(CORPUS / case["file"]), "--json", "--timeout", str(case.get("timeout", DEFAULT_TIMEOUT))]
    start = time.monotonic()
    out = cli(*args, *case.get("args", []))
    return out, time.monotonic() - start


class Runs:
    """Each case of the corpus through the CLI once, when a test first asks for it."""

    def __init__(self, cli: InProcessCli) -> None:
        self.cli = cli
        self.done: dict[str, tuple[object, float]] = {}

    def __getitem__(self, name: str) -> tuple[object, float]:
        if name not in self.done:
            self.done[name] = run_case(self.cli, next(c for c in INDEX if c["file"] == name))
        return self.done[name]


@pytest.fixture(scope="module")
def corpus_runs(cli):
    return Runs(cli)


def test_index_and_files_agree():
    files = {p.name for p in CORPUS.glob("*.py")}
    assert files == {c["file"] for c in INDEX}
    assert len(INDEX) >= 30
    for case in INDEX:
        raw = (CORPUS / case["file"]).read_bytes()
        lines = raw.splitlines()
        if raw.strip():  # the empty file has nothing to say; the index speaks for it
            assert EXPECTED_LINE.search(raw).group().decode() == expected_text(case), case["file"]
        if "line" in case:
            assert MARKER in lines[case["line"] - 1], f"{case['file']}: line {case['line']} lacks the marker"
            assert raw.count(MARKER) == 1, case["file"]


@pytest.mark.parametrize("case", INDEX, ids=[c["file"].removesuffix(".py") for c in INDEX])
def test_corpus_case(case, corpus_runs):
    if not runnable(case):
        pytest.skip("needs a CUDA device")
    out, seconds = corpus_runs[case["file"]]
    context = f"exit {out.returncode}\nstdout: {out.stdout[:2000]}\nstderr: {out.stderr[-3000:]}"
    assert out.returncode == case["exit"], context
    # stdout is exactly one strict JSON object, whatever the code printed or did
    data = json.loads(out.stdout, parse_constant=lambda c: pytest.fail(f"bare {c} in JSON"))
    assert "Traceback (most recent call last)" not in out.stderr, context
    assert "site-packages" not in out.stderr and "gradviz/core" not in out.stderr, context
    if case["exit"] == 2:
        error = data["error"]
        assert error["kind"] == case["kind"], context
        assert case["message"] in error["message"], context
        assert out.stderr.count("gradviz: error:") == 1, context
        if "line" in case:
            assert error["lineno"] == case["line"], context
            assert error["filename"] == str(CORPUS / case["file"])
            assert f"line {case['line']}" in out.stderr, context
    else:
        assert data["passed"] is (case["exit"] == 0), context
        said = data["warnings"] + data["notes"] + [h for b in data["blocks"] for h in b["hints"]]
        assert case.get("message", "") in "\n".join(said), context
    limit = case.get("timeout", DEFAULT_TIMEOUT)
    assert seconds < limit + 15, f"took {seconds:.1f} s"


def test_print_flood_is_passed_on_but_truncated(corpus_runs):
    """Megabytes of prints: the start is on stderr, the rest is summarised, stdout stays JSON."""
    out, _ = corpus_runs["print_flood.py"]
    assert out.returncode == 0 and json.loads(out.stdout)["passed"]
    assert "debug debug" in out.stderr and "not shown]" in out.stderr
    assert len(out.stderr) < 1_000_000

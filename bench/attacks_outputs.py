"""Attacks on what gradviz writes and how its command line refuses (overwrites, hostile reproducer
inputs, memory limits, over-long names, artifact folders, bad window arguments), each performed
for real: real CLI processes, real files, a real pytest session. Each case returns "" when gradviz withstood the attack, else a short reason, and
removes what it made. The window's Export question is covered by tests/app/test_export_overwrite.py.

Run: .venv/bin/python -c "from bench.attacks_outputs import attack_cases; \\
    [print(n, repr(f())) for n, f in attack_cases()]"
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LONG = "a" * 300  # over NAME_MAX (255 bytes)


def _cli(*args: str, cwd: str | Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    for display in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        environment.pop(display, None)
    return subprocess.run(
        [sys.executable, "-m", "gradviz", *args], capture_output=True, text=True, env=environment, cwd=cwd, timeout=120
    )


def _one_line_exit_two(out: subprocess.CompletedProcess, must_say: str = "") -> str:
    lines = out.stderr.strip().splitlines()
    if out.returncode != 2:
        return f"exit {out.returncode}, not 2: {(lines or [''])[-1][:120]}"
    if len(lines) != 1 or "Traceback" in out.stderr:
        return f"{len(lines)} lines on stderr, not one"
    if must_say and must_say not in lines[0]:
        return f"the error does not say {must_say!r}: {lines[0][:120]}"
    return ""


def save_over_arrays() -> str:
    """--save DIR over existing .npy files: refused, the files untouched."""
    with tempfile.TemporaryDirectory() as tmp:
        mine = Path(tmp) / "analytic_o0_i0.npy"
        mine.write_bytes(b"mine")
        out = _cli("check", "linear", "--save", tmp)
        if mine.read_bytes() != b"mine":
            return "--save replaced the user's analytic_o0_i0.npy"
        return _one_line_exit_two(out, "pass --overwrite")


def report_save_over_files() -> str:
    """Report.save into a folder holding report.json, message.txt and reproducer.py."""
    import gradviz
    from tests.api import functions as f

    report = gradviz.check(f.WrongSign, f.inputs(), raise_exception=False)
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("report.json", "message.txt", "reproducer.py"):
            (Path(tmp) / name).write_text("mine")
        try:
            report.save(tmp)
        except FileExistsError as exc:
            if "overwrite=True" not in str(exc):
                return "the refusal does not say how to replace the files"
        else:
            return "report.save wrote over a non-empty folder without a word"
        if any((Path(tmp) / n).read_text() != "mine" for n in ("report.json", "message.txt", "reproducer.py")):
            return "a file of the user's was replaced"
    return ""


SUITE = '''
import pytest
import torch
from gradviz.testing import assert_gradients


class Half(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 1.0

    @staticmethod
    def backward(ctx, grad):
        return 0.5 * grad


@pytest.mark.parametrize("s", [1.0, 2.0], ids=["a/b", "a_b"])
def test_bad(s):
    assert_gradients(Half, torch.full((2,), s, dtype=torch.float64, requires_grad=True))
'''


def _pytest(folder: Path, artifacts: str) -> subprocess.CompletedProcess:
    import importlib.metadata

    (folder / "test_ops.py").write_text(textwrap.dedent(SUITE))
    installed = "gradviz" in {ep.name for ep in importlib.metadata.entry_points(group="pytest11")}
    plugin = [] if installed else ["-p", "gradviz.pytest_plugin"]  # never registered twice
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin, "--gradviz-artifacts", artifacts, "test_ops.py"],
        cwd=folder, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def plugin_ids_that_sanitise_alike() -> str:
    """test_bad[a/b] and test_bad[a_b]: one folder each."""
    with tempfile.TemporaryDirectory() as tmp:
        out = _pytest(Path(tmp), "artifacts")
        if out.returncode != 1:
            return f"pytest exit {out.returncode}, not 1 (two failed tests)"
        folders = [p for p in (Path(tmp) / "artifacts").iterdir() if p.is_dir()]
        return "" if len(folders) == 2 else f"{len(folders)} artifact folder(s) for two test ids"


def plugin_artifacts_is_a_file() -> str:
    """--gradviz-artifacts pointing at a file: the session goes on (was INTERNALERROR, exit 3)."""
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "artifacts").write_text("a file")
        out = _pytest(Path(tmp), "artifacts")
        if "INTERNALERROR" in out.stdout + out.stderr or out.returncode != 1:
            return f"the session was aborted (exit {out.returncode})"
        return "" if "could not write this failure's artifacts under artifacts" in out.stdout else "no message"


def reproducer_injection() -> str:
    """A str subclass whose __repr__ is code: the generated reproducer must not run it."""
    import torch

    import gradviz

    with tempfile.TemporaryDirectory() as tmp:
        marker = Path(tmp) / "payload_ran"
        payload = f"__import__('pathlib').Path({str(marker)!r}).write_text('x')"
        evil = type("Evil", (str,), {"__repr__": lambda self: payload})
        report = gradviz.check(_uses_mode, (torch.ones(2, dtype=torch.float64, requires_grad=True), evil("m")))
        script = Path(tmp) / "reproducer.py"
        script.write_text(report.reproducer())
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        subprocess.run([sys.executable, str(script)], cwd=tmp, env=env, capture_output=True, timeout=120)
        return "the reproducer ran the payload" if marker.exists() else ""


def _uses_mode(x, mode):
    return x * 2.0 if mode == "m" else x


def memory_huge_channels() -> str:
    return _one_line_exit_two(_cli("memory", "--out-channels", "99999999"), "a run may use")


def memory_huge_shape() -> str:
    return _one_line_exit_two(_cli("memory", "--shape", "100000,3,1000,1000"), "a run may use")


def long_target_names() -> str:
    for args in (["check", LONG], ["graph", f"{LONG}.py:F"], ["sweep", f"mod:{LONG}"], [f"{LONG}.py"]):
        reason = _one_line_exit_two(_cli(*args))
        if reason:
            return f"{args[0][:10]}: {reason}"
    return ""


def screenshot_missing_folder() -> str:
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "nonexistent" / "x.png"
        return _one_line_exit_two(_cli("--screenshot", str(target)), "does not exist")


def unknown_example() -> str:
    return _one_line_exit_two(_cli("--example", "nope"), "the examples are: ")


def attack_cases() -> list[tuple[str, Callable[[], str]]]:
    return [
        ("save_over_existing_arrays", save_over_arrays),
        ("report_save_over_existing_files", report_save_over_files),
        ("plugin_ids_that_sanitise_alike", plugin_ids_that_sanitise_alike),
        ("plugin_artifacts_is_a_file", plugin_artifacts_is_a_file),
        ("reproducer_injection", reproducer_injection),
        ("memory_huge_out_channels", memory_huge_channels),
        ("memory_huge_shape", memory_huge_shape),
        ("long_target_names", long_target_names),
        ("screenshot_into_missing_folder", screenshot_missing_folder),
        ("unknown_example", unknown_example),
    ]

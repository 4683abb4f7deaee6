"""Exit codes a script can rely on, and typos that are usage errors (exit 2) before anything starts."""

from __future__ import annotations

import os
import subprocess
import sys

from gradviz.cli.contract import MEANINGS, ExitCode
from tests.cli.runner import gradviz
from tests.paths import ROOT

# Run main() as the console script does and report whether the window's Qt was ever imported.
PROBE = """
import sys
from gradviz.cli.main import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print(code, "PySide6" in sys.modules)
"""


def probe(*args: str) -> subprocess.CompletedProcess:
    """``gradviz ARGS`` where a window could start (offscreen Qt): a typo that reached the app would
    start it instead of ending in a usage line."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "QT_QPA_PLATFORM": "offscreen"}
    return subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_help_lists_every_exit_code():
    for args in (["--help"], ["check", "--help"], ["sweep", "--help"], ["memory", "--help"], ["graph", "--help"]):
        out = gradviz(*args)
        assert out.returncode == 0
        help_text = " ".join(out.stdout.split())  # argparse wraps the lines
        assert "exit codes:" in help_text
        for code in ExitCode:
            assert f"{int(code)} {MEANINGS[code]}" in help_text, (args, code)


def test_an_unknown_option_alone_is_a_usage_error_without_qt():
    out = probe("--jsn")
    assert out.stdout.split() == ["2", "False"], out.stderr
    assert out.stderr.startswith("usage: gradviz") and "unrecognized arguments: --jsn" in out.stderr


def test_an_unknown_option_before_a_command_names_only_itself():
    """``gradviz --jsn check linear``: the main parser reads it, so "check" is not taken for a file
    to open in the window and the message names --jsn alone."""
    out = probe("--jsn", "check", "linear")
    assert out.stdout.split() == ["2", "False"], out.stderr
    assert "{check,sweep,memory,graph,audit,list,app}" in out.stderr
    assert out.stderr.rstrip().endswith("unrecognized arguments: --jsn")


def test_an_unknown_option_after_a_command_is_a_usage_error():
    out = gradviz("check", "linear", "--jsn")
    assert out.returncode == ExitCode.ERROR == 2
    assert out.stderr.startswith("usage: gradviz") and "unrecognized arguments: --jsn" in out.stderr
    assert out.stdout == ""

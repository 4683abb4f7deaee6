"""What scripts may rely on from ``gradviz`` on the command line: exit codes, JSON documents, usage.

One table of exit codes (``ExitCode``) is used by the code and printed by ``--help``. Every
``--json`` document (a verdict or an error) is strict JSON stamped with ``schema_version`` and
``gradviz_version`` (``gradviz.schema.json_schemas``). An option nobody knows is a usage error
(exit 2, argparse's usage line) before any worker or window starts.
"""

from __future__ import annotations

import argparse
import textwrap
from enum import IntEnum
from typing import Any

from gradviz.schema.json_schemas import stamp
from gradviz.schema.strict_json import dumps


class ExitCode(IntEnum):
    PASS = 0
    MISMATCH = 1
    ERROR = 2
    INTERRUPTED = 130
    TERMINATED = 143


MEANINGS = {
    ExitCode.PASS: "every block passes (sweep, graph, memory, list: the command ran)",
    ExitCode.MISMATCH: "check: the gradients do not match (some cell or check fails)",
    ExitCode.ERROR: "usage error (unknown option, bad value), or no verdict: the Function's code, the "
    "worker, a file or the output failed (--json: an {\"error\": ...} document)",
    ExitCode.INTERRUPTED: "interrupted (Ctrl+C, SIGINT)",
    ExitCode.TERMINATED: "terminated (SIGTERM)",
}


def exit_codes_help() -> str:
    """The exit-code table as ``--help`` prints it (an epilog)."""
    rows = (textwrap.fill(MEANINGS[code], 96, initial_indent=f"  {int(code):<5}", subsequent_indent=" " * 7) for code in ExitCode)
    return "exit codes:\n" + "\n".join(rows)


def add_exit_codes(*parsers: argparse.ArgumentParser) -> None:
    """Print the exit codes at the end of each parser's help (the main one, each command's)."""
    for each in parsers:
        each.epilog = exit_codes_help()
        each.formatter_class = argparse.RawDescriptionHelpFormatter


def json_document(body: dict[str, Any], target: str | None = None) -> str:
    """A document for ``--json``: stamped, strict, one line. With several targets in one call
    each document is one line of JSON Lines, and ``target`` says which it is (a field the schemas
    allow: new fields may appear within a version)."""
    return dumps(stamp({"target": target, **body} if target else body))


def error_document(detail: dict[str, Any], target: str | None = None) -> str:
    """The ``--json`` document of a run that gave no verdict."""
    return json_document({"error": detail}, target)


def misplaced_options(argv: list[str], commands: tuple[str, ...]) -> bool:
    """True when options come before a command (``gradviz --jsn check linear``): the main parser
    must read them, as it does for ``gradviz check linear --jsn``, instead of the window's parser
    taking the command for a file to open."""
    return bool(argv) and argv[0].startswith("-") and any(word in commands for word in argv[1:])


def short(text: str, limit: int = 120) -> str:
    """A user's name for an error line: long names (a 4 KB path) cut in the middle."""
    return text if len(text) <= limit else f"{text[: limit // 2]}...{text[-limit // 2 :]}"

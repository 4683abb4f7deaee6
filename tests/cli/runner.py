"""Run the real command line in a subprocess, the way CI scripts run it.

Every ``--json`` document a test gets from ``gradviz(...)`` is validated against the JSON Schema
that ships in the package (``check_document``), so each CLI test also checks the schema.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.paths import ROOT


def gradviz(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for display in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):  # a CLI with no screen at all
        env.pop(display, None)
    out = subprocess.run(
        [sys.executable, "-m", "gradviz", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=300,
    )
    if "--json" in args and args[0] in JSON_COMMANDS and out.stdout.strip():
        several = "--all" in args  # JSON Lines: one document a target
        for text in out.stdout.splitlines() if several else [out.stdout]:
            if text.strip():
                check_document(args[0], json.loads(text))
    return out


JSON_COMMANDS = ("check", "sweep", "memory", "graph")


def check_document(command: str, data: dict) -> None:
    """``data`` is a valid ``gradviz COMMAND --json`` document (or error document); else a
    jsonschema.ValidationError saying where it is not."""
    import jsonschema

    from gradviz.schema.json_schemas import load

    schema = load("error" if "error" in data else command)
    jsonschema.Draft202012Validator(schema).validate(data)

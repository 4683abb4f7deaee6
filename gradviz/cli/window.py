"""Starting the window from the command line: what a core install lacks, and what the window
could not honour, each said in one line (exit 2) before Qt is imported."""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path

from gradviz._version import DISTRIBUTION
from gradviz.cli.contract import ExitCode, short
from gradviz.protocol.launch import worker_unsupported

# The window's packages (the [app] extra), as imported: a core install (`pip install gradviz-debugger`) has none.
APP_MODULES = ("PySide6", "pyqtgraph", "pygments", "platformdirs")


def missing_app_module() -> str | None:
    """The first of the window's packages that is not installed, found without importing any
    (Qt is imported once, by the window)."""
    for name in APP_MODULES:
        try:
            if importlib.util.find_spec(name) is None:
                return name
        except ImportError:  # a finder that refuses the name: as good as absent
            return name
    return None


def launch_window(argv: list[str]) -> int:
    """``gradviz`` with no command, ``gradviz app ...``, ``gradviz FILE.py``: the window, or one
    line saying why not (its packages missing, an argument it could not honour), before Qt starts."""
    unsupported = worker_unsupported()  # the window runs every check in the worker
    if unsupported:
        print(f"gradviz: {unsupported}", file=sys.stderr)
        return ExitCode.ERROR
    missing = missing_app_module()
    if missing:
        print(
            f"gradviz: the window needs {missing}, which is not installed: pip install '{DISTRIBUTION}[app]' "
            "(gradviz check, the Python API and the pytest plugin work without it).",
            file=sys.stderr,
        )
        return ExitCode.ERROR
    from gradviz.app.launch import parse_app_args, run_app

    refused = refuse_app_arguments(parse_app_args(argv))
    if refused:
        print(f"gradviz: error: {refused}", file=sys.stderr)
        return ExitCode.ERROR
    return run_app(argv)


SCREENSHOT_FORMATS = (".png", ".jpg", ".jpeg", ".bmp")  # what QPixmap.save writes on every platform


def refuse_app_arguments(args: argparse.Namespace) -> str | None:
    """What the window could not honour, said before Qt starts (exit 2); None when all is fine.

    A screenshot into a folder that is not there is refused, not created: a typo in the folder
    would otherwise scatter folders, and the user sees at once which path was wrong. An unknown
    ``--example`` is refused with the list, instead of opening the default as if asked for.
    """
    from gradviz.schema.library import builtin_functions, find_builtin
    from gradviz.schema.targets import path_exists

    if args.path:
        try:
            os.stat(args.path)
        except (OSError, ValueError) as exc:  # ENAMETOOLONG and the like: a line, not a traceback
            why = "no such file" if isinstance(exc, FileNotFoundError) else getattr(exc, "strerror", None) or exc
            return f"cannot open {short(args.path)}: {why}."
    if args.screenshot:
        shot = Path(args.screenshot)
        folder = shot.parent
        if shot.suffix.lower() not in SCREENSHOT_FORMATS:
            return f"--screenshot {short(args.screenshot)}: name a {', '.join(SCREENSHOT_FORMATS)} file."
        if not os.path.isdir(folder):  # never raises: a name too long is not a folder
            return f"--screenshot {short(args.screenshot)}: the folder {short(str(folder))} does not exist; create it first."
        if not os.access(folder, os.W_OK):
            return f"--screenshot {short(args.screenshot)}: the folder {short(str(folder))} is not writable."
        if path_exists(shot) and not os.path.isfile(shot):
            return f"--screenshot {short(args.screenshot)}: that path is a folder or a special file, not an image file."
    if args.example is not None:
        try:
            found = find_builtin(args.example)
        except (OSError, ValueError):
            found = None
        if found is None:
            names = ", ".join(entry.name for entry in builtin_functions())
            return f"--example {short(args.example)}: no such built-in example; the examples are: {names}."
    return None

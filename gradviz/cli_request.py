"""From the command line to the worker: the request naming the user's code, validated here, sent
to a fresh worker with a progress line on a terminal, its failure reported as the CLI prints it."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gradviz.cli_contract import ExitCode
from gradviz.cli_output import print_error, report_worker_error, stdout_usable
from gradviz.schema.settings import CheckSettings


def resolve_file(name: str) -> Path:
    """The file a target names: a path that exists or ends in .py, else a built-in example's.
    A name the OS refuses to look up (over 255 bytes, say) is neither: opening it says why."""
    from gradviz.schema.library import find_builtin
    from gradviz.schema.targets import path_exists

    path = Path(name)
    if path_exists(path) or path.suffix == ".py":
        return path
    try:
        return find_builtin(name) or path
    except (OSError, ValueError):
        return path


def code_request(text: str, function: str | None, inputs: str | None) -> dict:
    """The part of a request that names the user's code: a file by ``path`` (with ``function``), or
    a ``target`` (a module, a file's named object, or a file with ``inputs_path``); refused here
    (GradvizError) when the file or the inputs file is not there."""
    from gradviz.schema.source_files import check_source_file
    from gradviz.schema.targets import (
        check_inputs_path,
        is_module_target,
        locate_module,
        parse_target,
        path_exists,
    )

    request: dict = {"function": function}
    if inputs is not None:
        request["inputs_path"] = str(check_inputs_path(inputs).resolve())
    if is_module_target(text) and not path_exists(text):
        module, _, name = text.partition(":")
        located = locate_module(module, Path.cwd())
        if located is not None:
            request["filename"] = str(located.resolve())  # to quote its lines if a run hangs or crashes
        return {**request, "target": text, "function": _one_name(name, function)}
    target = parse_target(text)
    path = check_source_file(resolve_file(target.path)).resolve()
    request["path"] = str(path)
    if target.attribute or inputs is not None:
        name = _one_name(target.attribute, function)
        request.update(target=f"{path}:{name}" if name else str(path), function=name)
    return request


def _one_name(in_target: str | None, flag: str | None) -> str | None:
    from gradviz.schema.errors import SettingsError

    if in_target and flag and in_target != flag:
        raise SettingsError(f"Two names for the Function: {in_target} (in the target) and --function {flag}; give one.")
    return in_target or flag


def run_in_worker(
    op: str, args: argparse.Namespace, settings: Callable[[], CheckSettings], extra: dict[str, Any]
) -> Any:
    """Validate, send one request to a fresh worker, and report its failure; the Reply or None.

    Every bad value and bad file is refused here, before a worker starts or user code runs.
    """
    from gradviz.schema.errors import GradvizError
    from gradviz.schema.settings import check_timeout
    from gradviz.terminal_progress import TerminalProgress
    from gradviz.worker.client import WorkerStartError, run_request

    if not stdout_usable(args.json):
        return None
    try:
        timeout = check_timeout(args.timeout)
        checked = settings()
        checked.validate()
        code = code_request(args.file, args.function, getattr(args, "inputs", None))
    except GradvizError as exc:
        report_worker_error(exc.to_dict(), args.json)
        return None
    request = {**code, "settings": checked.to_dict(), **extra}
    try:  # a progress line on stderr when it is a terminal (with --json too: stdout stays the JSON)
        with TerminalProgress(sys.stderr) as progress:
            reply = run_request(op, request, timeout=timeout, output=progress, progress=progress)
    except WorkerStartError as exc:
        print_error("worker", str(exc), "", args.json, None)
        return None
    except KeyboardInterrupt as exc:  # Ctrl+C, or SIGTERM (Terminated): the worker's tree is gone by now
        print(f"gradviz: {str(exc) or 'interrupted'}", file=sys.stderr)
        raise SystemExit(getattr(exc, "exit_code", ExitCode.INTERRUPTED)) from None
    if not reply.ok:
        report_worker_error(reply.error or {"kind": "internal", "message": "No answer."}, args.json)
        return None
    return reply

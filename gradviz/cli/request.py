"""From the command line to the worker: the request naming the user's code, validated here, sent
to a fresh worker with a progress line on a terminal, its failure reported as the CLI prints it."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, cast

from gradviz.cli.contract import ExitCode
from gradviz.cli.output import print_error, report_worker_error, stdout_usable
from gradviz.schema.requests import CodeSource, Request
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


def code_request(
    text: str, function: str | None, inputs: str | None, parameters: bool | tuple[str, ...] | None = None
) -> CodeSource:
    """Where the user's code is: a file by ``path`` (with ``function``), or a ``target`` (a module,
    a file's named object, or a file with ``inputs_path``).

    Args:
        text: the target as typed (``FILE.py[:Name]``, ``package.module:Name``, a built-in's name).
        function: ``--function``, or None.
        inputs: ``--inputs``, or None.
        parameters: ``--parameters``: True for all of a module's, a tuple for those named.

    Returns:
        The request's code source.

    Raises:
        GradvizError: the file or the inputs file is not there, or two names for the Function.
    """
    from gradviz.schema.source_files import check_source_file
    from gradviz.schema.targets import check_inputs_path, locate_module, names_a_module, parse_target

    inputs_path = str(check_inputs_path(inputs).resolve()) if inputs is not None else None
    if names_a_module(text):
        module, _, name = text.partition(":")
        located = locate_module(module, Path.cwd())
        return CodeSource(
            target=text,
            filename=str(located.resolve()) if located is not None else None,  # to quote its lines after a hang
            inputs_path=inputs_path,
            function=_one_name(name, function),
            parameters=parameters,
        )
    target = parse_target(text)
    path = check_source_file(resolve_file(target.path)).resolve()
    if target.attribute or inputs is not None:
        named = _one_name(target.attribute, function)
        return CodeSource(
            path=str(path),
            target=f"{path}:{named}" if named else str(path),
            inputs_path=inputs_path,
            function=named,
            parameters=parameters,
        )
    return CodeSource(path=str(path), function=function, parameters=parameters)


def refuse_for_several(args: argparse.Namespace) -> None:
    """Options that name one thing cannot be shared by several targets: refused (SettingsError)
    with what to write instead. ``--inputs`` is shared (the same arguments for each Function),
    ``--save DIR`` gives each target a subfolder of DIR (``save_bases``)."""
    from gradviz.schema.errors import SettingsError

    if args.function:
        raise SettingsError(
            f"--function {args.function} names one Function, but there are several targets (or --all); "
            "name each one in its target instead (FILE.py:Name or package.module:Name)."
        )
    if isinstance(args.parameters, str):
        raise SettingsError(
            "--parameters NAMES names the parameters of one module, but there are several targets (or --all); "
            "check that module alone, or pass --parameters without names to check all of each module's."
        )


def save_bases(targets: list[str]) -> dict[str, str]:
    """``--save DIR`` with several targets: each target's subfolder of DIR (``a.py`` -> ``a``,
    ``a.py:Cube`` -> ``a.Cube``, ``pkg.mod:F`` -> ``pkg.mod.F``); two targets that would share one
    are refused (SettingsError) before anything runs."""
    from gradviz.schema.errors import SettingsError
    from gradviz.schema.targets import parse_target

    bases: dict[str, str] = {}
    for text in targets:
        target = parse_target(text)
        where = target.module or target.path or text
        stem = Path(where).stem if where.endswith(".py") or target.path else where
        base = save_name(f"{stem}.{target.attribute}" if target.attribute else stem)
        twin = next((other for other, b in bases.items() if b == base and other != text), None)
        if twin is not None:
            raise SettingsError(
                f"--save: {twin} and {text} would both save into {base}/; save them in separate calls, "
                "or give the files different names."
            )
        bases[text] = base
    return bases


def save_name(name: str | None) -> str:
    """A folder name for a target or a Function (a custom op's ``ns::name`` -> ``ns__name``)."""
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name or "") or "_"


def function_list(text: str) -> list[str] | None:
    """``--all``: the Functions of a file target, read without running it (``function_names``, the
    list the window shows before a run); the worker's exact list replaces it after the first check.
    None for a target that names its Function (``FILE.py:Name``, ``package.module:Name``); an
    empty list when the file cannot be read here (the check says why)."""
    from gradviz.schema.errors import GradvizError
    from gradviz.schema.library import function_names
    from gradviz.schema.source_files import read_source_text
    from gradviz.schema.targets import names_a_module, parse_target

    if names_a_module(text):
        return None
    target = parse_target(text)
    if target.attribute:
        return None
    try:
        return function_names(read_source_text(resolve_file(target.path or text)))
    except (GradvizError, OSError, ValueError):  # unreadable: the check itself refuses it with the reason
        return []


def _one_name(in_target: str | None, flag: str | None) -> str | None:
    from gradviz.schema.errors import SettingsError

    if in_target and flag and in_target != flag:
        raise SettingsError(f"Two names for the Function: {in_target} (in the target) and --function {flag}; give one.")
    return in_target or flag


def run_in_worker(
    args: argparse.Namespace, settings: Callable[[], CheckSettings], make: Callable[..., Request]
) -> Any:
    """Validate, send one request to a fresh worker, and report its failure; the Reply or None.

    Every bad value and bad file is refused here, before a worker starts or user code runs.

    Args:
        args: the parsed command line (its file, function, inputs, timeout, json).
        settings: the run's settings, built from ``args``.
        make: the request, from ``code=``, ``settings=`` and ``timeout=`` (a request class, or a
            ``functools.partial`` of one with the command's own options).

    Returns:
        The worker's Reply, or None once its error is reported.
    """
    from gradviz.schema.errors import GradvizError

    if not stdout_usable(args.json):
        return None
    try:
        timeout = validated_timeout(args, settings)
        code = code_request(args.file, args.function, getattr(args, "inputs", None))
    except GradvizError as exc:
        report_worker_error(exc.to_dict(), args.json)
        return None
    with WorkerSession(args.json) as session:
        return session.ask(make(code=code, settings=settings(), timeout=timeout))


def validated_timeout(args: argparse.Namespace, settings: Callable[[], CheckSettings]) -> float | None:
    """The ``--timeout`` in seconds, once the settings are checked too (GradvizError if not)."""
    from gradviz.schema.settings import check_timeout

    timeout = check_timeout(args.timeout)
    settings().validate()
    return timeout


class WorkerSession:
    """One worker for every request of a command (``gradviz check a.py b.py``: torch imported
    once), started by the first; each request with a progress line on stderr when it is a
    terminal (with --json too: stdout stays the JSON). ``pids``: each worker process it used."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json
        self.pids: list[int] = []
        self.failed: str | None = None  # why the worker could not start, once it could not
        self.failed_kind = "worker"
        self._line: Any = None  # the progress line of the request running now

    def __enter__(self) -> WorkerSession:
        from gradviz.worker.client import worker_session

        # the Function's output: write() and flush() below, all the client calls on it
        self._session = worker_session(output=cast("IO[str]", self))
        self._client = self._session.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._session.__exit__(*exc)

    def write(self, text: str) -> None:
        (self._line or sys.stderr).write(text)

    def flush(self) -> None:
        (self._line or sys.stderr).flush()

    def ask(self, request: Request, target: str | None = None) -> Any:
        """Send one request; the Reply, or None once its error is reported (naming ``target``)."""
        from gradviz.cli.progress import TerminalProgress
        from gradviz.worker.client import WorkerStartError

        if self.failed is not None:  # a worker that cannot start is not started again for each target
            print_error(self.failed_kind, self.failed, "", self.as_json, None, target)
            return None
        try:
            with TerminalProgress(sys.stderr) as progress:
                self._line = progress
                reply = self._client.request(request, progress=progress)
        except WorkerStartError as exc:  # no temporary folder, no interpreter: one line, exit 2
            self.failed, self.failed_kind = exc.message, str(exc.kind)
            print_error(self.failed_kind, self.failed, "", self.as_json, None, target)
            return None
        except KeyboardInterrupt as exc:  # Ctrl+C, or SIGTERM (Terminated): the worker's tree is gone by now
            print(f"gradviz: {str(exc) or 'interrupted'}", file=sys.stderr)
            raise SystemExit(getattr(exc, "exit_code", ExitCode.INTERRUPTED)) from None
        finally:
            self._line = None
        if self._client.pid and self._client.pid not in self.pids:
            self.pids.append(self._client.pid)
        if not reply.ok and reply.kind == "worker" and not self._client.info:
            self.failed = (reply.error or {}).get("message", "The gradviz worker did not start.")
        if not reply.ok:
            report_worker_error(reply.error or {"kind": "internal", "message": "No answer."}, self.as_json, target)
            return None
        return reply

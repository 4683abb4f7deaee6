"""Run the real command line: in a subprocess, the way CI scripts run it (``gradviz``), or in
this process with one worker kept up across calls (``InProcessCli``, the ``cli`` fixture).

Every ``--json`` document a test gets from either is validated against the JSON Schema that
ships in the package (``check_document``), so each CLI test also checks the schema.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

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
    validate_json(args, out)
    return out


JSON_COMMANDS = ("check", "sweep", "memory", "graph")


def check_document(command: str, data: dict) -> None:
    """``data`` is a valid ``gradviz COMMAND --json`` document (or error document); else a
    jsonschema.ValidationError saying where it is not."""
    import jsonschema

    from gradviz.schema.json_schemas import load

    schema = load("error" if "error" in data else command)
    jsonschema.Draft202012Validator(schema).validate(data)


# The commands the in-process runner takes: each talks to the worker and opens no window.
IN_PROCESS_COMMANDS = ("check", "sweep", "memory", "graph", "audit", "list", "--version")


class InProcessCli:
    """``gradviz.cli.main.main(args)`` in this process, its requests served by one worker that
    stays up between calls: the verdict, exit status and printed text of a ``gradviz`` command
    without a CLI process and a worker (torch imported) started for each call.

    For the tests that read what a command says. Those about the CLI's own process (its streams,
    signals, environment, working folder) or about a fresh worker run ``gradviz()`` instead. Each
    run is a fresh process forked from the worker, which serves on in the same clean state after
    any run (a dead or wedged worker is replaced by the client's next request); a worker started
    under another environment or working folder is replaced before the call.
    """

    def __init__(self) -> None:
        self._client: Any = None
        self._started_under: tuple | None = None

    def __enter__(self) -> InProcessCli:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def __call__(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
        """What ``gradviz(*args, cwd=cwd)`` returns, the JSON documents validated the same way."""
        import gradviz.worker.client as client_module
        from gradviz.cli.main import main

        if not args or args[0] not in IN_PROCESS_COMMANDS:
            raise ValueError(f"gradviz {' '.join(args)} may open a window: run it with gradviz()")
        stdout, stderr = io.StringIO(), io.StringIO()
        replaced = {"worker_session": self._session, "run_request": self._run_request}
        originals = {name: getattr(client_module, name) for name in replaced}
        _refuse_early_imports(originals)
        for name, value in replaced.items():
            setattr(client_module, name, value)
        try:
            with contextlib.chdir(cwd or os.getcwd()), contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                try:
                    code = main(list(args))
                except SystemExit as exc:  # argparse's usage errors and --help
                    code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        finally:
            for name, value in originals.items():
                setattr(client_module, name, value)
        out = subprocess.CompletedProcess(
            [sys.executable, "-m", "gradviz", *args], int(code), stdout.getvalue(), stderr.getvalue()
        )
        validate_json(args, out)
        return out

    @contextlib.contextmanager
    def _session(self, *, output: IO[str] | None = sys.stderr) -> Iterator[Any]:
        """``worker_session``, with the shared worker: it prints the Function's output to ``output``
        and is not closed at the end."""
        client = self._shared_client()
        client._output.sink = output
        try:
            yield client
        finally:
            client._output.sink = None

    def _run_request(
        self,
        request: Any,
        *,
        output: IO[str] | None = sys.stderr,
        progress: Callable[[int, int], None] | None = None,
    ) -> Any:
        """``run_request``, with the shared worker."""
        with self._session(output=output) as client:
            return client.request(request, progress=progress)

    def _shared_client(self) -> Any:
        from gradviz.protocol.launch import worker_environment
        from gradviz.worker.client import WorkerClient

        env = worker_environment(warm=True)
        env.pop("PYTEST_CURRENT_TEST", None)  # differs per test; the worker never reads it
        under = (os.getcwd(), tuple(sorted(env.items())))
        if self._client is None or under != self._started_under:
            self.close()
            self._client, self._started_under = WorkerClient(output=None), under
        return self._client


def _refuse_early_imports(originals: dict[str, object]) -> None:
    """The CLI takes ``worker_session`` and ``run_request`` from ``gradviz.worker.client`` when it
    needs a worker, so replacing them there reaches it. A CLI module that imported one at its top
    would start a worker of its own for each call, unseen: say so instead."""
    for name, module in list(sys.modules.items()):
        if name.startswith("gradviz.cli") and module is not None:
            held = [attr for attr, value in originals.items() if getattr(module, attr, None) is value]
            if held:
                raise RuntimeError(f"{name} imports {', '.join(held)} at its top: update tests/cli/runner.py's InProcessCli")


def validate_json(args: tuple[str, ...], out: subprocess.CompletedProcess) -> None:
    """Each ``--json`` document on stdout against the JSON Schema that ships in the package."""
    if "--json" in args and args[0] in JSON_COMMANDS and out.stdout.strip():
        several = "--all" in args  # JSON Lines: one document a target
        for text in out.stdout.splitlines() if several else [out.stdout]:
            if text.strip():
                check_document(args[0], json.loads(text))

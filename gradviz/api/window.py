"""``gradviz.show`` and ``Report.show``: the desktop window on exactly this Function and inputs.

The window's process never imports torch, so nothing live travels: the inputs go as a file
written by ``torch.save`` that ``torch.load(weights_only=True)`` reads back (checked before
launching), the Function as an import target (``pkg.ops:Square``) or, when it lives in a
notebook or a script, as a source file written next to the inputs, and the settings as JSON.
A module checked with its parameters travels as a module written next to the inputs that
rebuilds it from its class and state (``gradviz.api.reproducer_module``).
The window hands target and inputs to its worker, which rebuilds both. ::

    python -m gradviz app --target pkg.ops:Square --inputs DIR/inputs.pt --settings DIR/settings.json
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from gradviz.api.arguments import as_arguments, module_with_parameters, owned_copies, settings_for
from gradviz.api.locate import reach
from gradviz.api.reproducer_module import built_module, window_source
from gradviz.protocol.display import display_problem
from gradviz.protocol.launch import SAFE_PATH, package_root, safe_pythonpath, worker_unsupported
from gradviz.schema.settings import CheckSettings

NO_DISPLAY = (
    "gradviz: no display here ({problem}), so the window cannot open. In a notebook, show the report "
    "itself (a cell ending in `report`) or keep its figures with `report.save(DIR)`; in a terminal, run "
    "`gradviz check TARGET --inputs FILE`."
)
FOLDER_PREFIX = "gradviz-show-"
MODULE_FILE = "gv_checked_module"  # the module (checked with its parameters) rebuilt, in the folder written


@dataclass
class Launch:
    """Everything the window's process is started with; the files are written already."""

    command: list[str]
    env: dict[str, str]
    cwd: str
    folder: Path
    target: str
    inputs_path: Path
    settings_path: Path
    paths: list[str] = field(default_factory=list)  # folders the target's imports need


def prepare_launch(
    fn: Callable[..., Any], inputs: tuple[Any, ...], settings: CheckSettings, folder: str | Path | None = None
) -> Launch:
    """Write inputs, settings and (if needed) the Function's source; build the command line."""
    folder = Path(folder) if folder is not None else Path(tempfile.mkdtemp(prefix=FOLDER_PREFIX))
    folder.mkdir(parents=True, exist_ok=True)
    built = built_module(fn)
    if built is not None:  # a module checked with its parameters: a file that rebuilds it, state and all
        text, name, paths = window_source(built)
        (folder / f"{MODULE_FILE}.py").write_text(text, encoding="utf-8")
        target, paths = f"{MODULE_FILE}:{name}", [str(folder), *paths]  # imported: it defines no Function class
    elif (where := reach(fn)).module is not None:  # NotWritable (a ValueError): neither importable nor writable
        target, paths = f"{where.module}:{where.name}", [where.root] if where.root else []
    else:
        assert where.source is not None  # reach() gives a module or the source
        source = folder / "checked_function.py"
        source.write_text(where.source, encoding="utf-8")
        target, paths = f"{source}:{where.name}", []
    inputs_path = folder / "inputs.pt"
    save_inputs(inputs, inputs_path)
    settings_path = folder / "settings.json"
    settings_path.write_text(json.dumps(settings.to_dict(), allow_nan=False), encoding="utf-8")
    command = [
        sys.executable, *SAFE_PATH, "-m", "gradviz", "app",  # -P: a numpy.py in the notebook's folder stays out
        "--target", target, "--inputs", str(inputs_path), "--settings", str(settings_path),
    ]  # fmt: skip
    env = dict(os.environ)
    env["PYTHONPATH"] = safe_pythonpath(package_root(), *paths, env.get("PYTHONPATH"))
    return Launch(command, env, os.getcwd(), folder, target, inputs_path, settings_path, paths)


def save_inputs(inputs: tuple[Any, ...], path: Path) -> None:
    """``torch.save`` the arguments, and make sure ``weights_only`` loading accepts them."""
    try:
        torch.save(tuple(inputs), path)
        torch.load(path, weights_only=True)
    except Exception as exc:
        path.unlink(missing_ok=True)
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        detail = next(
            (line for line in lines if "Unsupported global" in line),
            lines[-1] if lines else type(exc).__name__,
        )
        raise ValueError(
            "The inputs cannot travel to the window: saving them with torch.save and loading them with "
            f"weights_only=True fails ({detail}). Pass tensors, numbers, strings, None and tuples, lists or "
            "dicts of them."
        ) from None


def show_in_window(
    fn: Callable[..., Any], inputs: tuple[Any, ...], settings: CheckSettings
) -> subprocess.Popen[bytes] | None:
    """Start the window on ``fn`` and ``inputs``; None, and one line saying why, without a display
    (asked by connecting to it, before any file is written or process started)."""
    problem = display_problem()
    if problem is not None:
        print(NO_DISPLAY.format(problem=problem), file=sys.stderr)
        return None
    unsupported = worker_unsupported()  # the window checks in its worker: none on Windows
    if unsupported is not None:
        print(f"gradviz: {unsupported}", file=sys.stderr)
        return None
    launch = prepare_launch(fn, inputs, settings)
    return subprocess.Popen(launch.command, cwd=launch.cwd, env=launch.env, start_new_session=True)


def show(fn: Callable[..., Any], inputs: Any, **options: Any) -> subprocess.Popen[bytes] | None:
    """Open the desktop window on ``fn`` and ``inputs`` without checking here first.

    The window runs in a process of its own and checks in its worker, so nothing of the caller's
    process is touched; the inputs travel as a ``torch.save`` file.

    Args:
        fn: what :func:`gradviz.check` takes: a Function class, its ``.apply``, a custom op or a
            callable built on these.
        inputs: a tensor or a tuple of arguments, as gradcheck takes them.
        **options: :func:`gradviz.check`'s settings (eps, atol, rtol, nondet_tol, jacobian_only,
            all_checks, device, max_memory_mb, gradcheck's modes, ...), and ``parameters`` for an
            ``nn.Module``: its class is rebuilt in the window's worker with no arguments and the
            state it has now.

    Returns:
        The window's process; None, with one line on stderr saying why, when there is no display
        or the platform cannot run the worker (Windows).

    Raises:
        GradvizError: bad settings (``SettingsError``), checked before anything starts.
        TypeError: an unknown option, or ``parameters`` for something that is not an ``nn.Module``.
        ValueError: no tensor among the inputs, inputs that cannot travel to the window
            (``torch.load(weights_only=True)`` refuses them), or a Function that can be neither
            imported nor written out as source.
    """
    args = as_arguments(inputs)
    parameters = options.pop("parameters", False)
    if parameters is not False:
        checkable, args = module_with_parameters(fn, args, parameters)
        fn = checkable.apply
    settings, device = settings_for(args, **options)
    return show_in_window(fn, owned_copies(args, device), settings)

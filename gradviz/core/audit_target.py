"""``gradviz audit FILE.py:NAME`` / ``pkg.mod:NAME``: the model and its inputs, in the worker.

NAME is an ``nn.Module`` class or a factory (any callable taking no arguments) returning a module
or a callable; it is built under the run's seed, a module is moved to the run's device and dtype
(its floating parameters and buffers, as ``Module.to`` does), and the inputs come from the file's
``example_inputs(device, dtype)`` (seeded) or from ``--inputs FILE``. Unlike ``gradviz check``'s
loader, a file need not define a Function itself: the model may use Functions it never imports
at its top level; an audit that meets none says so.
"""

from __future__ import annotations

import inspect
import linecache
import sys
import types
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from gradviz.core.inputs import resolve_device, resolve_dtype
from gradviz.core.loader import (
    TargetError,
    _syntax_error,
    import_target_module,
    load_inputs_file,
    read_source,
)
from gradviz.schema.errors import ErrorKind, from_exception
from gradviz.schema.settings import CheckSettings


@dataclass
class ModelTarget:
    """The model built from a target, the inputs of its forward, and what to call it."""

    model: Any
    inputs: tuple[Any, ...]
    name: str
    filename: str


def load_model_target(
    *, path: str | None, target: str | None, name: str | None, inputs_path: str | None, settings: CheckSettings
) -> ModelTarget:
    """Import the file or module, build NAME, draw its inputs; TargetError or UserCodeError with
    one line saying what is wrong and what to do."""
    if path:
        module = _run_file(Path(path))
    elif target:
        module_name, _, named = target.partition(":")
        name = name or named
        module = import_target_module(module_name)
    else:
        raise TargetError(ErrorKind.NO_FUNCTION, "Name the model to audit: FILE.py:NAME or package.module:NAME.")
    filename = getattr(module, "__file__", None) or "<module>"
    if not name:
        raise TargetError(
            ErrorKind.NO_FUNCTION,
            f"Name the model to audit in {filename}: FILE.py:NAME, NAME an nn.Module class or a factory returning one.",
        )
    device, dtype = resolve_device(settings.device), resolve_dtype(settings.dtype)
    with torch.random.fork_rng(devices=[device.index or 0] if device.type == "cuda" else []):
        torch.manual_seed(settings.seed)
        model = _build(module, name, filename)
        if isinstance(model, torch.nn.Module):
            model.to(device=device, dtype=dtype)
        inputs = _inputs(module, name, filename, inputs_path, device, dtype)
    return ModelTarget(model, inputs, name, filename)


def _run_file(path: Path) -> types.ModuleType:
    """Run the file as ``python file.py`` would import it, its folder first on ``sys.path``."""
    path = path.resolve()
    source = read_source(path)
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    filename = str(path)
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    try:
        code = compile(source, filename, "exec")
    except SyntaxError as exc:
        raise _syntax_error(exc, filename) from None
    module = types.ModuleType(f"usercode_{uuid.uuid4().hex[:12]}")
    module.__file__ = filename
    sys.modules[module.__name__] = module
    try:
        exec(code, module.__dict__)
    except (Exception, SystemExit) as exc:
        raise from_exception(ErrorKind.IMPORT, exc, filename, "Running the file") from None
    return module


def _build(module: types.ModuleType, name: str, filename: str) -> Any:
    """NAME() (a class or a factory); refused before the call when it needs arguments."""
    obj: Any = module
    for part in name.split("."):
        if not hasattr(obj, part):
            raise TargetError(ErrorKind.UNKNOWN_FUNCTION, f"{filename} has no attribute {part!r}.")
        obj = getattr(obj, part)
    if isinstance(obj, torch.nn.Module):
        return obj  # a module instance the file made itself
    if not callable(obj):
        raise TargetError(
            ErrorKind.NO_FUNCTION, f"{name} is a {type(obj).__name__}: name an nn.Module class or a factory returning one."
        )
    try:
        inspect.signature(obj).bind()
    except TypeError:
        raise TargetError(
            ErrorKind.NO_FUNCTION,
            f"{name}{_signature(obj)} needs arguments, but gradviz builds the model by calling {name}() with none: "
            f"give them defaults, or name a factory that takes none (def make_model(): return {name}(...)).",
        ) from None
    except ValueError:  # no signature to read (a builtin): the call itself says
        pass
    try:
        model = obj()
    except (Exception, SystemExit) as exc:
        raise from_exception(ErrorKind.EXAMPLE_INPUTS, exc, filename, f"Building the model, {name}()") from None
    if not callable(model):
        raise TargetError(
            ErrorKind.NO_FUNCTION, f"{name}() returned a {type(model).__name__}, not an nn.Module or a callable to audit."
        )
    return model


def _signature(obj: Any) -> str:
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(...)"


def _inputs(
    module: types.ModuleType, name: str, filename: str, inputs_path: str | None, device: torch.device, dtype: torch.dtype
) -> tuple[Any, ...]:
    """The forward's arguments: the inputs file's (moved to device, floating ones to dtype) or
    ``example_inputs(device, dtype)``'s."""
    if inputs_path is not None:
        return tuple(_moved(a, device, dtype) for a in load_inputs_file(inputs_path))
    example = module.__dict__.get("example_inputs")
    if not callable(example):
        raise TargetError(
            ErrorKind.EXAMPLE_INPUTS,
            f"No inputs for {name}'s forward: define example_inputs(device, dtype) in {filename}, or pass --inputs FILE.",
        )
    try:
        raw = example(device, dtype)
    except (Exception, SystemExit) as exc:
        raise from_exception(ErrorKind.EXAMPLE_INPUTS, exc, filename, "example_inputs(device, dtype)") from None
    return (raw,) if isinstance(raw, torch.Tensor) else tuple(raw) if isinstance(raw, tuple | list) else (raw,)


def _moved(value: Any, device: torch.device, dtype: torch.dtype) -> Any:
    if not isinstance(value, torch.Tensor):
        return value
    moved = value.to(device=device, dtype=dtype if value.is_floating_point() else value.dtype)
    return moved.detach().requires_grad_(value.requires_grad) if moved is not value else value

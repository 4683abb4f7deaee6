"""``gradviz check pkg.mod:factory --parameters``: a CLI target that builds an ``nn.Module``.

Runs in the worker's run process (only it runs user code). The chosen callable is called with no
arguments; the module it returns is moved to the run's device and dtype and replaces it as a
``ModuleFunction`` of the inputs and the chosen parameters; ``example_inputs`` (or ``--inputs``)
gives the inputs, and the parameters' copies are appended to them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from gradviz.core.callables import CallableFunction
from gradviz.core.loader import LoadedSource, TargetError, choose_function
from gradviz.core.module_parameters import ModuleFunction, chosen_parameters, is_module
from gradviz.schema.errors import ErrorKind, from_exception


def use_module_parameters(
    loaded: LoadedSource, function: str | None, parameters: bool | Sequence[str]
) -> None:
    """Make ``function`` (a callable returning an nn.Module) the module checked with ``parameters``."""
    name = function or loaded.default_function or next(iter(loaded.functions))
    factory = choose_function(loaded, name)
    if not isinstance(factory, CallableFunction):  # a Function class: nothing to build a module with
        raise TargetError(
            ErrorKind.NO_FUNCTION,
            f"--parameters checks an nn.Module's parameters: name a callable that returns one "
            f"(pkg.mod:make_model or file.py:make_model); {name} is a torch.autograd.Function.",
        )
    try:
        module = factory.apply()
    except (Exception, SystemExit) as exc:
        raise from_exception(ErrorKind.EXAMPLE_INPUTS, exc, loaded.filename, f"Calling {name}()") from None
    if not is_module(module):
        raise TargetError(
            ErrorKind.NO_FUNCTION,
            f"--parameters checks an nn.Module's parameters: {name}() must return one; it returned a "
            f"{type(module).__name__}.",
        )
    try:
        fn: Any = ModuleFunction(module, chosen_parameters(module, parameters))  # a Checkable
    except ValueError as exc:
        raise TargetError(ErrorKind.SETTINGS, str(exc)) from None
    inputs = loaded.example_inputs
    if inputs is None:
        raise TargetError(
            ErrorKind.EXAMPLE_INPUTS,
            f"{name}() returns a module: define example_inputs(device, dtype) beside it, or pass --inputs FILE, "
            "to give the arguments of its forward.",
        )

    def example_inputs(device: torch.device, dtype: torch.dtype) -> tuple[Any, ...]:
        module.to(device=device, dtype=dtype)  # floating parameters and buffers only, as Module.to does
        raw = inputs(device, dtype)
        raw = (raw,) if isinstance(raw, torch.Tensor) else tuple(raw)
        return (*raw, *fn.parameter_copies())

    loaded.example_inputs = example_inputs
    loaded.functions = {name: fn, **{k: v for k, v in loaded.functions.items() if k != name}}
    loaded.default_function = name

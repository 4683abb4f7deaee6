"""An ``nn.Module`` checked with respect to its parameters as well as its inputs.

gradviz checks every tensor argument of a function; a module's parameters are not arguments, so
``gradviz.check(module, x)`` checks ``x`` only. ``with_parameters`` turns the module into the pure
function ``(inputs..., params...) -> module(inputs...)`` through ``torch.func.functional_call``
(the parameters swapped for the arguments during the call), so the core's machinery perturbs,
differentiates and names each parameter as it does an input: blocks read ``out0 / layer.weight``.

The parameters handed to the core are detached copies: the module's own tensors are never
perturbed and never get a ``.grad``. Off by default in the API and the CLI: each parameter element
is one more column of the Jacobian (one more pair of forward calls for the numerical side), and a
real model's parameters outnumber its inputs by orders of magnitude.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from gradviz.core.callables import CallableFunction, callable_name
from gradviz.core.loader import argument_names


def is_module(obj: Any) -> bool:
    """An ``nn.Module`` instance (what ``parameters=`` applies to)."""
    return isinstance(obj, torch.nn.Module)


def parameter_names(module: torch.nn.Module, parameters: bool | Sequence[str]) -> list[str]:
    """The names of the parameters to check: ``True``: every parameter that requires grad, in
    ``named_parameters`` order; a list: those names, each one of the module's (ValueError naming
    the valid ones otherwise); ``False`` or empty: none."""
    if parameters is False:
        return []
    named = dict(module.named_parameters())
    if parameters is True:
        return [name for name, p in named.items() if p.requires_grad]
    if isinstance(parameters, str):
        parameters = [parameters]
    wanted = list(parameters)
    unknown = [name for name in wanted if name not in named]
    if unknown:
        raise ValueError(
            f"{type(module).__name__} has no parameter {', '.join(map(repr, unknown))}; "
            f"its parameters are: {', '.join(named) or '(none)'}."
        )
    return list(dict.fromkeys(wanted))  # each once, in the order asked


class ModuleFunction(CallableFunction):
    """``module`` as a pure function of its inputs then the named parameters, dressed for the core.

    The parameters are the last ``len(names)`` arguments, so the number of inputs need not be
    known before they are made (a CLI target's ``example_inputs`` runs after the Function is
    chosen). ``argument_names_for`` is read by ``argument_names``: the inputs keep the names of
    the module's ``forward`` parameters, the parameters are named as ``named_parameters`` does."""

    def __init__(self, module: torch.nn.Module, names: list[str]) -> None:
        self.module, self.parameter_names = module, names

        def call(*args: Any) -> Any:
            count = len(args) - len(names)
            params = dict(zip(names, args[count:], strict=True))
            return torch.func.functional_call(module, params, args[:count])

        call.module_function = self  # type: ignore[attr-defined]  # what the reproducer and the window rebuild
        super().__init__(call, callable_name(module))

    def argument_names_for(self, count: int) -> list[str]:
        inputs = count - len(self.parameter_names)
        forward: Any = CallableFunction(self.module.forward)  # read like any callable's forward
        return argument_names(forward, inputs) + self.parameter_names

    def parameter_copies(self) -> tuple[torch.Tensor, ...]:
        """The chosen parameters as fresh leaves gradviz may perturb: the module's stay untouched."""
        own = dict(self.module.named_parameters())
        return tuple(own[name].detach().clone().requires_grad_(True) for name in self.parameter_names)


def with_parameters(
    module: torch.nn.Module, args: tuple[Any, ...], parameters: bool | Sequence[str]
) -> tuple[ModuleFunction, tuple[Any, ...]]:
    """The module as a function of ``args`` then the chosen parameters, and those arguments: the
    parameters as detached copies (their dtype, device and values; requires_grad set)."""
    fn = ModuleFunction(module, chosen_parameters(module, parameters))
    return fn, (*args, *fn.parameter_copies())


def chosen_parameters(module: torch.nn.Module, parameters: bool | Sequence[str]) -> list[str]:
    """``parameter_names``, refusing an empty choice (there would be nothing added to check)."""
    names = parameter_names(module, parameters)
    if not names:
        raise ValueError(
            f"{type(module).__name__} has no parameter that requires grad to check: "
            "pass parameters=[names] or leave parameters off."
        )
    return names

"""A module checked with its parameters (``gradviz.check(module, x, parameters=...)``), rebuilt as source.

The reproducer and the window both need the module again in another process. Pickling it would
need ``torch.load(weights_only=False)`` (the file could run any code), so instead the source
imports the module's class (or writes its source, as for a Function), builds it with no
arguments and loads the state it had when checked (parameters and buffers, written as tensor
literals, so ``Report.reproducer()``'s text needs no file beside it) with
``load_state_dict(..., assign=True)``, which keeps each tensor's dtype and device. Its train/eval
flags are set as they were. The checked parameters are then passed through
``torch.func.functional_call`` as the last arguments, as gradviz passed them.

A class whose ``__init__`` needs arguments cannot be rebuilt this way (gradviz never saw them):
that is said by name, with what to do instead.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import torch

from gradviz.api.literals import NotWritable, literal, needs_helper
from gradviz.api.locate import PathLine, Reach, reach
from gradviz.core.module_parameters import ModuleFunction

MODULE_CALL = '''def fn(*args):
    """{name} on clones of the inputs; the checked parameters ({count}, the last inputs) go in through
    torch.func.functional_call, as gradviz passed them."""
    args = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    count = len(args) - len(parameter_names)
    return torch.func.functional_call(module, dict(zip(parameter_names, args[count:])), tuple(args[:count]))'''


@dataclass
class BuiltModule:
    """How to write the module of a ``ModuleFunction`` as source."""

    function: ModuleFunction

    @property
    def module(self) -> torch.nn.Module:
        return self.function.module

    @property
    def cls(self) -> type:
        return type(self.module)

    def reach(self, place: PathLine | None = None) -> Reach:
        """Where the module's class is (an import or its source); NotWritable when it cannot be
        built with no arguments."""
        required = _required_arguments(self.cls)
        if required:
            raise NotWritable(
                f"{self.cls.__name__}.__init__ takes arguments ({', '.join(required)}) gradviz never saw, so "
                f"{self.cls.__name__} cannot be rebuilt in another process. Give them defaults, or check a "
                "factory that returns the module: gradviz check pkg.mod:make_model --parameters"
            )
        return reach(self.cls, place)

    def needs_helper(self) -> bool:
        return needs_helper(self._state())

    def build_lines(self, where: Reach) -> str:
        """``module = Net()``, its state loaded, its train/eval flags set; ``parameter_names``."""
        lines = [
            f"# {self.cls.__name__} as gradviz checked it: built with no arguments, then the state it had "
            "(parameters and buffers).",
            f"module = {where.name}()",
            f"module.load_state_dict({literal(self._state())}, assign=True)",
            f"module.train({literal(self.module.training)})",
        ]
        for name, sub in self.module.named_modules():
            if name and sub.training != self.module.training:
                lines.append(f"module.get_submodule({literal(name)}).train({literal(sub.training)})")
        lines.append(f"parameter_names = {literal(list(self.function.parameter_names))}")
        return "\n".join(lines)

    def call(self) -> str:
        """``def fn(*args)``: the module on the inputs and the checked parameters."""
        return MODULE_CALL.format(name=self.cls.__name__, count=len(self.function.parameter_names))

    def _state(self) -> dict[str, Any]:
        return {k: v.detach() for k, v in self.module.state_dict().items()}


def built_module(fn: Any) -> BuiltModule | None:
    """The module behind ``report.fn`` when it is one checked with parameters; None otherwise."""
    function = getattr(fn, "module_function", None)
    return BuiltModule(function) if isinstance(function, ModuleFunction) else None


def _required_arguments(cls: type) -> list[str]:
    try:
        parameters = inspect.signature(cls).parameters.values()
    except (TypeError, ValueError):
        return []
    return [
        p.name
        for p in parameters
        if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]


def window_source(built: BuiltModule) -> tuple[str, str, list[str]]:
    """For ``gradviz.show``: the source of a file defining the checked ``ModuleFunction``, the name
    it defines, and the folders its import needs on the path."""
    where = built.reach()
    name = f"{built.cls.__name__}_with_parameters"
    if where.module is not None:
        head = f"import torch\n\nfrom {where.module} import {where.name.split('.')[0]}"
        paths = [where.root] if where.root else []
    else:
        assert where.source is not None
        head, paths = "import torch\n\n" + where.source.strip(), []
    helper = "import base64\n\n" + _helper() if built.needs_helper() else ""
    body = (
        f"{built.build_lines(where)}\n\n"
        "# gradviz's own stand-in for a module checked with its parameters: blocks named by parameter.\n"
        f"{name} = ModuleFunction(module, parameter_names)\n"
    )
    imports = "from gradviz.core.module_parameters import ModuleFunction"
    return "\n\n".join(s for s in (head, imports, helper, body) if s), name, paths


def _helper() -> str:
    from gradviz.api.literals import TENSOR_HELPER

    return TENSOR_HELPER.strip()

"""Whatever the user hands gradviz to check, as the Function-shaped object the core expects.

``check_function`` calls ``fn.apply`` and reads ``fn.__name__``, ``fn.forward`` (for the user's
file) and ``fn.backward`` / ``fn.vjp`` (for ``@once_differentiable``). A Function class has them;
its bound ``apply`` is the class itself; any other callable (``lambda x: MyFn.apply(x) * 2``, a
function that chains two Functions) gets a thin stand-in with the same attributes, so the core
runs gradcheck's checks on it unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from gradviz.core.custom_ops import is_custom_op, op_argument_names, op_name, op_python_function


class CallableFunction:
    """A callable built on Functions, dressed as a Function class for ``check_function``."""

    vjp = torch.autograd.Function.vjp  # "no vjp of its own": is_once_differentiable then reads backward
    backward = None  # a plain callable declares nothing about its backward
    setup_context = None  # not the base class's: argument_names reads all of forward's parameters
    # the ctx class every Function's ctx derives from: the graph then watches the ctx calls
    # (mark_dirty, ...) of every Function the callable runs, and puts them back afterwards
    _backward_cls = torch.autograd.function.BackwardCFunction

    def __init__(self, func: Callable, name: str | None = None) -> None:
        self.apply = func
        self.forward = func
        self.__name__ = name or callable_name(func)

    def __repr__(self) -> str:
        return f"<callable {self.__name__}>"


class CustomOpFunction(CallableFunction):
    """A custom op (``CustomOpDef``, ``torch.ops.ns.name``) dressed as a Function class: called
    ``ns::name``, its inputs named by its schema, its file the one its Python function is in."""

    def __init__(self, op: Any) -> None:
        super().__init__(op, op_name(op))
        self.op = op
        self.forward = op_python_function(op) or op
        self._argument_names = op_argument_names(op)

    def argument_names_for(self, count: int) -> list[str]:
        """The schema's names for the arguments passed (``in{j}`` past them: never for an op)."""
        return [self._argument_names[j] if j < len(self._argument_names) else f"in{j}" for j in range(count)]

    def __repr__(self) -> str:
        return f"<custom op {self.__name__}>"


# what ``check_function`` and ``sweep_function`` take: a Function class or the stand-in above
Checkable = type[torch.autograd.Function] | CallableFunction


def function_class(obj: Any) -> type[torch.autograd.Function] | None:
    """The Function class of a class or of its bound ``apply``; None for anything else."""
    if isinstance(obj, type) and issubclass(obj, torch.autograd.Function):
        return obj
    owner = getattr(obj, "__self__", None)
    if (
        getattr(obj, "__name__", None) == "apply"
        and isinstance(owner, type)
        and issubclass(owner, torch.autograd.Function)
    ):
        return owner
    return None


def as_checkable(obj: Any, name: str | None = None) -> Checkable:
    """A Function class as is, its ``apply`` as the class, another callable wrapped; TypeError else."""
    fn = function_class(obj)
    if fn is not None:
        return fn
    if isinstance(obj, CallableFunction):  # a stand-in already (a module with its parameters, from gradviz.show)
        return obj
    if is_custom_op(obj):
        return CustomOpFunction(obj)
    if isinstance(obj, type) or not callable(obj):
        raise TypeError(f"fn {describe_not_checkable(obj)}")
    return CallableFunction(obj, name)


def describe_not_checkable(obj: Any) -> str:
    """``is an int, not ...``: the reason, for a sentence that starts with the object's name."""
    if isinstance(obj, type):
        kind = f"the class {obj.__name__}"
    else:
        name = type(obj).__name__
        kind = f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"
    return (
        f"is {kind}, not a torch.autograd.Function subclass, its .apply, a custom op (torch.library.custom_op) "
        "or a function that calls one (MyFunction, MyFunction.apply or a callable such as "
        "lambda x: MyFunction.apply(x, 2))."
    )


def callable_name(func: Callable) -> str:
    """``scaled_cube``, ``<lambda>``, ``partial(cube)``: what the user would call it."""
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None)
    if name:
        return name
    inner = getattr(func, "func", None)  # functools.partial
    if inner is not None:
        return f"partial({callable_name(inner)})"
    return type(func).__name__

"""What a custom Function's class says about itself: a once-only backward, the names it saves.

Read from the class (and its source), never by running it. The graph flags and names its nodes
with these; the double-backward check skips a backward declared ``@once_differentiable``.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
import weakref
from typing import Any

import torch
from torch.autograd.function import once_differentiable

__all__ = ["is_once_differentiable", "reads_data_attribute", "save_for_backward_names"]

# Every @once_differentiable wrapper shares this code object.
_ONCE_DIFFERENTIABLE_CODE = once_differentiable(lambda ctx: None).__code__


def source_file(fn: object) -> str | None:
    """The file the Function's forward was written in (None: not a file, e.g. a builtin)."""
    try:
        return inspect.getsourcefile(fn.forward) or fn.forward.__code__.co_filename
    except (TypeError, AttributeError):
        return None


def is_once_differentiable(fn: type[torch.autograd.Function]) -> bool:
    """Whether the backward PyTorch calls (``backward``, or ``vjp`` when that is defined) is wrapped.

    The wrapper is recognised by its code object, not by its file name, and is found under other
    ``functools.wraps`` decorators too.
    """
    user_fn = fn.vjp if fn.vjp is not torch.autograd.Function.vjp else fn.backward
    seen = 0
    while user_fn is not None and seen < 10:  # follow functools.wraps chains of other decorators
        if getattr(user_fn, "__code__", None) is _ONCE_DIFFERENTIABLE_CODE:
            return True
        user_fn, seen = getattr(user_fn, "__wrapped__", None), seen + 1
    return False


def save_for_backward_names(fn: Any) -> tuple[str | None, ...] | None:
    """Names of the arguments of the one ``ctx.save_for_backward(a, b, ...)`` call in the class (or
    the function: a custom op's setup_context).

    None for an argument that is not a plain name; None for all when there is no single call
    or it unpacks a sequence (``*tensors``).
    """
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return None
    calls = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "save_for_backward"
    ]
    if len(calls) != 1 or any(isinstance(a, ast.Starred) for a in calls[0].args):
        return None
    return tuple(a.id if isinstance(a, ast.Name) else None for a in calls[0].args)


_DATA_ATTRIBUTE = re.compile(r"\.data\b(?!\s*\()")


def reads_data_attribute(fn: object, source: str | None = None) -> bool:
    """Whether the Function's code may read ``.data`` anywhere (``g.data``, ``x.data``).

    ``.data`` of a tensor batched by legacy vmap crashes the process (no exception to catch), so
    such a Function is checked with plain calls only. The user's file (``source``) and the module
    the class comes from are read; when neither can be read, or ``fn`` is a plain callable whose
    Functions cannot be found, the answer is "maybe" (True): plain calls are always safe.
    """
    if source is not None and _DATA_ATTRIBUTE.search(source):
        return True
    if isinstance(fn, type) and issubclass(fn, torch.autograd.Function):
        in_module = _module_reads_data(fn)
        if in_module is not None:
            return in_module
    return source is None


# class -> whether its module's text has ".data" (None: unreadable). The text that defined a
# class object stays what it was; an edited file gives a new class when it is loaded again.
_MODULE_READS_DATA: weakref.WeakKeyDictionary[type, bool | None] = weakref.WeakKeyDictionary()


def _module_reads_data(fn: type) -> bool | None:
    """Read once per class: ``inspect.getsource`` of the whole module costs tens of microseconds a
    check on a small module (more on a large one), the cache about one."""
    if fn not in _MODULE_READS_DATA:
        try:
            text = inspect.getsource(inspect.getmodule(fn))
        except (OSError, TypeError):
            _MODULE_READS_DATA[fn] = None
        else:
            _MODULE_READS_DATA[fn] = bool(_DATA_ATTRIBUTE.search(text))
    return _MODULE_READS_DATA[fn]

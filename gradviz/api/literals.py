"""Values as Python source that rebuilds them exactly: numbers, containers, dtypes and tensors.

For reproducer scripts. A float's ``repr`` reads back bit for bit; small tensors are written as
nested lists, larger ones as their raw bytes in base64, both with their dtype, strides and
requires_grad, so the script checks exactly the tensors gradviz checked.
"""

from __future__ import annotations

import base64
import math
import re
from typing import Any

import torch

LIST_LIMIT = 64  # elements: a tensor up to this size is written as a readable nested list

TENSOR_HELPER = '''
def tensor_from_bytes(data, dtype, shape):
    """A tensor from its raw bytes (written by gradviz from the tensor it checked)."""
    return torch.frombuffer(bytearray(base64.b64decode(data)), dtype=dtype).reshape(shape).clone()
'''


class NotWritable(ValueError):
    """A value a script cannot rebuild (a module object, an open file, ...)."""


PLAIN = (int, float, complex, str, bytes)  # bool is an int and cannot be subclassed


def literal(value: Any, notes: list[str] | None = None) -> str:
    """Python source for ``value``; NotWritable when there is none.

    Only plain values are written, rebuilt from their builtin type: a subclass's own ``__repr__``
    (or ``__str__``, ``__iter__``, ``real``) is never asked, since it could return any code and the
    script would run it. A ``str`` subclass is written as the plain ``str`` it holds, a tuple
    subclass as a tuple, a tensor subclass as a ``torch.Tensor``; each such change is added to
    ``notes`` (one line each, for a comment in the script).
    """
    kind = type(value)
    if value is None or kind is bool:
        return repr(value)
    for base in PLAIN:
        if isinstance(value, base):
            if kind is not base:
                _note(notes, kind, base.__name__)
            return _plain_literal(value, base)
    if kind is torch.dtype:
        return str(value)  # torch.float64
    if kind is torch.device:
        return f"torch.device({str(value)!r})"
    if isinstance(value, torch.Tensor):
        return tensor_literal(value, notes)
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        if kind is not tuple:
            _note(notes, kind, "tuple")
        items = [literal(v, notes) for v in tuple.__iter__(value)]
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
    if isinstance(value, list):
        if kind is not list:
            _note(notes, kind, "list")
        return f"[{', '.join(literal(v, notes) for v in list.__iter__(value))}]"
    if isinstance(value, dict):
        if kind is not dict:
            _note(notes, kind, "dict")
        return "{" + ", ".join(f"{literal(k, notes)}: {literal(v, notes)}" for k, v in dict.items(value)) + "}"
    name = _type_name(kind)
    raise NotWritable(f"{'an' if name[:1] in 'aeiou' else 'a'} {name} cannot be written into a script")


def _plain_literal(value: Any, base: type) -> str:
    """The builtin's own repr of the value a subclass holds (``int.__repr__``, not the subclass's)."""
    if base is float:
        text = float.__repr__(value)
        return text if math.isfinite(value) else f'float("{text}")'
    if base is complex:
        real, imag = complex.real.__get__(value), complex.imag.__get__(value)
        return f"complex({_plain_literal(real, float)}, {_plain_literal(imag, float)})"
    return base.__repr__(value)  # type: ignore[call-arg]  # the class's own, unbound: base.__repr__(value)


def _type_name(kind: type) -> str:
    """A class's name safe inside a comment or message: a name can hold a newline and code."""
    name = getattr(kind, "__qualname__", None)
    return re.sub(r"[^A-Za-z0-9_.]", "_", name)[:80] if isinstance(name, str) else "object"


def _note(notes: list[str] | None, kind: type, plain: str) -> None:
    if notes is not None:
        notes.append(f"{_type_name(kind)} (a subclass of {plain}) is written as a plain {plain}")


def needs_helper(value: Any) -> bool:
    """Whether ``literal(value)`` calls ``tensor_from_bytes`` (then the script defines it)."""
    if isinstance(value, torch.Tensor):
        return torch.Tensor.as_subclass(value, torch.Tensor).numel() > LIST_LIMIT  # as tensor_literal reads it
    if isinstance(value, tuple):  # iterated as literal() does: the builtin's items, not a subclass's
        return any(needs_helper(v) for v in tuple.__iter__(value))
    if isinstance(value, list):
        return any(needs_helper(v) for v in list.__iter__(value))
    if isinstance(value, dict):
        return any(needs_helper(v) for v in dict.values(value))
    return False


def tensor_literal(t: torch.Tensor, notes: list[str] | None = None) -> str:
    """Source for a tensor equal to ``t`` in values, dtype, device, strides and requires_grad.

    A subclass is read as the plain tensor it holds (``torch.Tensor.as_subclass`` bypasses its
    ``__torch_function__``), so its overrides of ``tolist``, ``shape`` or ``stride`` write nothing."""
    if type(t) is not torch.Tensor and not isinstance(t, torch.nn.Parameter):
        _note(notes, type(t), "torch.Tensor")
    t = torch.Tensor.as_subclass(t, torch.Tensor)
    if t.layout != torch.strided:
        raise NotWritable(f"a {str(t.layout).removeprefix('torch.')} tensor cannot be written into a script")
    values = t.detach().cpu()
    dtype = str(values.dtype)
    shape = tuple(int(n) for n in t.shape)
    strides = tuple(int(n) for n in t.stride())
    if values.numel() <= LIST_LIMIT:
        text = f"torch.tensor({_nested(values.tolist())}, dtype={dtype})"
    else:
        raw = base64.b64encode(values.contiguous().view(torch.uint8).numpy().tobytes())  # any dtype, as bytes
        text = f"tensor_from_bytes({raw.decode('ascii')!r}, {dtype}, {shape!r})"
    overlapping = any(st == 0 and n > 1 for st, n in zip(strides, shape))  # expanded: written dense
    if not values.is_contiguous() and values.numel() > 1 and not overlapping:
        text = f"torch.empty_strided({shape!r}, {strides!r}, dtype={dtype}).copy_({text})"
    if t.device.type != "cpu":
        text += f".to({str(t.device)!r})"
    if t.requires_grad:
        text += ".requires_grad_()"
    return text


def _nested(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_nested(v) for v in value) + "]"
    return literal(value)

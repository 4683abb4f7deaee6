"""Values as Python source that rebuilds them exactly: numbers, containers, dtypes and tensors.

For reproducer scripts. A float's ``repr`` reads back bit for bit; small tensors are written as
nested lists, larger ones as their raw bytes in base64, both with their dtype, strides and
requires_grad, so the script checks exactly the tensors gradviz checked.
"""

from __future__ import annotations

import base64
import math
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


def literal(value: Any) -> str:
    """Python source for ``value``; NotWritable when there is none."""
    if value is None or isinstance(value, bool | int | str | bytes):
        return repr(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else f'float("{value}")'
    if isinstance(value, complex):
        return f"complex({literal(value.real)}, {literal(value.imag)})"
    if isinstance(value, torch.dtype):
        return str(value)  # torch.float64
    if isinstance(value, torch.device):
        return f"torch.device({str(value)!r})"
    if isinstance(value, torch.Tensor):
        return tensor_literal(value)
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        items = ", ".join(literal(v) for v in value)
        return f"({items},)" if len(value) == 1 else f"({items})"
    if isinstance(value, list):
        return f"[{', '.join(literal(v) for v in value)}]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in value.items()) + "}"
    kind = type(value).__name__
    raise NotWritable(f"{'an' if kind[:1] in 'aeiou' else 'a'} {kind} cannot be written into a script")


def needs_helper(value: Any) -> bool:
    """Whether ``literal(value)`` calls ``tensor_from_bytes`` (then the script defines it)."""
    if isinstance(value, torch.Tensor):
        return value.numel() > LIST_LIMIT
    if isinstance(value, list | tuple):
        return any(needs_helper(v) for v in value)
    if isinstance(value, dict):
        return any(needs_helper(v) for v in value.values())
    return False


def tensor_literal(t: torch.Tensor) -> str:
    """Source for a tensor equal to ``t`` in values, dtype, device, strides and requires_grad."""
    if t.layout != torch.strided:
        raise NotWritable(f"a {str(t.layout).removeprefix('torch.')} tensor cannot be written into a script")
    values = t.detach().cpu()
    dtype = str(values.dtype)
    if values.numel() <= LIST_LIMIT:
        text = f"torch.tensor({_nested(values.tolist())}, dtype={dtype})"
    else:
        raw = base64.b64encode(values.contiguous().view(torch.uint8).numpy().tobytes())  # any dtype, as bytes
        text = f"tensor_from_bytes({raw.decode('ascii')!r}, {dtype}, {tuple(values.shape)!r})"
    overlapping = any(st == 0 and n > 1 for st, n in zip(t.stride(), t.shape))  # expanded: written dense
    if not values.is_contiguous() and values.numel() > 1 and not overlapping:
        text = f"torch.empty_strided({tuple(t.shape)!r}, {t.stride()!r}, dtype={dtype}).copy_({text})"
    if t.device.type != "cpu":
        text += f".to({str(t.device)!r})"
    if t.requires_grad:
        text += ".requires_grad_()"
    return text


def _nested(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_nested(v) for v in value) + "]"
    return literal(value)

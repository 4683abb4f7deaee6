"""Check what ``example_inputs`` (or the API's caller) gave, and pass the tensors on as they are.

The differentiable inputs are the caller's own tensors, never copies: gradcheck perturbs them in
place, so a Function that also reads one another way (a checkpoint-style Function reading the
module's weight through the module) sees every perturbation. The Jacobians restore each element
bitwise after perturbing it (``numerical_jacobian._Perturber``); a forward that modifies an input in place
always gets copies (``check._forward``), so the caller's tensors come back unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from gradviz.core.callables import CustomOpFunction, function_class
from gradviz.core.custom_ops import op_python_name
from gradviz.schema.errors import ErrorKind, SettingsError, UserCodeError
from gradviz.schema.settings import NO_CUDA_DEVICE

DTYPES = {"float64": torch.float64, "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


@dataclass
class PreparedInputs:
    """Positional arguments for ``apply`` plus what the report needs to say about them."""

    args: tuple
    names: list[str]
    notes: list[str] = field(default_factory=list)

    @property
    def grad_indices(self) -> list[int]:
        """Positions of the tensors whose Jacobian columns are computed."""
        return [j for j, a in enumerate(self.args) if isinstance(a, torch.Tensor) and a.requires_grad]


def resolve_device(spec: str | torch.device) -> torch.device:
    """``cpu``, ``cuda`` or ``cuda:N``, refused with the reason when it cannot be used (the check,
    the sweep and the memory study all refuse a device in these words)."""
    try:
        device = torch.device(spec)
    except (RuntimeError, TypeError):
        raise SettingsError(f"Unknown device {spec!r}: use cpu, cuda or cuda:N.") from None
    if device.type == "cpu":
        return device
    if device.type != "cuda":
        raise SettingsError(f"Unsupported device {spec!r}: use cpu, cuda or cuda:N.")
    if not torch.cuda.is_available():
        why = (
            f"this PyTorch build ({torch.__version__}) has no CUDA support"
            if torch.version.cuda is None
            else NO_CUDA_DEVICE
        )
        raise SettingsError(f"CUDA was chosen but {why}. Use --device cpu.")
    index = device.index or 0
    if index >= torch.cuda.device_count():
        raise SettingsError(f"{spec} does not exist: {torch.cuda.device_count()} CUDA device(s) are visible.")
    return torch.device("cuda", index)


def resolve_dtype(name: str) -> torch.dtype:
    if name not in DTYPES:
        raise SettingsError(f"Unsupported dtype {name!r}: use {', '.join(DTYPES)}.")
    return DTYPES[name]


def prepare_inputs(
    raw: Any,
    device: torch.device | None,
    dtype: torch.dtype | None,
    names: list[str],
    filename: str = "<source>",
    *,
    fn: Any = None,
) -> PreparedInputs:
    """The arguments for ``apply`` as gradcheck would see them: the caller's own tensors.

    Tensors keep the dtype, device, strides and layout ``example_inputs`` gave them (it is told
    the run's device and dtype; a note says when it used others). Differentiable inputs stay the
    caller's tensors, perturbed in place and restored as gradcheck does, so memory they share with
    other arguments or with a module (``(x, x)``, ``(x, x.detach())``, ``module.weight``) moves
    with them as it does under gradcheck. Fixed
    arguments (a sparse adjacency matrix, an index, a config dict) pass through untouched.
    ``device`` and ``dtype`` are what was asked for (None: nothing, as for the caller's own tensors).
    ``fn``: what is checked (a Function class, a custom op's or a callable's stand-in), for the
    words of a refusal; None: a Function.
    """
    if isinstance(raw, torch.Tensor):
        raw = (raw,)
    if isinstance(raw, list):
        raw = tuple(raw)
    if not isinstance(raw, tuple):
        raise UserCodeError(
            ErrorKind.EXAMPLE_INPUTS,
            f"example_inputs must return a tuple of arguments for apply, not {type(raw).__name__}.",
            filename,
        )
    notes: list[str] = []
    for j, a in enumerate(raw):
        if isinstance(a, torch.Tensor):
            _refuse_unusable(a, j, names[j], filename)
        else:
            _refuse_grad_inside(a, j, names[j], filename, fn)
    args = list(raw)
    if not any(isinstance(a, torch.Tensor) and a.requires_grad for a in args):
        args = _with_grad_on_floats(args, names, notes, filename)
    _note_other_dtypes(args, device, dtype, names, notes)
    return PreparedInputs(tuple(args), names, notes)


def _differentiable_kind(a: Any) -> bool:
    """A tensor gradviz can give Jacobian columns: dense, strided, real floating point."""
    return (
        isinstance(a, torch.Tensor)
        and a.layout == torch.strided
        and a.is_floating_point()
        and not a.is_meta
        and not a.is_nested
        and not a.is_quantized
    )


def _refuse_unusable(a: torch.Tensor, j: int, name: str, filename: str) -> None:
    def refuse(why: str) -> UserCodeError:
        return UserCodeError(ErrorKind.EXAMPLE_INPUTS, f"Input {j} ({name}) {why}", filename)

    if a.is_meta:
        raise refuse(
            "is a meta tensor: it has a shape but no values, so there is nothing to evaluate. "
            "Create it on a real device (example_inputs receives the device to use)."
        )
    if not a.requires_grad:
        return
    if a.layout != torch.strided or a.is_nested:
        kind = "nested" if a.is_nested else str(a.layout).removeprefix("torch.")
        raise refuse(
            f"is a {kind} tensor that requires grad: gradviz computes Jacobian columns for dense "
            f"inputs only. Pass {name}.to_dense() to check its gradient, or requires_grad=False if "
            "it is fixed data (an adjacency matrix, say)."
        )
    if _has_internal_overlap(a):
        raise refuse(
            "has elements that share memory (an expanded or overlapping view), so moving one element "
            f"would move several and finite differences would be wrong (gradcheck refuses such inputs too). "
            f"Pass {name}.contiguous() or {name}.clone()."
        )


def _has_internal_overlap(t: torch.Tensor) -> bool:
    """Two elements of ``t`` at one memory address (an expanded or overlapping ``as_strided`` view)."""
    verdict = torch._debug_has_internal_overlap(t)  # 0: no, 1: yes, 2: too hard to tell cheaply
    if verdict != 2:
        return verdict == 1
    extent = 1 + sum((size - 1) * stride for size, stride in zip(t.shape, t.stride()) if size > 0)
    offsets = torch.arange(extent).as_strided(t.shape, t.stride())
    return offsets.unique().numel() < t.numel()


CONTAINER_INPUT = (
    "Input {j} ({name}) is a list, tuple or dict holding a tensor that requires grad: autograd does not track "
    "tensors inside containers passed to apply, so it would never get a gradient. Pass it as its own argument, "
    "or set requires_grad=False if it is fixed data."
)
OP_LIST_INPUT = (
    "Input {j} ({name}) is a list holding tensors that require grad (a Tensor[] argument of {op}): the op gives "
    "them gradients, but gradcheck and gradviz perturb only tensors passed as arguments of their own, so these "
    "would go unchecked. Check a function that takes them one by one and rebuilds the list: "
    "gradviz.check(lambda *ts: {op}(list(ts)), tuple({name}))."
)
CALLABLE_CONTAINER_INPUT = (
    "Input {j} ({name}) is a list, tuple or dict holding a tensor that requires grad: gradcheck and gradviz "
    "perturb only tensors passed as arguments of their own, so it would go unchecked. Pass it as its own "
    "argument (a function that takes the tensors one by one and builds the container), or set "
    "requires_grad=False if it is fixed data."
)


def grad_inside_message(j: int, name: str, fn: Any = None) -> str:
    """Why a tensor requiring grad inside argument ``j`` is refused, in words true of ``fn``: a
    Function's ``apply`` never gives it a gradient; a custom op's ``Tensor[]`` and a callable's
    container may, but no finite difference of gradcheck's would reach it."""
    if fn is None or function_class(fn) is not None:
        return CONTAINER_INPUT.format(j=j, name=name)
    if isinstance(fn, CustomOpFunction):
        return OP_LIST_INPUT.format(j=j, name=name, op=op_python_name(fn.op))
    return CALLABLE_CONTAINER_INPUT.format(j=j, name=name)


def holds_grad_tensor(value: Any) -> bool:
    """A list, tuple, set or dict (at any depth) holds a tensor that requires grad."""
    seen: set[int] = set()
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, torch.Tensor):
            if item.requires_grad:
                return True
            continue
        if id(item) in seen or depth > MAX_CONTAINER_DEPTH:
            continue  # a cycle, or deeper than anyone nests tensors: nothing more to look at
        if isinstance(item, list | tuple | set | frozenset):
            seen.add(id(item))
            stack.extend((v, depth + 1) for v in item)
        elif isinstance(item, dict):
            seen.add(id(item))
            stack.extend((v, depth + 1) for v in item.values())
    return False


def _refuse_grad_inside(value: Any, j: int, name: str, filename: str, fn: Any) -> None:
    """A tensor requiring grad inside a list, tuple or dict argument is never checked: a Function
    never gives it a gradient (autograd does not look inside containers passed to ``apply``), and
    gradcheck perturbs only tensors passed as arguments (it raises there)."""
    if holds_grad_tensor(value):
        raise UserCodeError(ErrorKind.EXAMPLE_INPUTS, grad_inside_message(j, name, fn), filename)


MAX_CONTAINER_DEPTH = 64


def _with_grad_on_floats(args: list, names: list[str], notes: list[str], filename: str) -> list:
    floats = [j for j, a in enumerate(args) if _differentiable_kind(a)]
    if not floats:
        raise UserCodeError(
            ErrorKind.EXAMPLE_INPUTS,
            "No dense floating-point tensor among the inputs, so there is nothing to differentiate.",
            filename,
        )
    args = [a.detach().requires_grad_(True) if j in floats else a for j, a in enumerate(args)]
    notes.append(
        f"No input had requires_grad=True, so every floating-point input was checked ({', '.join(names[j] for j in floats)})."
    )
    return args


def _storage_key(t: torch.Tensor) -> tuple[str, int] | None:
    if t.layout != torch.strided or t.is_meta or t.is_nested or t.is_quantized:
        return None
    ptr = t.untyped_storage().data_ptr()
    return (str(t.device), ptr) if ptr else None


def shares_memory_with_others(args: Sequence[Any], j: int) -> bool:
    """Whether input j shares memory with another argument (then perturbing it moves both)."""
    key = _storage_key(args[j])
    return key is not None and any(
        isinstance(a, torch.Tensor) and k != j and _storage_key(a) == key for k, a in enumerate(args)
    )


def _real_dtype(a: torch.Tensor) -> torch.dtype:
    """complex128 is float64's complex twin: asked for float64, a complex128 input is what was meant."""
    return a.real.dtype if a.is_complex() else a.dtype


def _note_other_dtypes(
    args: list, device: torch.device | None, dtype: torch.dtype | None, names: list[str], notes: list[str]
) -> None:
    if device is None or dtype is None:
        return
    other = [
        f"{names[j]} ({str(a.dtype).removeprefix('torch.')} on {a.device})"
        for j, a in enumerate(args)
        if isinstance(a, torch.Tensor) and a.requires_grad and (_real_dtype(a) != dtype or a.device.type != device.type)
    ]
    if other:
        notes.append(
            f"example_inputs returned {', '.join(other)} although {str(dtype).removeprefix('torch.')} on "
            f"{device.type} was asked for: gradviz checked them as returned."
        )

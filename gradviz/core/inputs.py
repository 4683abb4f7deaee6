"""Turn what ``example_inputs`` returned into fresh leaf tensors on the chosen device.

Fresh leaves matter: an in-place Function (``mark_dirty``) then works without the user
cloning, and nothing the check does can touch tensors the user's module keeps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from gradviz.schema.errors import ErrorKind, SettingsError, UserCodeError

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


def resolve_device(spec: str) -> torch.device:
    """``cpu``, ``cuda`` or ``cuda:N``, refused with the reason when it cannot be used."""
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
            else "no CUDA device is visible (driver missing or CUDA_VISIBLE_DEVICES empty)"
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
    raw: Any, device: torch.device, dtype: torch.dtype, names: list[str], filename: str = "<source>"
) -> PreparedInputs:
    """Fresh copies of every tensor on ``device``; floating tensors also in ``dtype``.

    Only dense differentiable inputs get Jacobian columns. Other tensor arguments (a sparse
    adjacency matrix, an integer index, a complex filter) pass through with their layout and
    strides; a differentiable one that cannot be perturbed element by element is refused.
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
    args = [
        _prepare_tensor(a, j, names[j], device, dtype, notes, filename)
        if isinstance(a, torch.Tensor)
        else _prepare_container(a, j, names[j], device, dtype, filename)
        for j, a in enumerate(raw)
    ]
    prepared = PreparedInputs(tuple(args), names, notes)
    if not prepared.grad_indices:
        floats = [j for j, a in enumerate(args) if _differentiable_kind(a)]
        if not floats:
            raise UserCodeError(
                ErrorKind.EXAMPLE_INPUTS,
                "No dense floating-point tensor among the inputs, so there is nothing to differentiate.",
                filename,
            )
        for j in floats:
            args[j].requires_grad_(True)
        listed = ", ".join(names[j] for j in floats)
        notes.append(
            f"No input had requires_grad=True, so every floating-point input was checked ({listed})."
        )
        prepared = PreparedInputs(tuple(args), names, notes)
    return prepared


def _differentiable_kind(a: Any) -> bool:
    """A tensor gradviz can give Jacobian columns: dense, strided, real floating point."""
    return (
        isinstance(a, torch.Tensor)
        and a.layout == torch.strided
        and a.is_floating_point()
        and not a.is_meta
        and not a.is_nested
    )


def _prepare_container(value: Any, j: int, name: str, device: torch.device, dtype: torch.dtype, filename: str) -> Any:
    """Tensors inside a list, tuple or dict argument: moved like any fixed tensor argument.

    autograd does not look inside containers passed to ``apply``, so a tensor in one that
    requires grad would never get a gradient: refused, as gradcheck cannot check it either.
    """
    if isinstance(value, torch.Tensor):
        if value.requires_grad:
            raise UserCodeError(
                ErrorKind.EXAMPLE_INPUTS,
                f"Input {j} ({name}) is a list, tuple or dict holding a tensor that requires grad: autograd does "
                "not track tensors inside containers passed to apply, so it would never get a gradient. Pass it "
                "as its own argument, or set requires_grad=False if it is fixed data.",
                filename,
            )
        target = dtype if value.is_floating_point() else value.dtype
        return value.detach().to(device=device, dtype=target).clone()
    if isinstance(value, list | tuple):
        items = [_prepare_container(v, j, name, device, dtype, filename) for v in value]
        return type(value)(items) if not hasattr(value, "_fields") else type(value)(*items)
    if isinstance(value, dict):
        return {k: _prepare_container(v, j, name, device, dtype, filename) for k, v in value.items()}
    return value


def _prepare_tensor(
    a: torch.Tensor, j: int, name: str, device: torch.device, dtype: torch.dtype, notes: list[str], filename: str
) -> torch.Tensor:
    def refuse(why: str) -> UserCodeError:
        return UserCodeError(ErrorKind.EXAMPLE_INPUTS, f"Input {j} ({name}) {why}", filename)

    if a.is_meta:
        raise refuse(
            "is a meta tensor: it has a shape but no values, so there is nothing to evaluate. "
            "Create it on a real device (example_inputs receives the device to use)."
        )
    wants_grad = a.requires_grad
    if a.layout != torch.strided or a.is_nested:
        if wants_grad:
            kind = "nested" if a.is_nested else str(a.layout).removeprefix("torch.")
            raise refuse(
                f"is a {kind} tensor that requires grad: gradviz computes Jacobian columns for dense "
                f"inputs only. Pass {name}.to_dense() to check its gradient, or requires_grad=False if "
                "it is fixed data (an adjacency matrix, say)."
            )
        target = dtype if a.is_floating_point() else a.dtype
        return a.detach().to(device=device, dtype=target).clone()
    if a.is_complex():
        if wants_grad:
            raise refuse(
                "is complex and requires grad; gradviz checks real inputs. Pass torch.view_as_real(...) "
                "and rebuild the complex tensor inside forward."
            )
        return a.detach().to(device=device, copy=True)
    target = dtype if a.is_floating_point() else a.dtype
    # copy=True keeps the strides of a non-overlapping tensor (a transposed weight stays transposed)
    leaf = a.detach().to(device=device, dtype=target, copy=True)
    overlapping = any(st == 0 and sz > 1 for st, sz in zip(a.stride(), a.shape))
    if wants_grad and a.is_floating_point():
        if overlapping:
            leaf = leaf.contiguous()
            notes.append(
                f"{name} was an expanded tensor (elements sharing memory); gradviz checked a contiguous copy, "
                "since perturbing one shared element would move several (gradcheck refuses such inputs)."
            )
        leaf.requires_grad_(True)
    return leaf

"""Turn what ``example_inputs`` returned into fresh leaf tensors on the chosen device.

Fresh leaves matter: an in-place Function (``mark_dirty``) then works without the user
cloning, and nothing the check does can touch tensors the user's module keeps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from gradviz.schema.errors import SettingsError, UserCodeError

DTYPES = {"float64": torch.float64, "float32": torch.float32}


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
        raise SettingsError(f"Unsupported dtype {name!r}: use {' or '.join(DTYPES)}.")
    return DTYPES[name]


def prepare_inputs(
    raw: Any, device: torch.device, dtype: torch.dtype, names: list[str], filename: str = "<source>"
) -> PreparedInputs:
    """Copy every tensor to ``device``; floating tensors also to ``dtype``."""
    if isinstance(raw, torch.Tensor):
        raw = (raw,)
    if isinstance(raw, list):
        raw = tuple(raw)
    if not isinstance(raw, tuple):
        raise UserCodeError(
            "example_inputs",
            f"example_inputs must return a tuple of arguments for apply, not {type(raw).__name__}.",
            filename,
        )
    notes: list[str] = []
    args = []
    for j, a in enumerate(raw):
        if isinstance(a, torch.Tensor):
            if a.is_complex():
                raise UserCodeError(
                    "example_inputs",
                    f"Input {j} ({names[j]}) is complex; gradviz checks real tensors.",
                    filename,
                )
            target = dtype if a.is_floating_point() else a.dtype
            leaf = a.detach().to(device=device, dtype=target, copy=True).contiguous()
            leaf.requires_grad_(a.requires_grad and a.is_floating_point())
            args.append(leaf)
        else:
            args.append(a)
    prepared = PreparedInputs(tuple(args), names, notes)
    if not prepared.grad_indices:
        floats = [j for j, a in enumerate(args) if isinstance(a, torch.Tensor) and a.is_floating_point()]
        if not floats:
            raise UserCodeError(
                "example_inputs",
                "No floating-point tensor among the inputs, so there is nothing to differentiate.",
                filename,
            )
        for j in floats:
            args[j].requires_grad_(True)
        listed = ", ".join(names[j] for j in floats)
        notes.append(
            f"No input had requires_grad=True, so every floating-point input was checked ({listed})."
        )
    return prepared

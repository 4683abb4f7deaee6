"""The caller's arguments on their way into the core and back out: what ``gradviz.check``,
``gradviz.show`` and ``Report.sweep`` share.

gradcheck's reading of ``inputs``, the settings they imply (device and dtype from the first
input that requires grad), an ``nn.Module`` with its parameters as extra inputs, copies the
caller can never see changed, and one run of the core with every random generator put back and
the user's own exception leaving with the user's frames only.
"""

from __future__ import annotations

import contextlib
import random
import sys
from collections.abc import Iterator, Sequence
from types import TracebackType
from typing import Any

import numpy as np
import torch

from gradviz.core.inputs import PreparedInputs, prepare_inputs, resolve_device
from gradviz.core.loader import argument_names
from gradviz.core.module_parameters import ModuleFunction, is_module, with_parameters
from gradviz.schema.errors import UserCodeError
from gradviz.schema.settings import DTYPES, CheckSettings, memory_limit_bytes


def module_with_parameters(
    fn: Any, args: tuple[Any, ...], parameters: bool | Sequence[str]
) -> tuple[ModuleFunction, tuple[Any, ...]]:
    """``parameters=`` applies to an ``nn.Module``: TypeError for anything else."""
    if not is_module(fn):
        raise TypeError(
            f"parameters= needs an nn.Module to take the parameters from; fn is a {type(fn).__name__}."
        )
    return with_parameters(fn, args, parameters)


def settings_for(
    args: tuple[Any, ...],
    *,
    device: str | torch.device | None = None,
    max_memory_mb: float | None = None,
    **fields: Any,
) -> tuple[CheckSettings, torch.device | None]:
    """Validated settings for these arguments, and the device to move them to (None: stay).
    ``fields``: CheckSettings' own (eps, atol, rtol, nondet_tol, jacobian_only, all_checks and
    gradcheck's modes: fast_mode, masked, ...), its defaults where not given."""
    target = resolve_device(str(device)) if device is not None else None
    first = _first_tensor(args)
    settings = CheckSettings(
        device=str(target or first.device),
        dtype=_dtype_name(first),
        max_jacobian_bytes=memory_limit_bytes(max_memory_mb) if max_memory_mb is not None else None,
        **fields,
    )
    settings.validate()
    return settings, target


def as_arguments(inputs: Any) -> tuple[Any, ...]:
    """gradcheck's reading of ``inputs``: a tuple as is, a list as a tuple, anything else alone."""
    if isinstance(inputs, tuple):
        return inputs
    if isinstance(inputs, list):
        return tuple(inputs)
    return (inputs,)


def _first_tensor(args: tuple[Any, ...]) -> torch.Tensor:
    """The first input that requires grad (else the first tensor): its device and dtype are the run's."""
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    if not tensors:
        raise ValueError(
            "No tensor among the inputs: gradcheck needs at least one input tensor that requires grad."
        )
    return next((a for a in tensors if a.requires_grad), tensors[0])


def _dtype_name(tensor: torch.Tensor) -> str:
    """The settings' record of the dtype checked: the inputs' own (float32 for lower precisions)."""
    name = str(tensor.dtype).removeprefix("torch.")
    return name if name in DTYPES else "float32"


class prepared_arguments:  # lower case: used like the context managers of contextlib
    """The caller's arguments as the core takes them, for one run of the core inside the block:
    every random generator is put back afterwards, and an error of the user's code leaves as
    ``gradviz.UserCodeError`` chained to the user's own exception (see ``users_error``).

    A class, not ``@contextlib.contextmanager``: contextlib puts back the traceback of an
    exception its generator re-raises, gradviz's frames and their arguments included.
    """

    def __init__(self, checkable: Any, args: tuple[Any, ...], device: torch.device | None) -> None:
        self.names = argument_names(checkable, len(args))
        self.checkable = checkable
        self.args, self.device = args, device
        self.rng = rng_untouched(args, device)

    def __enter__(self) -> PreparedInputs:
        self.rng.__enter__()
        try:
            return prepare_inputs(self.args, self.device, None, self.names, "<inputs>", fn=self.checkable)
        except BaseException:
            self.rng.__exit__(*sys.exc_info())
            raise

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        __tracebackhide__ = True
        self.rng.__exit__(kind, exc, tb)
        if isinstance(exc, UserCodeError):
            raise users_error(exc) from exc.__cause__ or exc.__context__


def users_error(exc: UserCodeError) -> UserCodeError:
    """``exc`` ready to leave gradviz's API with the user's frames only: its own traceback
    starts afresh where it is raised (gradviz's ``__tracebackhide__`` frames), and the user's
    exception it is chained to keeps only the part from the user's outermost frame in: the
    frames of gradviz and torch that called the user's code, and their arguments, go."""
    original = exc.__cause__ or exc.__context__
    if original is not None and original.__traceback__ is not None:
        files = {frame.filename for frame in exc.frames}
        original.__traceback__ = from_first_frame_in(original.__traceback__, files)
    return exc.with_traceback(None)


def from_first_frame_in(tb: TracebackType, files: set[str]) -> TracebackType:
    """The traceback from its first frame in one of ``files`` on; all of it when none is."""
    start: TracebackType | None = tb
    while start is not None and start.tb_frame.f_code.co_filename not in files:
        start = start.tb_next
    return start or tb


@contextlib.contextmanager
def rng_untouched(args: tuple[Any, ...], device: torch.device | None) -> Iterator[None]:
    """torch's (CPU and the CUDA devices in use), Python's and NumPy's global generators, as they were."""
    devices = {a.device for a in args if isinstance(a, torch.Tensor) and a.device.type == "cuda"}
    if device is not None and device.type == "cuda":
        devices.add(device)
    python_state, numpy_state = random.getstate(), np.random.get_state()
    try:
        with torch.random.fork_rng(devices=sorted(d.index or 0 for d in devices)):
            yield
    finally:
        random.setstate(python_state)
        np.random.set_state(numpy_state)


def owned_copies(args: tuple[Any, ...], device: torch.device | None) -> tuple[Any, ...]:
    """Copies of the caller's arguments (moved to ``device`` when one was asked for), for the
    reproducer and the window: each tensor keeps its dtype, strides and requires_grad, not its graph."""

    def own(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            copy = value.detach().to(device=device, copy=True)
            return copy.requires_grad_(value.requires_grad)
        if isinstance(value, list | tuple) and not hasattr(value, "_fields"):
            return type(value)(own(v) for v in value)
        if isinstance(value, dict):
            return {k: own(v) for k, v in value.items()}
        return value

    return tuple(own(v) for v in args)

"""``gradviz.check``: gradcheck's verdict, in the caller's process, on the caller's tensors.

Same parameter names and defaults as ``torch.autograd.gradcheck`` (the defaults come from
``CheckSettings``, gradviz's one home for them), so swapping one call for the other changes the
output, never the verdict. As gradcheck does, the core perturbs the caller's own tensors in
place (a Function may also read them through a module) and restores every element bitwise; a
forward that modifies its inputs gets copies. Every random number generator the Function could
draw from is put back afterwards.
"""

from __future__ import annotations

import contextlib
import random
import sys
from collections.abc import Callable, Iterator, Sequence
from types import TracebackType
from typing import Any

import numpy as np
import torch

from gradviz.api.report import GradientMismatch, Report
from gradviz.core.callables import as_checkable
from gradviz.core.check import check_function
from gradviz.core.checks import UNDEFINED
from gradviz.core.forward_jacobian import UNDEFINED_FORWARD
from gradviz.core.inputs import PreparedInputs, prepare_inputs, resolve_device
from gradviz.core.loader import argument_names
from gradviz.core.module_parameters import ModuleFunction, is_module, with_parameters
from gradviz.schema.errors import UserCodeError
from gradviz.schema.settings import DTYPES, CheckSettings, memory_limit_bytes

_DEFAULT = CheckSettings()
# gradcheck's options gradviz does not run: accepted at gradcheck's defaults only.
GRADCHECK_ONLY = {
    "check_grad_dtypes": False,
}


def check(
    fn: Callable[..., Any],
    inputs: Any,
    *,
    eps: float = _DEFAULT.eps,
    atol: float = _DEFAULT.atol,
    rtol: float = _DEFAULT.rtol,
    raise_exception: bool = True,
    nondet_tol: float = _DEFAULT.nondet_tol,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_batched_forward_grad: bool = False,
    check_forward_ad: bool = False,
    check_backward_ad: bool = True,
    fast_mode: bool = False,
    masked: bool | None = None,
    jacobian_only: bool = _DEFAULT.jacobian_only,
    all_checks: bool = _DEFAULT.all_checks,
    device: str | torch.device | None = None,
    max_memory_mb: float | None = None,
    parameters: bool | Sequence[str] = False,
    check_vmap_rule: bool | None = _DEFAULT.check_vmap_rule,
) -> Report:
    """Check ``fn``'s backward against finite differences at ``inputs``, as gradcheck does.

    ``fn``: a Function class, its ``.apply``, a custom op (``torch.library.custom_op``, or
    ``torch.ops.ns.name``: then also ``torch.library.opcheck``'s tests, whose failures fail the
    check), or any callable built on these. ``inputs``: a
    tensor or a tuple of arguments, as gradcheck takes them; they come back bitwise unchanged. A failure
    raises :class:`GradientMismatch` (an AssertionError carrying the report) unless
    ``raise_exception=False``; an exception in the Function's code raises
    :class:`gradviz.UserCodeError` chained to it, the traceback holding the user's frames only. ``jacobian_only`` skips gradcheck's other default checks, ``all_checks`` adds double
    backward, ``device`` moves the inputs first (None: where they are).

    ``check_forward_ad=True`` also compares the forward-mode Jacobian (``jvp`` / forward AD, one
    input column at a time, as gradcheck) with the numerical one: ``report.forward_blocks``;
    ``check_backward_ad=False`` then leaves the verdict to forward mode alone, and
    ``check_batched_forward_grad=True`` adds gradcheck's batched forward-AD test as a named check.

    ``parameters`` (``fn`` an ``nn.Module``): also check the gradients of its parameters, all that
    require grad (``True``) or those named (``["layer.weight"]``); blocks are then named
    ``out0 / layer.weight``. Off by default: every parameter element adds a column to the
    Jacobian (two more forward calls), and a model's parameters outnumber its inputs by far;
    ``max_memory_mb`` bounds the added columns as it does the inputs'. The module's own
    parameters are left untouched (gradviz perturbs copies, passed via ``functional_call``).

    ``check_vmap_rule`` (beyond gradcheck; None: only where the Function declares a vmap rule or the
    op has ``register_vmap``): run it under ``torch.func.vmap`` and compare each sample with a
    plain call. A mismatch is the named check ``vmap_rule`` with status "warned"; it never changes
    the verdict.
    """
    __tracebackhide__ = True
    _refuse_gradcheck_only(check_grad_dtypes=check_grad_dtypes)
    modes = {
        "fast_mode": fast_mode,
        "check_batched_grad": check_batched_grad,
        "check_batched_forward_grad": check_batched_forward_grad,
        "check_forward_ad": check_forward_ad,
        "check_backward_ad": check_backward_ad,
        "masked": masked,
    }
    checkable = as_checkable(fn)
    args = as_arguments(inputs)
    called: Callable[..., Any] = fn
    if parameters is not False:
        checkable, args = module_with_parameters(fn, args, parameters)
        called = checkable.apply
    _refuse_what_gradcheck_refuses(args)
    settings, target = settings_for(
        args,
        eps=eps,
        atol=atol,
        rtol=rtol,
        nondet_tol=nondet_tol,
        jacobian_only=jacobian_only,
        all_checks=all_checks,
        device=device,
        max_memory_mb=max_memory_mb,
        check_vmap_rule=check_vmap_rule,
        **modes,
    )
    with prepared_arguments(checkable, args, target) as prepared:
        result = check_function(checkable, prepared, settings)
    if not check_undefined_grad:
        result.checks = [c for c in result.checks if c.name not in (UNDEFINED, UNDEFINED_FORWARD)]
    options: dict[str, Any] = {"eps": eps, "atol": atol, "rtol": rtol, "nondet_tol": nondet_tol}
    if not check_undefined_grad:
        options["check_undefined_grad"] = False
    options.update({k: v for k, v in modes.items() if v != getattr(_DEFAULT, k)})  # the reproducer's gradcheck call
    report = Report(result, fn=called, inputs=owned_copies(args, target), gradcheck_options=options)
    if raise_exception and not report.passed:
        raise GradientMismatch(report)
    return report


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
    eps: float = _DEFAULT.eps,
    atol: float = _DEFAULT.atol,
    rtol: float = _DEFAULT.rtol,
    nondet_tol: float = _DEFAULT.nondet_tol,
    jacobian_only: bool = _DEFAULT.jacobian_only,
    all_checks: bool = _DEFAULT.all_checks,
    device: str | torch.device | None = None,
    max_memory_mb: float | None = None,
    **modes: Any,
) -> tuple[CheckSettings, torch.device | None]:
    """Validated settings for these arguments, and the device to move them to (None: stay).
    ``modes``: gradcheck's own options that CheckSettings carries (fast_mode, masked, ...)."""
    target = resolve_device(str(device)) if device is not None else None
    first = _first_tensor(args)
    settings = CheckSettings(
        device=str(target or first.device),
        dtype=_dtype_name(first),
        eps=eps,
        atol=atol,
        rtol=rtol,
        nondet_tol=nondet_tol,
        jacobian_only=jacobian_only,
        all_checks=all_checks,
        max_jacobian_bytes=memory_limit_bytes(max_memory_mb) if max_memory_mb is not None else None,
        **modes,
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


def _refuse_gradcheck_only(**options: Any) -> None:
    for name, value in options.items():
        if value != GRADCHECK_ONLY[name]:
            raise ValueError(
                f"gradviz.check does not run {name}={value!r} (gradcheck's default is "
                f"{GRADCHECK_ONLY[name]!r}): call torch.autograd.gradcheck for that check."
            )


def _refuse_what_gradcheck_refuses(args: tuple[Any, ...]) -> None:
    """gradcheck raises for these before computing anything; so does gradviz, with advice."""
    wanted = [j for j, a in enumerate(args) if isinstance(a, torch.Tensor) and a.requires_grad]
    if not wanted:
        raise ValueError(
            "No input requires grad, so there is no gradient to check (gradcheck refuses this too): "
            "call x.requires_grad_() on the inputs whose gradients you want checked."
        )
    for j in wanted:
        a = args[j]
        if a.layout == torch.strided and any(st == 0 and n > 1 for st, n in zip(a.stride(), a.shape)):
            raise ValueError(
                f"Input {j} is an expanded tensor (a dimension of stride 0): perturbing one element would move "
                "several, so gradcheck refuses it too. Pass x.contiguous()."
            )


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
        self.args, self.device = args, device
        self.rng = rng_untouched(args, device)

    def __enter__(self) -> PreparedInputs:
        self.rng.__enter__()
        try:
            return prepare_inputs(self.args, self.device, None, self.names, "<inputs>")
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

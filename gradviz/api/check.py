"""``gradviz.check``: gradcheck's verdict, in the caller's process, on the caller's tensors.

Same parameter names and defaults as ``torch.autograd.gradcheck`` (the defaults come from
``CheckSettings``, gradviz's one home for them), so swapping one call for the other changes the
output, never the verdict. As gradcheck does, the core perturbs the caller's own tensors in
place (a Function may also read them through a module) and restores every element bitwise; a
forward that modifies its inputs gets copies. Every random number generator the Function could
draw from is put back afterwards.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

import torch

from gradviz.api.arguments import (
    as_arguments,
    module_with_parameters,
    owned_copies,
    prepared_arguments,
    settings_for,
)
from gradviz.api.report import GradientMismatch, Report
from gradviz.core.callables import as_checkable
from gradviz.core.check import check_function, jacobian_maps
from gradviz.core.checks import UNDEFINED
from gradviz.core.forward_jacobian import UNDEFINED_FORWARD
from gradviz.core.inputs import grad_inside_message, holds_grad_tensor
from gradviz.core.loader import argument_names
from gradviz.core.verdict_first import attach_maps
from gradviz.schema.results import CheckResult
from gradviz.schema.settings import CheckSettings

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
    opcheck: Literal["warn", "fail"] = "warn",
) -> Report:
    """Check ``fn``'s backward against finite differences at ``inputs``, as gradcheck does.

    The verdict (``report.passed``, ``bool(report)``) is ``torch.autograd.gradcheck``'s with the
    same arguments; the report adds every cell of both Jacobians and why cells fail. With
    ``fast_mode`` the verdict comes at gradcheck's cost: no Jacobian is built until the report's
    maps are first read (``Report.blocks``), and the cells gradcheck's projections can miss are
    searched for by one more projection and bisection (``report.result.large_blocks``).

    Args:
        fn: a Function class, its ``.apply``, a custom op (``torch.library.custom_op``, or
            ``torch.ops.ns.name``: then also ``torch.library.opcheck``'s tests), or any callable
            built on these.
        inputs: a tensor or a tuple of arguments, as gradcheck takes them; they come back bitwise
            unchanged.
        eps, atol, rtol, nondet_tol, check_undefined_grad, check_batched_grad, fast_mode, masked:
            gradcheck's, with its defaults.
        raise_exception: raise :class:`GradientMismatch` on a failure (gradcheck's default);
            False: return the failing report (falsy, as gradcheck returns False).
        check_grad_dtypes: accepted at gradcheck's default (False) only.
        check_forward_ad: also compare the forward-mode Jacobian (``jvp`` / forward AD, one input
            column at a time, as gradcheck) with the numerical one: ``report.forward_blocks``.
        check_backward_ad: False leaves the verdict to forward mode alone.
        check_batched_forward_grad: add gradcheck's batched forward-AD test as a named check.
        jacobian_only: skip gradcheck's other default checks (reentrant, grad_output scaling, ...).
        all_checks: add double backward.
        device: move the inputs there first (None: where they are).
        max_memory_mb: bound on the Jacobians held; larger blocks are searched instead.
        parameters: ``fn`` an ``nn.Module``: also check the gradients of its parameters, all that
            require grad (``True``) or those named (``["layer.weight"]``); blocks are then named
            ``out0 / layer.weight``. Off by default: every parameter element adds a Jacobian
            column (two more forward calls). The module's own parameters are left untouched
            (gradviz perturbs copies, passed via ``functional_call``).
        check_vmap_rule: beyond gradcheck (None: only where the Function declares a vmap rule or
            the op has ``register_vmap``): run it under ``torch.func.vmap`` and compare each
            sample with a plain call; a mismatch is the named check ``vmap_rule`` with status
            "warned", never a change of the verdict.
        opcheck: a custom op only. A failing ``torch.library.opcheck`` test (no or a wrong fake
            kernel, an undeclared mutation) breaks torch.compile or export but not the gradient:
            ``"warn"`` (default) makes it a named check with status "warned", saying what breaks
            and how to fix it, the verdict staying gradcheck's; ``"fail"`` makes it fail the
            verdict too.

    Returns:
        The :class:`gradviz.Report` (passing, or failing with ``raise_exception=False``).

    Raises:
        GradientMismatch: the check fails and ``raise_exception`` is True (an AssertionError
            carrying the report as ``exc.report``).
        UserCodeError: the Function's own code raised; chained to that exception, its traceback
            the user's frames only.
        GradvizError: bad settings (``SettingsError``: a non-positive eps, a negative tolerance, an
            unknown device, an ``opcheck`` other than "warn" / "fail", a combination of modes
            gradcheck refuses).
        TypeError: ``fn`` is none of the callables above, or ``parameters`` is given and ``fn`` is
            not an ``nn.Module``.
        ValueError: what gradcheck refuses too (no tensor among the inputs, no input requires
            grad, an expanded input), or a gradcheck option gradviz does not run
            (``check_grad_dtypes=True``).
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
    _refuse_what_gradcheck_refuses(checkable, args)
    tolerances = {"eps": eps, "atol": atol, "rtol": rtol, "nondet_tol": nondet_tol}
    settings, target = settings_for(
        args,
        device=device,
        max_memory_mb=max_memory_mb,
        jacobian_only=jacobian_only,
        all_checks=all_checks,
        check_vmap_rule=check_vmap_rule,
        opcheck=opcheck,
        **tolerances,
        **modes,
    )
    with prepared_arguments(checkable, args, target) as prepared:
        result = check_function(checkable, prepared, settings, maps="deferred")
    if not check_undefined_grad:
        result.checks = [c for c in result.checks if c.name not in (UNDEFINED, UNDEFINED_FORWARD)]
    options: dict[str, Any] = dict(tolerances)
    if not check_undefined_grad:
        options["check_undefined_grad"] = False
    options.update({k: v for k, v in modes.items() if v != getattr(_DEFAULT, k)})  # the reproducer's gradcheck call
    kept = owned_copies(args, target)
    report = Report(
        result, fn=called, inputs=kept, gradcheck_options=options, build_maps=_maps_at(checkable, kept, settings)
    )
    if raise_exception and not report.passed:
        raise GradientMismatch(report)
    return report


def _maps_at(checkable: Any, inputs: tuple[Any, ...], settings: CheckSettings) -> Callable[[CheckResult], None]:
    """What builds a fast-mode report's maps when first read: both Jacobians at the report's own
    copies of the inputs, in this process, joined to the verdict already given."""

    def build(result: CheckResult) -> None:
        __tracebackhide__ = True
        with prepared_arguments(checkable, inputs, None) as prepared:
            attach_maps(result, jacobian_maps(checkable, prepared, settings, name=result.function))

    return build


def _refuse_gradcheck_only(**options: Any) -> None:
    for name, value in options.items():
        if value != GRADCHECK_ONLY[name]:
            raise ValueError(
                f"gradviz.check does not run {name}={value!r} (gradcheck's default is "
                f"{GRADCHECK_ONLY[name]!r}): call torch.autograd.gradcheck for that check."
            )


def _refuse_what_gradcheck_refuses(checkable: Any, args: tuple[Any, ...]) -> None:
    """gradcheck raises for these before computing anything; so does gradviz, with advice."""
    wanted = [j for j, a in enumerate(args) if isinstance(a, torch.Tensor) and a.requires_grad]
    inside = [j for j, a in enumerate(args) if not isinstance(a, torch.Tensor) and holds_grad_tensor(a)]
    if not wanted and inside:  # they do require grad: in a list, where no finite difference reaches them
        raise ValueError(grad_inside_message(inside[0], argument_names(checkable, len(args))[inside[0]], checkable))
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

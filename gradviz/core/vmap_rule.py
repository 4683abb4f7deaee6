"""The vmap-rule check: a Function's own batching rule against plain calls, sample by sample.

gradcheck's ``check_batched_grad`` batches with PyTorch's prototype vmap (``torch._vmap_internals``),
which never calls a Function's ``vmap`` staticmethod, its ``generate_vmap_rule`` or a custom op's
``register_vmap``: a wrong rule passes it. This check runs the Function under ``torch.func.vmap``
over B samples built from the check's inputs (the inputs themselves, then copies scaled by
1 + small noise from a private generator), and compares each sample with the unbatched call;
then, where the Function is differentiable under ``torch.func``, the same for
``torch.func.vjp`` under vmap (backward batched over inputs and output gradients).

It is beyond gradcheck, so it never changes the verdict: a mismatch is reported with status
``WARNED`` (named, with the sample and output), which ``CheckResult.passed`` does not count.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from gradviz.core.jacobian import call_apply
from gradviz.schema.results import PASSED, WARNED, CheckOutcome

VMAP_RULE = "vmap_rule"
# a custom op's register_autograd backward is an autograd.Function without setup_context, which
# torch.func refuses ("... it must override the setup_context staticmethod"): not the user's to fix
OP_BACKWARD_UNDER_FUNC = (
    "the forward's samples agree with plain calls, but the op's backward cannot run under torch.func (vmap over "
    "torch.func.vjp raised {error}): PyTorch runs the backward a custom op registers with register_autograd "
    "as an autograd.Function of its own making, which torch.func transforms refuse. Nothing in the op is "
    "wrong for autograd or gradcheck, and there is no setup_context of yours to add; only torch.func users of "
    "the op (vmap over grad, jacrev) meet this error"
)
BATCH = 3  # samples stacked along a new dim 0
NOISE = 0.05  # samples 1.. are x * (1 + NOISE * u), u uniform in [-1, 1]: near x, so inside its domain


def vmap_rule_of(fn: Any) -> str | None:
    """What batching rule ``fn`` declares ("a vmap staticmethod", "generate_vmap_rule = True",
    "register_vmap"), or None: without one ``torch.func.vmap`` refuses a Function outright."""
    if isinstance(fn, type) and issubclass(fn, torch.autograd.Function):
        if getattr(fn, "generate_vmap_rule", False):
            return "generate_vmap_rule = True"
        if getattr(fn, "vmap", None) is not getattr(torch.autograd.Function, "vmap", None):
            return "a vmap staticmethod"
        return None
    for candidate in (fn, getattr(fn, "apply", None), getattr(fn, "op", None)):
        opdef = _custom_op_def(candidate)
        if opdef is not None and getattr(opdef, "_vmap_fn", None) is not None:
            return "register_vmap"
    return None


def _custom_op_def(obj: Any) -> Any:
    """The ``torch.library.custom_op`` definition behind ``obj`` (the op or ``torch.ops.ns.name``)."""
    try:
        from torch._library.custom_ops import OPDEFS, CustomOpDef
    except ImportError:  # pragma: no cover - older PyTorch without custom_op
        return None
    if isinstance(obj, CustomOpDef):
        return obj
    name = getattr(obj, "_qualified_op_name", None)  # OpOverloadPacket: "ns::name"
    if name is None and isinstance(obj, torch._ops.OpOverload):
        name = obj._name
    return OPDEFS.get(name) if isinstance(name, str) else None


@dataclass(frozen=True)
class _Samples:
    """The B samples near the check's inputs, and the same stacked along dim 0 for vmap."""

    each: list[list]  # sample b's arguments
    stacked: list  # batched arguments stacked, the others as given (all detached)
    in_dims: tuple  # 0 where stacked, None where not


def check_vmap_rule(
    fn: Any,
    args: Sequence,
    in_indices: Sequence[int],
    out_indices: Sequence[int],
    names: Sequence[str],
    *,
    atol: float,
    rtol: float,
    seed: int = 0,
) -> CheckOutcome:
    """Forward, then backward, under ``torch.func.vmap`` against a plain call per sample."""
    rule = vmap_rule_of(fn) or "no declared rule"
    batched_at = [j for j, a in enumerate(args) if _batchable(a)]
    samples = _samples(args, batched_at, seed)
    in_dims = tuple(0 if j in batched_at else None for j in range(len(args)))
    stacked = [torch.stack([s[j] for s in samples]) if j in batched_at else args[j] for j in range(len(args))]
    stacked = [a.detach() if isinstance(a, torch.Tensor) else a for a in stacked]

    def forward(*a):
        return tuple(_outputs(fn, a)[i] for i in out_indices)

    try:
        with torch.no_grad():
            batched = torch.func.vmap(forward, in_dims=in_dims)(*_fresh(stacked))
    except Exception as exc:
        return _raised(fn, rule, "forward", exc)
    try:
        with torch.no_grad():
            plain = [forward(*[_detached(a) for a in s]) for s in samples]
    except Exception as exc:  # e.g. a sample outside the forward's domain: nothing to compare with
        return _raised(fn, rule, "plain call on a sample near the inputs", exc)
    labels = [f"out{i}" for i in out_indices]
    problem = _first_difference(batched, plain, labels, atol, rtol)
    if problem:
        return CheckOutcome(VMAP_RULE, WARNED, f"{_name(fn)} under torch.func.vmap ({rule}): {problem}")

    try:
        backward = _backward_problem(
            fn, args, _Samples(samples, stacked, in_dims), in_indices, out_indices, names, atol=atol, rtol=rtol,
            seed=seed,
        )
    except Exception as exc:  # the plain backward itself raised: gradcheck's checks say why
        return _raised(fn, rule, "plain backward (torch.func.vjp) on a sample", exc)
    if backward:
        return CheckOutcome(VMAP_RULE, WARNED, f"{_name(fn)} under torch.func.vmap ({rule}): {backward}")
    return CheckOutcome(
        VMAP_RULE,
        PASSED,
        f"torch.func.vmap ({rule}) over {BATCH} samples equals the plain call for every sample, forward and "
        "backward (torch.func.vjp under vmap).",
    )


def _backward_problem(
    fn, args, batch: _Samples, in_indices, out_indices, names, *, atol: float, rtol: float, seed: int
) -> str | None:
    """Batched ``torch.func.vjp`` against one plain vjp per sample; output gradients drawn per sample."""
    samples, stacked, in_dims = batch.each, batch.stacked, batch.in_dims
    diff = [j for j in in_indices if isinstance(args[j], torch.Tensor) and args[j].is_floating_point()]
    if not diff:
        return None
    generator = torch.Generator().manual_seed(seed + 1)
    shapes = [s for s in (tuple(o.shape) for o in _plain_outputs(fn, samples[0], out_indices))]
    ref = args[diff[0]]
    cotangents = [
        torch.rand((BATCH, *shape), generator=generator, dtype=torch.float64).to(ref.device, ref.dtype)
        for shape in shapes
    ]

    def vjp(*a_and_v):
        a, v = list(a_and_v[: len(args)]), a_and_v[len(args) :]

        def differentiable(*leaves):
            full = list(a)
            for j, leaf in zip(diff, leaves):
                full[j] = leaf
            return tuple(_outputs(fn, full)[i] for i in out_indices)

        _, pull = torch.func.vjp(differentiable, *[a[j] for j in diff])
        return pull(tuple(v))

    try:
        batched = torch.func.vmap(vjp, in_dims=(*in_dims, *([0] * len(cotangents))))(
            *_fresh(stacked), *cotangents
        )
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        if _op_backward_refused(fn, exc):
            return OP_BACKWARD_UNDER_FUNC.format(error=type(exc).__name__)
        return (
            f"the forward's samples agree, but backward under torch.func.vmap (vmap over torch.func.vjp) raised "
            f"{type(exc).__name__}: {first}"
        )
    plain = [vjp(*[_detached(a) for a in s], *[v[b] for v in cotangents]) for b, s in enumerate(samples)]
    problem = _first_difference(batched, plain, [f"the gradient for {names[j]}" for j in diff], atol, rtol)
    return (
        None if problem is None else f"the forward's samples agree, but in backward (vmap over vjp) {problem}"
    )


def _first_difference(batched, plain, labels: Sequence[str], atol: float, rtol: float) -> str | None:
    """'sample 1 of out0 differs from the plain call: max |diff| 0.5 at out0[2]', or None."""
    for k, label in enumerate(labels):
        stack = batched[k]
        for b, one in enumerate(plain):
            want = one[k]
            got = stack[b]
            if not isinstance(want, torch.Tensor) or not isinstance(got, torch.Tensor):
                continue
            if got.shape != want.shape:
                return (
                    f"sample {b} of {label} has shape {tuple(got.shape)} under vmap but {tuple(want.shape)} in the "
                    "plain call (are the out_dims right?)"
                )
            close = torch.isclose(got, want.to(got.dtype), atol=atol, rtol=rtol, equal_nan=True)
            if bool(close.all()):
                continue
            gap = torch.where(close, 0.0, (got.double() - want.double()).abs().nan_to_num(nan=float("inf")))
            flat = int(gap.argmax())
            index = (
                [int(v) for v in torch.unravel_index(torch.tensor(flat), tuple(gap.shape))]
                if gap.dim()
                else []
            )
            where = f"{label.split()[-1]}[{','.join(str(v) for v in index)}]"
            return (
                f"sample {b} of {label} differs from the plain call: max |diff| {float(gap.max()):.3g} at {where} "
                f"(vmap {float(got.reshape(-1)[flat]):.6g}, plain {float(want.reshape(-1)[flat]):.6g}; "
                f"atol={atol:g}, rtol={rtol:g})"
            )
    return None


def _samples(args: Sequence, batched_at: Sequence[int], seed: int) -> list[list]:
    """Sample 0 is the inputs themselves; sample b > 0 scales each batched one by 1 + NOISE·u."""
    generator = torch.Generator().manual_seed(seed)
    found = [list(args)]
    for _ in range(1, BATCH):
        sample = list(args)
        for j in batched_at:
            x = args[j].detach()
            u = torch.rand(x.shape, generator=generator, dtype=torch.float64).to(x.device) * 2 - 1
            sample[j] = (x * (1 + NOISE * u).to(x.dtype)).to(x.dtype)
        found.append(sample)
    return found


def _batchable(a: Any) -> bool:
    """Floating and complex tensors get a batch dimension; integer ones (indices) and the rest do not."""
    return (
        isinstance(a, torch.Tensor)
        and (a.is_floating_point() or a.is_complex())
        and a.layout == torch.strided
    )


def _outputs(fn: Any, args: Sequence) -> tuple:
    return tuple(call_apply(fn.apply, list(args), clone=False))


def _plain_outputs(fn: Any, sample: Sequence, out_indices: Sequence[int]) -> list[torch.Tensor]:
    with torch.no_grad():
        outputs = _outputs(fn, [_detached(a) for a in sample])
    return [outputs[i] for i in out_indices]


def _fresh(args: Sequence) -> list:
    """Own copies for one call: a forward may modify its inputs in place (``ctx.mark_dirty``)."""
    return [a.clone() if isinstance(a, torch.Tensor) else a for a in args]


def _detached(a: Any) -> Any:
    return a.detach().clone() if isinstance(a, torch.Tensor) else a


def _op_backward_refused(fn: Any, exc: Exception) -> bool:
    """torch.func refused a custom op's registered backward (an autograd.Function without setup_context)."""
    return getattr(fn, "op", None) is not None and "setup_context staticmethod" in str(exc)


def _raised(fn: Any, rule: str, what: str, exc: Exception) -> CheckOutcome:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if what.startswith("plain backward") and _op_backward_refused(fn, exc):
        said = OP_BACKWARD_UNDER_FUNC.format(error=type(exc).__name__)
        return CheckOutcome(VMAP_RULE, WARNED, f"{_name(fn)} under torch.func.vmap ({rule}): {said}"[:2000])
    return CheckOutcome(
        VMAP_RULE,
        WARNED,
        f"{_name(fn)} under torch.func.vmap ({rule}): the {what} raised {type(exc).__name__}: {first}"[:2000],
    )


def _name(fn: Callable | Any) -> str:
    """The Function's name, or a custom op's ``ns::name``."""
    for candidate in (fn, getattr(fn, "apply", None), getattr(fn, "op", None)):
        opdef = _custom_op_def(candidate)
        if opdef is not None:
            return str(opdef._qualname)
    return getattr(fn, "__name__", None) or type(fn).__name__

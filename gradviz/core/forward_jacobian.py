"""Forward mode (``check_forward_ad``): the Jacobian from ``jvp`` / forward AD, and its checks.

gradcheck(check_forward_ad=True) builds this third Jacobian one input column at a time
(``_get_analytical_jacobian_forward_ad``): every input that requires grad becomes a dual tensor
with a zero tangent, and for each element the tangent is set to 1, the function called, and each
output's tangent read back as one column; an output with no tangent (None) gives a zero column.
It never batches (a batched tangent would call the Function's ``jvp`` under vmap, which is what
``check_batched_forward_grad`` tests on its own), so neither does this module. The columns are
compared with the same numerical Jacobian as the backward's rows, by gradcheck's rule.

Two ways a forward formula can be missing get a sentence instead of a wall of failing cells: a
Function without ``jvp`` raises NotImplementedError under forward AD (a failed ``forward_ad``
check, as gradcheck raises), and a custom op without a forward formula returns outputs with no
tangent at all, so its forward Jacobian is silently zero (a warning and a hint on the blocks; the
verdict stays gradcheck's, which fails there).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.autograd.forward_ad as fwAD

from gradviz.core.check_run import CheckRun
from gradviz.core.compare import compare_block
from gradviz.core.jacobian import BlockKey, Jacobian, Progress, call_apply
from gradviz.core.user_code import CodeFiles
from gradviz.schema.errors import Cancelled, ErrorKind, UserCodeError, user_frames
from gradviz.schema.results import FAILED, PASSED, BlockComparison, CheckOutcome
from gradviz.schema.settings import CheckSettings

FORWARD_AD = "forward_ad"  # forward AD itself could not run (no jvp, or jvp raised)
UNDEFINED_FORWARD = "undefined_forward_tangents"
BATCHED_FORWARD_GRAD = "batched_forward_grad"

NO_FORMULA = "{name} has no forward-mode formula (jvp): its tangent is zero"


@dataclass
class ForwardJacobian:
    """The forward-mode blocks, and which of them never got a tangent (None in every column)."""

    blocks: dict[BlockKey, np.ndarray]
    untracked: set[BlockKey] = field(default_factory=set)


def forward_jacobian(
    apply: Callable,
    args: Sequence,
    out_indices: Sequence[int],
    in_indices: Sequence[int],
    *,
    clone_inputs: bool = False,
    progress: Progress | None = None,
) -> ForwardJacobian:
    """Columns J[:, c] = tangent of each output when input element c has tangent 1, the others 0."""
    blocks: dict[BlockKey, np.ndarray] = {}
    tracked: set[BlockKey] = set()
    with fwAD.dual_level():
        dual_args = list(args)
        tangents = {}
        for j in in_indices:
            dual = fwAD.make_dual(args[j].detach(), torch.zeros_like(args[j]))
            tangents[j] = fwAD.unpack_dual(dual).tangent  # a differentiable view may hold another tangent
            dual_args[j] = dual
        for j in in_indices:
            tangent, shape = tangents[j], tuple(args[j].shape)
            for c in range(args[j].numel()):
                if progress is not None:
                    progress.check_cancel()
                index = tuple(int(k) for k in np.unravel_index(c, shape)) if shape else ()
                tangent[index] = 1.0
                outputs = call_apply(apply, dual_args, clone=clone_inputs)
                for i in out_indices:  # read before the tangent is reset: a jvp may return it as it is
                    column = _output_tangent(outputs[i])
                    block = blocks.get((i, j))
                    if block is None:
                        block = blocks[i, j] = np.zeros((outputs[i].numel(), args[j].numel()))
                    if column is not None:
                        tracked.add((i, j))
                        block[:, c] = column
                tangent[index] = 0.0
                if progress is not None:
                    progress.advance(1)
    return ForwardJacobian(blocks, set(blocks) - tracked)  # an input with no elements: compare_forward fills in


def _output_tangent(output: object) -> np.ndarray | None:
    """The output's tangent, flat and in float64; None where forward AD attached none."""
    if not isinstance(output, torch.Tensor):
        return None
    found = fwAD.unpack_dual(output).tangent
    if found is None:
        return None
    found = found.detach()
    if found.layout != torch.strided:
        found = found.to_dense()
    return found.reshape(-1).to("cpu", torch.float64).numpy()


def compare_forward(
    forward: ForwardJacobian,
    numerical: Jacobian,
    outputs: Sequence,
    args: Sequence,
    settings: CheckSettings,
) -> list[BlockComparison]:
    """Each forward block against the numerical one, by gradcheck's rule (as the backward's blocks)."""
    found = []
    for (i, j), n in numerical.blocks.items():
        a = forward.blocks.get((i, j))
        if a is None or a.shape != n.shape:
            a = np.zeros_like(n)
        dtype = torch.promote_types(args[j].dtype, outputs[i].dtype)
        found.append(
            compare_block(
                i, j, tuple(outputs[i].shape), tuple(args[j].shape), a, n, settings.tolerance(), compute_dtype=dtype
            )
        )
    return found


def zero_tangent_warnings(
    name: str, blocks: list[BlockComparison], forward: ForwardJacobian, names: Sequence[str]
) -> list[str]:
    """Blocks whose forward Jacobian is all zero while the numerical one is not: say why, by name.

    A missing forward formula (a custom op without one) leaves the outputs with no tangent at
    all; a jvp that returns zeros leaves zero tangents. Each such block gets the reason as a hint."""
    zero = [b for b in blocks if b.analytic.size and not b.analytic.any() and b.numerical.any()]
    if not zero:
        return []
    titles = ", ".join(f"out{b.output} / {names[b.input]}" for b in zero)
    if all((b.output, b.input) in forward.untracked for b in zero):
        reason = NO_FORMULA.format(name=name)
        advice = (
            "forward AD attached no tangent to its output, so every cell of the forward Jacobian is 0 where "
            "finite differences are not. A torch.library.custom_op's register_autograd gives a backward "
            "only: for forward mode, call the op from a torch.autograd.Function with a jvp staticmethod, or "
            "check backward mode only (without check_forward_ad)."
        )
    else:
        reason = f"{name}'s jvp returns a zero tangent"
        advice = "the forward Jacobian is all 0 where finite differences are not: the jvp ignores its input tangents."
    for b in zero:
        b.hints = [f"{reason}."]
    return [f"{titles}: {reason}: {advice}"]


@dataclass
class ForwardFindings:
    """What forward mode adds to a check: its blocks, its named checks, its warnings."""

    blocks: list[BlockComparison] = field(default_factory=list)
    checks: list[CheckOutcome] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def check_forward_mode(
    run: CheckRun,
    numerical: Jacobian,
    *,
    progress: Progress | None = None,
    backward_blocks: Sequence[BlockComparison] = (),
) -> ForwardFindings:
    """gradcheck(check_forward_ad=True)'s part, in its order: the forward Jacobian against the
    numerical one, the undefined-tangent test (unless jacobian_only), then check_batched_forward_grad.
    ``backward_blocks``: the backward's own blocks, to say where only the jvp disagrees."""
    fn, args, outputs, settings, names = run.fn, run.args, run.outputs, run.settings, run.names
    out_indices, in_indices, clone_inputs = run.out_indices, run.in_indices, run.mutates
    try:
        forward = forward_jacobian(
            fn.apply, args, out_indices, in_indices, clone_inputs=clone_inputs, progress=progress
        )
    except Cancelled:
        raise
    except (Exception, SystemExit) as exc:  # gradcheck raises here too
        if raised_in_user_code(exc, run.code):
            raise jvp_error(fn.__name__, exc, run.code) from None
        return ForwardFindings(checks=[no_forward_mode(fn.__name__, exc)])  # no jvp: a failed check, by name
    found = ForwardFindings(compare_forward(forward, numerical, outputs, args, settings))
    found.warnings = zero_tangent_warnings(fn.__name__, found.blocks, forward, names)
    jvp_wrong_hints(found.blocks, backward_blocks)
    if not settings.jacobian_only:
        found.checks.append(check_undefined_forward_tangents(fn.apply, args, [outputs[i] for i in out_indices]))
    if settings.check_batched_forward_grad:
        found.checks.append(check_batched_forward_grad(fn.apply, args, settings.seed))
    return found


def jvp_wrong_hints(blocks: Sequence[BlockComparison], backward_blocks: Sequence[BlockComparison]) -> None:
    """Where the backward's block passes and the forward one fails, the finite differences are
    trusted by one side: the jvp is what is wrong there (unless a reason is already given)."""
    passed = {(b.output, b.input) for b in backward_blocks if b.passed}
    for b in blocks:
        if not b.passed and not b.hints and (b.output, b.input) in passed:
            b.hints = [
                "the backward matches finite differences in this block and the jvp does not: the forward-mode "
                "formula (jvp) is wrong here."
            ]


def raised_in_user_code(exc: BaseException, code: CodeFiles) -> bool:
    """Whether the user's code raised ``exc`` (their jvp, or their forward on dual inputs), rather
    than PyTorch saying the Function has no jvp at all."""
    if isinstance(exc, SystemExit):
        return True
    if isinstance(exc, NotImplementedError) and "jvp" in str(exc):
        return False  # the base class's jvp: there is no user code to point at
    return bool(user_frames(exc.__traceback__, {code.main, *code.also}))


def jvp_error(name: str, exc: BaseException, code: CodeFiles) -> UserCodeError:
    """The user's error at its line, as for an exception in backward: the jvp (or the forward it
    was called after) raised, so there is no forward Jacobian to compare."""
    frames = user_frames(exc.__traceback__, {code.main, *code.also})
    in_jvp = any(f.name == "jvp" for f in frames)
    context = f"{name}.jvp" if in_jvp else f"{name}.forward (on dual inputs, for forward-mode AD)"
    return code.error(ErrorKind.FORWARD, exc, context)


def no_forward_mode(name: str, exc: BaseException) -> CheckOutcome:
    """A failed ``forward_ad`` check: forward AD could not run (gradcheck raises the same exception)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, NotImplementedError) and "jvp" in str(exc):
        detail = (
            f"{name} has no jvp: forward-mode AD (check_forward_ad=True) needs a jvp staticmethod "
            f"(jvp(ctx, *tangents) returning one tangent per output); torch.autograd.gradcheck raises "
            f"NotImplementedError here ({text})"
        )
    else:
        detail = f"forward-mode AD raised {type(exc).__name__}: {text}"
    return CheckOutcome(FORWARD_AD, FAILED, detail)


def check_undefined_forward_tangents(apply: Callable, args: Sequence, outputs: Sequence) -> CheckOutcome:
    """gradcheck's ``_test_undefined_forward_mode`` (run with check_forward_ad unless
    check_undefined_grad=False): a zero tangent and no tangent at all must give the same output tangents."""
    from torch.autograd.gradcheck import GradcheckError, _test_undefined_forward_mode

    def wrapper(*a):
        return call_apply(apply, a, clone=True)

    try:
        _test_undefined_forward_mode(wrapper, tuple(outputs), tuple(args))
    except Cancelled:
        raise
    except Exception as exc:  # gradcheck raises there too
        first = " ".join(str(p) for p in exc.args[:2]) if isinstance(exc, GradcheckError) else str(exc)
        return CheckOutcome(
            UNDEFINED_FORWARD, FAILED, f"a zero input tangent and an undefined one give different output tangents: {first}"
        )
    return CheckOutcome(UNDEFINED_FORWARD, PASSED, "a zero input tangent and an undefined one give the same output tangents.")


def check_batched_forward_grad(apply: Callable, args: Sequence, seed: int) -> CheckOutcome:
    """gradcheck's ``check_batched_forward_grad``, by PyTorch's own test: forward AD under the
    prototype ``torch._vmap_internals.vmap`` over two random tangents must equal two plain calls.
    Like ``batched_grad`` it never calls a Function's ``vmap`` staticmethod or ``generate_vmap_rule``."""
    from torch.autograd.gradcheck import GradcheckError, _test_batched_grad_forward_ad

    def wrapper(*a):
        return call_apply(apply, a, clone=True)

    devices = sorted({a.device for a in args if isinstance(a, torch.Tensor) and a.device.type == "cuda"}, key=str)
    with torch.random.fork_rng(devices=devices):  # the tangents are random: the user's RNG is left alone
        torch.manual_seed(seed)
        try:
            _test_batched_grad_forward_ad(wrapper, tuple(args))
        except GradcheckError as exc:
            first = str(exc).strip().splitlines()[0]
            return CheckOutcome(BATCHED_FORWARD_GRAD, FAILED, f"gradcheck's batched forward-gradient test fails: {first}")
        except Cancelled:
            raise
        except Exception as exc:  # gradcheck raises these too: the verdict is a failure, said by name
            return CheckOutcome(
                BATCHED_FORWARD_GRAD, FAILED, f"forward AD under gradcheck's prototype vmap raised {type(exc).__name__}: {exc}"
            )
    return CheckOutcome(
        BATCHED_FORWARD_GRAD, PASSED, "forward AD under gradcheck's prototype vmap equals plain forward-AD calls."
    )

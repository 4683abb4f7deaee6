"""The model audit: every custom node of one forward, checked where the model really called it.

``capture_calls`` records each call of a custom Function or op with copies of its arguments;
each call whose tensors autograd differentiated is then checked as ``gradviz check`` checks a
Function (``check_function``, with the same settings), with respect to those tensors only, the
others passed as the constants they were. A custom op is checked as gradcheck checks it:
``torch.library.opcheck``'s registration tests are not part of an audit's verdict.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch

from gradviz.core.audit_capture import Capture, CapturedCall, capture_calls
from gradviz.core.audit_memory import MemoryBudget, audit_limit, refuse_too_large
from gradviz.core.callables import Checkable, CustomOpFunction
from gradviz.core.check import NothingToCheck, check_function
from gradviz.core.inputs import PreparedInputs
from gradviz.core.jacobian import CancelFn, ProgressFn
from gradviz.core.loader import argument_names
from gradviz.schema.audit import BUILTIN_NOTE, AuditNode, AuditResult
from gradviz.schema.errors import Cancelled, ErrorKind, GradvizError, UserCodeError
from gradviz.schema.settings import DTYPES, CheckSettings


class NothingToAudit(GradvizError):
    """No custom node of the forward could be checked: the audit has no verdict."""

    kind = ErrorKind.NOTHING_TO_CHECK


class NoCustomNode(NothingToAudit):
    """The forward called no custom Function or op: there is nothing of the user's to check."""


def refuse_unchecked(result: AuditResult) -> None:
    """NothingToAudit when the forward's custom calls were all listed but none checked."""
    if result.checked:
        return
    reasons = sorted({n.reason or "" for n in result.nodes})
    raise NothingToAudit(
        f"Nothing to audit: none of {result.model}'s {len(result.nodes)} custom node call(s) could be checked "
        f"({'; '.join(reasons)}). Pass inputs that require grad, or parameters that do, as in training."
    )


class GradcheckOp(CustomOpFunction):
    """A custom op dressed as a Function, checked as gradcheck checks it: the registration tests
    of ``torch.library.opcheck`` (run by ``gradviz check`` on an op) are left out, so the node's
    verdict is gradcheck's."""

    def __init__(self, op: Any) -> None:
        super().__init__(op)
        self.definition = op
        self.op = None  # opcheck_outcomes reads ``op``: none to test


def checkable_of(call: CapturedCall) -> Checkable:
    """What ``check_function`` runs for the call: the Function class, or the op as above."""
    if isinstance(call.target, type):
        return call.target
    return GradcheckOp(call.target)


def why_not_checked(call: CapturedCall) -> str | None:
    """The reason a call is listed but not checked; None when it is checked."""
    if call.unbound:
        return f"its {call.unbound} (gradcheck passes arguments by position only)"
    if call.differentiated:
        return None
    if not call.grad_enabled:
        return (
            "autograd was not recording at this call (inside another custom Function's forward or custom op, "
            "or under torch.no_grad()): its backward never runs here"
        )
    return "none of its tensor arguments required grad at this call: autograd never runs its backward here"


def node_of(call: CapturedCall) -> AuditNode:
    """The node's entry before its check."""
    shapes = [list(a.shape) if isinstance(a, torch.Tensor) else None for a in call.args]
    return AuditNode(call.function, call.module, call.call, call.calls, reason=why_not_checked(call), shapes=shapes)


def capture_or_refuse(fn: Callable[..., Any], args: tuple[Any, ...], name: str) -> Capture:
    """The forward's custom calls; NoCustomNode when there is none."""
    capture = capture_calls(fn, args)
    if not capture.calls:
        builtin = f" (PyTorch's own {', '.join(sorted(capture.builtin_functions))} only)" if capture.builtin_functions else ""
        raise NoCustomNode(
            f"Nothing to audit: {name}'s forward calls no custom torch.autograd.Function or torch.library.custom_op"
            f"{builtin}; its backward is PyTorch's own. Audit a model that calls your Functions or ops."
        )
    return capture


def notes_of(plan: list[int | None]) -> list[str]:
    """What the audit did not check, said once."""
    distinct = sum(1 for k, p in enumerate(plan) if p == k)
    repeats = sum(1 for k, p in enumerate(plan) if p is not None and p != k)
    notes = [BUILTIN_NOTE]
    if repeats:
        notes.append(
            f"{repeats} call(s) had exactly the inputs of an earlier call of the same node: each shares that "
            f"call's check ({distinct} distinct call(s) checked)."
        )
    return notes


def plan_checks(calls: list[CapturedCall], max_checks: int | None = None) -> list[int | None]:
    """For each call, the index of the call whose check it gets: its own, an earlier one with
    exactly the same inputs (bitwise), or None (not checked: no tensor differentiated, or past
    ``max_checks`` distinct checks)."""
    seen: dict[tuple[Any, ...], int] = {}
    plan: list[int | None] = []
    for k, call in enumerate(calls):
        if why_not_checked(call) is not None:
            plan.append(None)
            continue
        key = _fingerprint(call)
        if key in seen:
            plan.append(seen[key])
        elif max_checks is not None and len(seen) >= max_checks:
            plan.append(None)
        else:
            seen[key] = k
            plan.append(k)
    return plan


@contextlib.contextmanager
def checking_threads() -> Iterator[None]:
    """One torch thread while the nodes are checked; the caller's count again after.

    A node's check is thousands of calls on one layer's activations, a row or a chunk of rows at
    a time: ops too small for OpenMP's fork and join to pay for, and when the machine's cores are
    busy its threads spin waiting for each other (the 2-layer width-64 block of
    ``bench/audit_scale.py``: 75 s with two threads beside other work, 10 s per layer with one).
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def beyond_limit(max_checks: int) -> str:
    return f"past the limit of {max_checks} distinct call(s) checked (max_checks)"


def _fingerprint(call: CapturedCall) -> tuple[Any, ...]:
    """The node and its arguments, tensors by their bytes: equal only for calls a check cannot
    tell apart (an object gradviz cannot see into counts by its identity, never by its repr)."""
    return (call.target, *(argument_key(a) for a in call.args))


_PLAIN = (bool, int, float, complex, str, bytes, type(None), torch.dtype, torch.device)


def argument_key(value: Any, *, by_identity: bool = True) -> Any:
    """A hashable stand-in for one argument, tensors by their bytes; an object gradviz cannot see
    into counts by its identity (``by_identity``), else by its type only."""
    if isinstance(value, torch.Tensor) and value.layout == torch.strided and not (value.is_meta or value.is_quantized):
        data = value.detach().reshape(-1).contiguous().cpu()
        digest = hashlib.sha256(data.view(torch.uint8).numpy().tobytes()).hexdigest() if data.numel() else ""
        return ("tensor", tuple(value.shape), value.stride(), str(value.dtype), str(value.device), value.requires_grad, digest)
    if isinstance(value, list | tuple):
        return (type(value).__qualname__, tuple(argument_key(v, by_identity=by_identity) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((argument_key(k), argument_key(v, by_identity=by_identity)) for k, v in value.items()))
    if type(value) in _PLAIN:
        return (type(value).__qualname__, repr(value))
    return ("object", id(value) if by_identity else type(value).__qualname__)


def inputs_digest(args: tuple) -> str:
    """A digest of a call's arguments: tensors by dtype, shape, strides, device, requires_grad
    and bytes; other values by their repr, objects gradviz cannot see into by their type."""
    key = tuple(argument_key(a, by_identity=False) for a in args)
    return hashlib.sha256(repr(key).encode()).hexdigest()


def audit_callable(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    settings: CheckSettings,
    *,
    name: str,
    max_checks: int | None = None,
    progress: ProgressFn | None = None,
    cancel: CancelFn | None = None,
    graphs: bool = False,
    maps: str = "eager",
) -> AuditResult:
    """Capture one forward of ``fn(*args)`` and check every custom call it made.

    Args:
        fn: the model (an ``nn.Module``) or any callable.
        args: its inputs.
        settings: the check's settings (tolerances, gradcheck's modes); each call is checked on
            the device and in the dtype it was made in.
        name: what the user calls the model.
        max_checks: check at most this many distinct calls (None: all); a call with exactly
            the inputs of an earlier one shares its check.
        progress: called with (nodes done, nodes) after each node.
        cancel: True to stop between nodes.
        graphs: also each checked node's autograd graph at its captured inputs (the window's
            graph panel and step-through of a node) and the digest of those inputs (its sweep
            and regions find the call again by it); never part of a verdict.
        maps: when each node's Jacobian maps are built, as for ``check_function``: with fast
            mode, "failing" builds them for failing nodes only (the verdict first elsewhere).

    ``settings.max_jacobian_bytes`` (else the default limit) bounds the whole audit: the
    captured copies and every kept node's Jacobians (``core/audit_memory.py``).

    Returns:
        One node per call, in call order.

    Raises:
        UserCodeError: the forward raised. NoCustomNode: it called no custom node.
        SizeLimitError: even the large-Jacobian path of some node cannot fit in the limit.
    """
    start = time.perf_counter()
    capture = capture_or_refuse(fn, args, name)
    plan = plan_checks(capture.calls, max_checks)
    limit = audit_limit(settings.max_jacobian_bytes)
    budget = MemoryBudget(limit, refuse_too_large(capture.calls, plan, limit, name))
    nodes: list[AuditNode] = []
    with checking_threads():
        for k, call in enumerate(capture.calls):
            if cancel is not None and cancel():
                raise Cancelled("The audit was cancelled.")
            node, earlier = node_of(call), plan[k]
            if earlier == k:
                check_node(node, call, dataclasses.replace(settings, max_jacobian_bytes=budget.node_limit()), maps=maps)
                budget.keep(node.result)
                if graphs and node.result is not None:
                    graph_node(node, call, settings.seed)
                    node.inputs = inputs_digest(call.args)
            elif earlier is not None:
                share(node, nodes[earlier], earlier)
            elif node.reason is None and max_checks is not None:
                node.reason = beyond_limit(max_checks)
            nodes.append(node)
            if progress is not None:
                progress(k + 1, len(capture.calls))
    result = AuditResult(name, nodes, notes_of(plan), time.perf_counter() - start)
    refuse_unchecked(result)
    return result


def share(node: AuditNode, earlier: AuditNode, index: int) -> None:
    """``node`` had exactly ``earlier``'s inputs: the same check, said so."""
    node.result, node.error, node.reason, node.same_as = earlier.result, earlier.error, earlier.reason, index + 1
    node.graph, node.graph_error, node.inputs = earlier.graph, earlier.graph_error, earlier.inputs


def graph_node(node: AuditNode, call: CapturedCall, seed: int) -> None:
    """The node's graph at its captured inputs, as ``gradviz graph`` draws a Function's; a
    failure here is said on the node and never changes its check."""
    from gradviz.core.graph.extract import extract_graph, graph_from_outputs

    names = argument_names(checkable_of(call), len(call.args))
    try:
        if isinstance(call.target, type):
            node.graph = extract_graph(call.target, call.args, names, seed=seed).to_dict()
            return
        with torch.enable_grad():
            copies = [a.detach().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a for a in call.args]
            outputs = call.target(*copies)
            node.graph = graph_from_outputs(outputs, copies, names, seed=seed, retain_graph=False).to_dict()
    except GradvizError as exc:
        node.graph_error = exc.message
    except Exception as exc:  # the node's own code: its check already says what it does wrong
        node.graph_error = f"The graph of {node.function} could not be drawn: {type(exc).__name__}: {exc}"


def node_inputs(call: CapturedCall) -> PreparedInputs:
    """The call's captured arguments as a check takes them, named by its forward's parameters."""
    return PreparedInputs(call.args, argument_names(checkable_of(call), len(call.args)))  # type: ignore[arg-type]


def node_settings(call: CapturedCall, settings: CheckSettings) -> CheckSettings:
    """The audit's settings on the device and in the dtype the call was made in."""
    first = call.args[call.differentiated[0]]
    dtype = str(first.dtype).removeprefix("torch.")
    return dataclasses.replace(settings, device=str(first.device), dtype=dtype if dtype in DTYPES else settings.dtype)


def check_node(node: AuditNode, call: CapturedCall, settings: CheckSettings, *, maps: str = "eager") -> None:
    """Fill in the node's check; an error in its own code makes it a failing node, as for gradcheck."""
    try:
        node.result = check_function(
            checkable_of(call), node_inputs(call), node_settings(call, settings), name=call.function, maps=maps
        )
    except NothingToCheck as exc:
        node.reason = exc.message
    except UserCodeError as exc:
        node.error, node.reason = True, exc.message

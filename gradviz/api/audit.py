"""``gradviz.audit``: which custom node of a model's backward is wrong, at the inputs it really sees.

One forward of the model on the caller's inputs records every call of a custom Function or op
(``gradviz.core.audit_capture``); each call is then checked by ``gradviz.check`` itself, at the
captured arguments, with respect to the tensors autograd differentiated there. So a node's
``Report`` is a check's Report, with its reproducer, files and notebook view, and its verdict
is ``torch.autograd.gradcheck``'s on that Function at those inputs with the same options.
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from gradviz.api.arguments import rng_untouched, users_error
from gradviz.api.check import check
from gradviz.api.report import GradientMismatch, Report
from gradviz.core.audit import (
    GradcheckOp,
    beyond_limit,
    capture_or_refuse,
    checking_threads,
    node_of,
    notes_of,
    plan_checks,
    refuse_unchecked,
    share,
)
from gradviz.core.audit_capture import CapturedCall
from gradviz.core.audit_memory import MemoryBudget, audit_limit, refuse_too_large
from gradviz.core.callables import callable_name
from gradviz.schema.atomic_write import write_atomically
from gradviz.schema.audit import AuditNode, AuditResult, format_audit_table
from gradviz.schema.errors import UserCodeError
from gradviz.schema.json_schemas import stamp
from gradviz.schema.settings import memory_limit_bytes
from gradviz.schema.strict_json import dumps


class NodeReport:
    """One custom node call of the model: where it is and its check.

    Attributes:
        node: the schema's ``AuditNode`` (what ``gradviz audit --json`` writes for it).
        report: the node's :class:`gradviz.Report`, a check's at the captured inputs; None when
            it was not checked (``reason`` says why) or its own code raised (``reason`` is the
            error). Calls with identical inputs share one report.
        function, module, call, calls, reason, status, passed: read from ``node``.
    """

    def __init__(self, node: AuditNode, report: Report | None) -> None:
        self.node = node
        self.report = report

    function = property(lambda self: self.node.function, doc="The Function's __name__, or ns::name for an op.")
    module = property(lambda self: self.node.module, doc='Dotted path of the module that called it ("": the model).')
    call = property(lambda self: self.node.call, doc="1-based, among the calls of the same Function.")
    calls = property(lambda self: self.node.calls, doc="How many calls of it the forward made.")
    reason = property(lambda self: self.node.reason, doc="Why it was not checked (or the error its code raised).")
    status = property(lambda self: self.node.status, doc='"passed", "failed", "error" or "not checked".')

    @property
    def passed(self) -> bool:
        """The node was checked and passes gradcheck at its captured inputs."""
        return self.node.status == "passed"

    def reproducer(self) -> str:
        """A script that rebuilds this node's captured inputs and runs gradcheck on it alone.

        Raises:
            ValueError: the node was not checked, or its inputs cannot be written into a script.
        """
        if self.report is None:
            raise ValueError(f"{self.node.title} was not checked ({self.reason}): there is nothing to reproduce.")
        return self.report.reproducer()

    def __repr__(self) -> str:
        return f"<gradviz.NodeReport {self.node.summary()}>"


class AuditReport:
    """Every custom node call of one forward with its check, in call order; made by
    :func:`gradviz.audit`. ``bool(report)`` is ``report.passed``.

    Attributes:
        result: the schema's ``AuditResult`` (the model's name, the nodes, notes, seconds).
        nodes: a :class:`NodeReport` per call, in call order.
        passed: every checked node passes gradcheck at its captured inputs.
        failing: the nodes that fail (or whose own code raised), in call order.
    """

    def __init__(self, result: AuditResult, nodes: list[NodeReport]) -> None:
        self.result = result
        self.nodes = nodes

    @property
    def passed(self) -> bool:
        """Every checked node passes gradcheck at its captured inputs."""
        return self.result.passed

    def __bool__(self) -> bool:
        return self.passed

    @property
    def failing(self) -> list[NodeReport]:
        """The nodes whose check fails (or whose own code raised), in call order."""
        return [n for n in self.nodes if n.node.failed]

    def message(self) -> str:
        """The verdict, and every failing node with its worst cells."""
        return self.result.message() if not self.passed else self.result.verdict_line()

    def to_dict(self) -> dict[str, Any]:
        """The summary document and one document per node (``gradviz audit --json``'s)."""
        return stamp({**self.result.summary_dict(), "nodes": [n.to_dict() for n in self.result.nodes]})

    def __str__(self) -> str:
        return format_audit_table(self.result)

    def __repr__(self) -> str:
        return f"<gradviz.AuditReport {self.result.verdict_line()}>"

    def save(self, directory: str | Path, *, overwrite: bool = False) -> list[Path]:
        """Write audit.json (the summary and every node), and for each failing node a folder
        ``NNN_module_Function_callK`` with its report's files and its reproducer script.

        Args:
            directory: the folder, made if missing.
            overwrite: replace files of the same names already there.

        Returns:
            The paths written, audit.json first.

        Raises:
            FileExistsError: without ``overwrite``, audit.json or a node's files are already
                there.
        """
        folder = Path(directory)
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / "audit.json"
        if target.exists() and not overwrite:
            raise FileExistsError(f"{target} exists; nothing was written. Pass overwrite=True to replace it.")
        written = []
        for k, node in enumerate(self.nodes):
            if node.report is not None and not node.passed:
                written += node.report.save(folder / node_folder(k, node.node), overwrite=overwrite)
        write_atomically(target, dumps(self.to_dict(), indent=1) + "\n")
        return [target, *written]

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{html.escape(n.node.title)}</td><td>{html.escape(n.status)}</td>"
            f"<td>{html.escape(n.node.summary().partition(': ')[2])}</td></tr>"
            for n in sorted(self.nodes, key=lambda n: not n.node.failed)
        )
        return (
            f"<div><p><b>{html.escape(self.result.verdict_line())}</b></p><table>"
            f"<tr><th>node</th><th>status</th><th>detail</th></tr>{rows}</table>"
            + "".join(f"<p>{html.escape(note)}</p>" for note in self.result.notes)
            + "</div>"
        )


class ModelGradientMismatch(GradientMismatch):
    """Some custom node of the model fails its check; the message names every failing node with
    its worst cells, and ``exc.report`` is the :class:`AuditReport` (the pytest plugin's
    ``--gradviz-artifacts`` saves it, a reproducer per failing node)."""

    def __init__(self, report: AuditReport) -> None:
        AssertionError.__init__(self, report.message())
        self.report = report  # type: ignore[assignment]


ModelGradientMismatch.__module__ = "gradviz"


def node_folder(index: int, node: AuditNode) -> str:
    """A folder name per node: its place in call order, module, Function and call number."""
    raw = f"{index + 1:03d}_{node.module or 'model'}_{node.function}_call{node.call}"
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in raw)


def audit(fn: Callable[..., Any], *inputs: Any, max_checks: int | None = None, **check_options: Any) -> AuditReport:
    """Check every custom node of one forward of ``fn(*inputs)`` at the inputs it really sees.

    Args:
        fn: the model (an ``nn.Module``) or any callable built on custom Functions and ops.
        *inputs: its arguments, as the model takes them; they and the model's parameters,
            buffers, train/eval flags and random generators come back unchanged.
        max_checks: check at most this many distinct calls (None: every one); a call with
            exactly the inputs of an earlier call of the same node shares its check.
        **check_options: ``gradviz.check``'s keywords (eps, atol, rtol, fast_mode, ...) but
            ``raise_exception``, applied to each node; ``max_memory_mb`` bounds the whole audit
            (the captured arguments and every node's Jacobians kept in its report).

    Returns:
        An :class:`AuditReport`: ``passed`` (also its truth value), ``nodes`` in call order,
        each with ``function``, ``module``, ``call`` and its ``report`` (None with ``reason``
        for a call not checked: no tensor of it required grad).

    Raises:
        gradviz.UserCodeError: the model's forward raised (a node's own code raising while it
            is checked is that node's error, not this).
        gradviz.GradvizError: the forward called no custom Function or op, or none of its calls
            could be checked (no verdict); checking one would pass the memory limit even
            without holding its Jacobians (``SizeLimitError``); or bad check settings (``SettingsError``).
        TypeError: ``raise_exception`` or a keyword ``gradviz.check`` does not take.
        ValueError: ``max_checks`` is not a positive integer or None.
    """
    __tracebackhide__ = True
    if "raise_exception" in check_options:
        raise TypeError("audit() takes no raise_exception: it returns the report (assert_model_gradients raises).")
    name = type(fn).__name__ if isinstance(fn, torch.nn.Module) else callable_name(fn)
    start = time.perf_counter()
    try:
        with rng_untouched(inputs, None):
            capture = capture_or_refuse(fn, inputs, name)
    except UserCodeError as exc:
        raise users_error(exc) from exc.__cause__ or exc.__context__
    if max_checks is not None and (type(max_checks) is not int or max_checks < 1):
        raise ValueError(f"max_checks must be a positive integer or None, not {max_checks!r}.")
    plan = plan_checks(capture.calls, max_checks)
    megabytes = check_options.get("max_memory_mb")
    limit = audit_limit(memory_limit_bytes(megabytes) if megabytes is not None else None)
    budget = MemoryBudget(limit, refuse_too_large(capture.calls, plan, limit, name))
    nodes: list[NodeReport] = []
    with checking_threads():
        for k, call in enumerate(capture.calls):
            earlier = plan[k]
            if earlier == k:
                nodes.append(_checked(call, {**check_options, "max_memory_mb": budget.node_limit() / 2**20}))
                budget.keep(nodes[-1].node.result)
            elif earlier is not None:
                node = node_of(call)
                share(node, nodes[earlier].node, earlier)
                nodes.append(NodeReport(node, nodes[earlier].report))
            else:
                node = node_of(call)
                node.reason = node.reason or (beyond_limit(max_checks) if max_checks is not None else None)
                nodes.append(NodeReport(node, None))
    result = AuditResult(name, [n.node for n in nodes], notes_of(plan), time.perf_counter() - start)
    refuse_unchecked(result)
    return AuditReport(result, nodes)


def _checked(call: CapturedCall, options: dict[str, Any]) -> NodeReport:
    """The node and, unless it is not checked, ``gradviz.check``'s report at its captured arguments."""
    node = node_of(call)
    if node.reason is not None:
        return NodeReport(node, None)
    op = not isinstance(call.target, type)
    fn: Any = GradcheckOp(call.target) if op else call.target
    try:
        report = check(fn, call.args, raise_exception=False, **options)
    except UserCodeError as exc:
        node.error, node.reason = True, exc.message
        return NodeReport(node, None)
    except ValueError as exc:  # refused as gradcheck refuses it
        node.reason = str(exc)
        return NodeReport(node, None)
    if op:
        report.fn = call.target  # the reproducer imports the op itself and calls gradcheck on it
    node.result = report.result
    return NodeReport(node, report)

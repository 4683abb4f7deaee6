"""One node of a model audit, found again in a run process of its own.

The Why? sweep of a node and the regions of a node's large block need that node's Function at
that node's inputs, not the editor's code. The inputs are the model's own activations, so the
node is found as the audit found it: the model built from its target with the audit's seed, one
forward captured, the node's call taken by its place. Its arguments must have the digest the
audit recorded; a forward that gives other ones (noise from the clock or the OS, a file it
reads) is refused rather than explained at inputs its check never saw.
"""

from __future__ import annotations

from dataclasses import dataclass

from gradviz.core.audit import (
    capture_or_refuse,
    checkable_of,
    inputs_digest,
    node_inputs,
    node_settings,
    why_not_checked,
)
from gradviz.core.audit_target import load_model_target
from gradviz.core.callables import Checkable
from gradviz.core.check import NothingToCheck
from gradviz.core.inputs import PreparedInputs
from gradviz.schema.errors import ErrorKind, GradvizError
from gradviz.schema.requests import CodeSource
from gradviz.schema.settings import CheckSettings


class NodeNotFound(GradvizError):
    kind = ErrorKind.NOTHING_TO_CHECK


@dataclass
class FoundNode:
    """The node's Function (or op), its captured inputs and the settings its check ran with."""

    fn: Checkable
    inputs: PreparedInputs
    settings: CheckSettings
    name: str
    filename: str


def find_node(code: CodeSource, settings: CheckSettings) -> FoundNode:
    """The node ``code.node`` of the model ``code`` names, at its captured inputs.

    Args:
        code: the model's file or target, its name in ``function`` and the node's place and
            digest in ``node``.
        settings: the audit's settings (the node's own device and dtype are taken from its call).

    Returns:
        What a sweep or a region of the node runs.

    Raises:
        NodeNotFound: the forward made fewer calls, or gave this one other arguments.
        NothingToCheck: the call is not one a check can run (the audit listed it as not checked).
        UserCodeError, TargetError: as for the audit itself.
    """
    ref = code.node
    if ref is None:
        raise ValueError("find_node needs a CodeSource with a node")
    built = load_model_target(
        path=code.path, target=code.target, name=code.function, inputs_path=code.inputs_path, settings=settings
    )
    calls = capture_or_refuse(built.model, built.inputs, built.name).calls
    if ref.call > len(calls):
        raise NodeNotFound(
            f"{built.name}'s forward made {len(calls)} custom call(s) this time, not the {ref.call} its audit counted: "
            "audit the model again."
        )
    call = calls[ref.call - 1]
    if inputs_digest(call.args) != ref.inputs:
        raise NodeNotFound(
            f"{call.function} (call {call.call} of {call.calls}) got other inputs this time than in the audit "
            f"(does {built.name}'s forward read the clock, a file or randomness other than torch's seeded "
            "generator?): make its forward deterministic and audit it again."
        )
    reason = why_not_checked(call)
    if reason is not None:
        raise NothingToCheck(f"{call.function} (call {call.call} of {call.calls}) is not checked: {reason}.")
    return FoundNode(checkable_of(call), node_inputs(call), node_settings(call, settings), call.function, built.filename)

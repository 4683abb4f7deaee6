"""What the graph panel writes: node labels (full and short), a node's hover text, the summary
line, and a node's story in the recorded backward (the gradient in, the gradients out, what it
keeps), as plain functions of the typed graph (``gradviz.schema.graph.GraphModel``).

Qt-free, so the notebook, the CLI and tests can read the same words the window shows.
"""

from __future__ import annotations

import re

from gradviz.schema.graph import GradSummary, GraphModel, Node
from gradviz.schema.units import counted, format_bytes

KINDS = {  # kind: (symbol, size in px, fill, legend words)
    "custom": ("s", 28, "#e8710a", "your Function"),
    "builtin": ("o", 16, "#4a86c8", "built-in op"),
    "leaf": ("d", 22, "#2e9e44", "input (leaf)"),
}
ERROR_COLOUR = "#b00020"
CTX_MARK = " ⚠"
CTX_TIP = (
    "Kept as a plain ctx attribute (ctx.name = tensor), not with save_for_backward: it bypasses "
    "saved_tensors_hooks (so memory tools and activation offloading never see it) and the version "
    "check (an in-place change after forward goes unnoticed and backward silently uses the new values)."
)
FLAG_NOTES = {
    "once_differentiable": "backward itself cannot be differentiated (no double backward)",
    "mark_dirty": "forward modifies an input in place",
    "mark_non_differentiable": "some outputs get no gradient",
    "materialize_grads_off": "set_materialize_grads(False): backward may receive None gradients",
}
EMPTY_TEXT = "No graph yet: run a check to see the backward graph."
NOT_RUN = "did not run in the recorded backward"  # a node the recorded backward never reached
_BACKWARD_SUFFIX = re.compile(r"Backward\d*$")


def format_shape(shape: list | tuple | None) -> str:
    if shape is None:
        return "?"
    return "×".join(str(d) for d in shape) or "scalar"


def node_label(node: Node) -> str:
    """The label under a node: PyTorch's node name, or for a leaf the argument it belongs to."""
    if node.kind == "leaf":
        name = node.input_name or "leaf"
        return f"{name} ({format_shape(node.shape)})" if node.shape is not None else name
    return node.name


def short_label(node: Node) -> str:
    """What a label shrinks to when the full one does not fit: MulBackward0 -> Mul, a leaf's name."""
    if node.kind == "leaf":
        return node.input_name or "leaf"
    if node.kind == "custom" and node.class_name:
        return node.class_name
    return _BACKWARD_SUFFIX.sub("", node.name) or node.name


_WORD_START = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z0-9])(?=[A-Z][a-z])")  # Fused|Conv|BN2D|Function


def wrapped_label(node: Node) -> str:
    """The last text a label falls back to: a custom node's Function name on two lines, split
    between two of its words nearest the middle (``FusedConv`` / ``BN2DFunction``). Your
    Function's name is the widest label of a small graph, in the largest, bold font: on one line
    it outgrew a narrow view (the details beside it take most of a small panel), and it was the
    only node left unlabelled there, however far one zoomed in. Other nodes: ``short_label``."""
    short = short_label(node)
    if node.kind != "custom":
        return short
    cuts = [m.start() for m in _WORD_START.finditer(short)]
    if not cuts:
        return short
    cut = min(cuts, key=lambda k: (abs(2 * k - len(short)), k))
    return f"{short[:cut]}\n{short[cut:]}"


def _grad_text(g: GradSummary | None) -> str:
    if g is None:
        return "None"
    return f"{format_shape(g.shape)} (norm {g.norm:.4g})"


VALUES_SHOWN = 6


def values_text(g: GradSummary | None) -> str:
    """The first few numbers of a small gradient: ``[0.12, -1.3, 0.4, …]`` ('' when not recorded)."""
    values = [] if g is None or g.values is None else g.values.ravel().tolist()
    if not values:
        return ""
    shown = ", ".join(f"{v + 0.0:.3g}" for v in values[:VALUES_SHOWN])
    return f"[{shown}{', …' if len(values) > VALUES_SHOWN else ''}]"


def summary_text(graph: GraphModel) -> str:
    """The line above the graph: how many nodes of each kind, what backward keeps."""
    counts = {kind: sum(n.kind == kind for n in graph.nodes) for kind in KINDS}
    ctx = graph.saved_bytes(["ctx_attribute"])
    text = (
        f"{counted(len(graph.nodes), 'node')} ({counted(counts['custom'], 'custom Function')}, "
        f"{counts['builtin']:,} built-in, {counted(counts['leaf'], 'leaf', 'leaves')}) · saved for backward: "
        f"{format_bytes(graph.saved_bytes_unique)}, each storage once"
    )
    if any(s.via == "ctx_attribute" for n in graph.nodes for s in n.saved):
        text += f" ({format_bytes(ctx)} as ctx attributes{CTX_MARK})"
    if graph.backward_error:
        text += f" · the recorded backward stopped: {graph.backward_error.splitlines()[0]}"
    return text


def target_name(graph: GraphModel, node_id: int, slot: int) -> str:
    """Where slot ``slot`` of a node's gradients goes: the next node, named for a reader."""
    by_id = {n.id: n for n in graph.nodes}
    for (a, b), s in zip(graph.edges.tolist(), graph.edge_slots.tolist()):
        if a == node_id and s == slot and b in by_id:
            return short_label(by_id[b])
    return f"slot {slot}"


def info_html(graph: GraphModel, node: Node) -> str:
    """What the node is, what flowed through it in the recorded backward, what it keeps."""
    title = f"<b>{node.name}</b>"
    if node.kind == "custom":
        title += f" — your Function <b>{node.class_name or '?'}</b>"
    elif node.kind == "leaf":
        which = f"argument <b>{node.input_name}</b>" if node.input_name else "a leaf that is not an argument"
        title += f" — accumulates the gradient of {which} ({format_shape(node.shape)})"
    lines = [title]
    for flag in node.flags:
        note = FLAG_NOTES.get(flag, "")
        lines.append(f"flag <b>{flag}</b>{': ' + note if note else ''}")
    flow = graph.flows.get(node.id)
    if flow is not None:
        lines.append(f"ran at backward step <b>{flow.step + 1}</b> of {len(graph.backward_order)}")
        grads_in = "; ".join(f"{_grad_text(g)} {values_text(g)}".strip() for g in flow.grad_outputs) or "none"
        lines.append(f"gradient in: {grads_in}")
        if flow.grad_inputs:
            outs = "; ".join(
                f"→ {target_name(graph, node.id, k)}: {_grad_text(g)} {values_text(g)}".strip()
                for k, g in enumerate(flow.grad_inputs)
            )
            lines.append(f"gradients out: {outs}")
        if node.kind == "custom":
            lines.append(
                "<i>your backward: given grad_output g it returns gᵀJ for each input. "
                "With g one-hot at output element r, that is row r of the Jacobian.</i>"
            )
    elif graph.backward_error:
        lines.append(f'<span style="color:{ERROR_COLOUR}">not reached: the recorded backward stopped</span>')
    else:
        lines.append(NOT_RUN)
    if node.saved:
        ctx = sum(s.via == "ctx_attribute" for s in node.saved)
        extra = f", {ctx} as ctx attributes{CTX_MARK} (hover the rows)" if ctx else ""
        lines.append(f"keeps {counted(len(node.saved), 'tensor')}, {format_bytes(node.saved_bytes)}{extra}:")
    elif node.kind == "leaf":
        lines.append("keeps nothing for backward: it adds the gradient into the tensor's .grad")
    else:
        lines.append("keeps no tensors for backward")
    return "<br>".join(lines)


def tip_text(node: Node) -> str:
    """Hover text of a node."""
    lines = [node_label(node), KINDS.get(node.kind, KINDS["builtin"])[3]]
    if node.saved:
        lines.append(f"keeps {counted(len(node.saved), 'tensor')}, {format_bytes(node.saved_bytes)}")
    lines.append("click for details")
    return "\n".join(lines)

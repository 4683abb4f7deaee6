"""What the graph panel writes: node labels (full and short), a node's hover text, the summary
line, and a node's story in the recorded backward (the gradient in, the gradients out, what it
keeps), as plain functions of the graph dict (``GraphModel.to_dict()``).

Qt-free, so the notebook, the CLI and tests can read the same words the window shows.
"""

from __future__ import annotations

import re

from gradviz.schema.strict_json import decode
from gradviz.schema.units import format_bytes

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
_BACKWARD_SUFFIX = re.compile(r"Backward\d*$")


def format_shape(shape: list | tuple | None) -> str:
    if shape is None:
        return "?"
    return "×".join(str(d) for d in shape) or "scalar"


def node_label(node: dict) -> str:
    """The label under a node: PyTorch's node name, or for a leaf the argument it belongs to."""
    if node["kind"] == "leaf":
        name = node.get("input_name") or "leaf"
        return f"{name} ({format_shape(node.get('shape'))})" if node.get("shape") is not None else name
    return node["name"]


def short_label(node: dict) -> str:
    """What a label shrinks to when the full one does not fit: MulBackward0 -> Mul, a leaf's name."""
    if node["kind"] == "leaf":
        return node.get("input_name") or "leaf"
    if node["kind"] == "custom" and node.get("class"):
        return node["class"]
    return _BACKWARD_SUFFIX.sub("", node["name"]) or node["name"]


def _grad_text(g: dict | None) -> str:
    if g is None:
        return "None"
    norm = f"{decode(g['norm']):.4g}"
    return f"{format_shape(g.get('shape'))} (norm {norm})"


VALUES_SHOWN = 6


def values_text(g: dict | None) -> str:
    """The first few numbers of a small gradient: ``[0.12, -1.3, 0.4, …]`` ('' when not recorded)."""
    values = (g or {}).get("values")
    if not values:
        return ""
    shown = ", ".join(f"{decode(v) + 0.0:.3g}" for v in values[:VALUES_SHOWN])
    return f"[{shown}{', …' if len(values) > VALUES_SHOWN else ''}]"


def summary_text(graph: dict) -> str:
    """The line above the graph: how many nodes of each kind, what backward keeps."""
    nodes = graph.get("nodes") or []
    counts = {kind: sum(n["kind"] == kind for n in nodes) for kind in KINDS}
    ctx = {
        s["storage_id"]: s["bytes"]
        for n in nodes
        for s in n.get("saved") or []
        if s["via"] == "ctx_attribute"
    }
    text = (
        f"{len(nodes)} nodes ({counts['custom']} custom Function, {counts['builtin']} built-in, "
        f"{counts['leaf']} leaves) · saved for backward: {format_bytes(graph.get('saved_bytes_unique', 0))}, "
        "each storage once"
    )
    if ctx:
        text += f" ({format_bytes(sum(ctx.values()))} as ctx attributes{CTX_MARK})"
    if graph.get("backward_error"):
        text += f" · the recorded backward stopped: {graph['backward_error'].splitlines()[0]}"
    return text

def target_name(graph: dict, node_id: int, slot: int) -> str:
    """Where slot ``slot`` of a node's gradients goes: the next node, named for a reader."""
    nodes = graph.get("nodes") or []
    index = {n["id"]: k for k, n in enumerate(nodes)}
    edges = graph.get("edges") or []
    slots = graph.get("edge_slots") or []
    for (a, b), s in zip(edges, slots):
        if a == node_id and s == slot and b in index:
            return short_label(nodes[index[b]])
    return f"slot {slot}"

def info_html(graph: dict, node: dict) -> str:
    """What the node is, what flowed through it in the recorded backward, what it keeps."""
    flows = {f["node"]: f for f in graph.get("flows") or []}
    title = f"<b>{node['name']}</b>"
    if node["kind"] == "custom":
        title += f" — your Function <b>{node.get('class') or '?'}</b>"
    elif node["kind"] == "leaf":
        name = node.get("input_name")
        which = f"argument <b>{name}</b>" if name else "a leaf that is not an argument"
        title += f" — accumulates the gradient of {which} ({format_shape(node.get('shape'))})"
    lines = [title]
    for flag in node.get("flags") or []:
        note = FLAG_NOTES.get(flag, "")
        lines.append(f"flag <b>{flag}</b>{': ' + note if note else ''}")
    flow = flows.get(node["id"])
    order = graph.get("backward_order") or []
    if flow is not None:
        lines.append(f"ran at backward step <b>{flow['step'] + 1}</b> of {len(order)}")
        arriving = flow.get("grad_outputs") or []
        grads_in = "; ".join(
            f"{_grad_text(g)} {values_text(g)}".strip() for g in arriving
        ) or "none"
        lines.append(f"gradient in: {grads_in}")
        if flow.get("grad_inputs"):
            outs = "; ".join(
                f"→ {target_name(graph, node['id'], k)}: {_grad_text(g)} {values_text(g)}".strip()
                for k, g in enumerate(flow["grad_inputs"])
            )
            lines.append(f"gradients out: {outs}")
        if node["kind"] == "custom":
            lines.append(
                "<i>your backward: given grad_output g it returns gᵀJ for each input. "
                "With g one-hot at output element r, that is row r of the Jacobian.</i>"
            )
    elif graph.get("backward_error"):
        lines.append(
            f'<span style="color:{ERROR_COLOUR}">not reached: the recorded backward stopped</span>'
        )
    else:
        lines.append("did not run in the recorded backward")
    saved = node.get("saved") or []
    if saved:
        ctx = sum(s["via"] == "ctx_attribute" for s in saved)
        extra = f", {ctx} as ctx attributes{CTX_MARK} (hover the rows)" if ctx else ""
        lines.append(f"keeps {len(saved)} tensor(s), {format_bytes(node.get('saved_bytes', 0))}{extra}:")
    elif node["kind"] == "leaf":
        lines.append("keeps nothing for backward: it adds the gradient into the tensor's .grad")
    else:
        lines.append("keeps no tensors for backward")
    return "<br>".join(lines)

def tip_text(node: dict) -> str:
    """Hover text of a node."""
    lines = [node_label(node), KINDS.get(node["kind"], KINDS["builtin"])[3]]
    if node.get("saved"):
        lines.append(f"keeps {len(node['saved'])} tensor(s), {format_bytes(node.get('saved_bytes', 0))}")
    lines.append("click for details")
    return "\n".join(lines)

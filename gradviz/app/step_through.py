"""The backward step-through's mark on the Jacobians: at your Function's node, the row of the
analytic Jacobian that one backward call with a one-hot grad_output returns."""

from __future__ import annotations

from typing import Any

from gradviz.schema.results import CheckResult


def mark_backward_row(graph: Any, jacobians: Any, result: CheckResult | None, node_id: int) -> None:
    """Mark on ``jacobians``' analytic map the row one backward call fills at ``node_id``; clear
    the mark elsewhere. ``graph``: the graph panel (its nodes and whether a step was taken)."""
    node = graph.node(node_id)
    jacobians.clear_rows()
    if node is None or node.kind != "custom" or result is None or not result.blocks:
        return
    if not graph.stepping():  # a new graph selects your Function by itself: no step yet
        return
    outputs = graph.outputs_entering(node_id)
    block = jacobians.current_block()
    if block is None or (outputs and block.output not in outputs):
        index = next((k for k, b in enumerate(result.blocks) if b.output in outputs), None)
        if index is None:
            return
        jacobians.set_block(index)
        block = jacobians.current_block()
    row = (jacobians.highlighted_cell() or block.worst or (0, 0))[0]
    out_index, _ = block.cell_index(row, 0)
    where = f"out{block.output}[{','.join(map(str, out_index))}]" if out_index else f"out{block.output}"
    jacobians.mark_rows(
        row,
        row,
        f"One backward call with grad_output one-hot at {where} returns row {row} of J (marked): "
        f"∂{where}/∂{result.inputs[block.input].name}. The analytic Jacobian is {block.shape[0]:,} such "
        "calls, one per row.",
    )

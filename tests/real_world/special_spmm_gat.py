"""SpecialSpmmFunction: sparse GAT's ``sparse(indices, values) @ b`` with gradients for the values.

Source: Diego999/pyGAT, layers.py (``SpecialSpmmFunction``, "Special function for only sparse
region backpropataion layer", used by ``SpGraphAttentionLayer``). Pattern: an integer index
tensor, a non-tensor ``shape`` argument, gradients for the edge values picked out of the dense
``grad_output @ b.t()`` by flat index ``row * N + col``, and for the dense ``b``.
Correct (for the square adjacency GAT uses).
"""

import torch


class SpecialSpmmFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, indices, values, shape, b):
        assert not indices.requires_grad
        a = torch.sparse_coo_tensor(indices, values, shape, check_invariants=True)
        ctx.save_for_backward(a, b)
        ctx.N = shape[0]
        return torch.matmul(a, b)

    @staticmethod
    def backward(ctx, grad_output):
        a, b = ctx.saved_tensors
        grad_values = grad_b = None
        if ctx.needs_input_grad[1]:
            grad_a_dense = grad_output.matmul(b.t())
            edge_idx = a._indices()[0, :] * ctx.N + a._indices()[1, :]
            grad_values = grad_a_dense.view(-1)[edge_idx]
        if ctx.needs_input_grad[3]:
            grad_b = a.t().matmul(grad_output)
        return None, grad_values, None, grad_b


def example_inputs(device, dtype):
    indices = torch.tensor([[0, 0, 1, 2, 2, 3], [1, 3, 2, 0, 3, 1]], device=device)
    values = torch.rand(6, device=device, dtype=dtype).add_(0.5).requires_grad_(True)
    b = torch.randn(4, 2, device=device, dtype=dtype, requires_grad=True)
    return (indices, values, torch.Size([4, 4]), b)

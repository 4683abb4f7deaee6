"""An embedding lookup whose backward returns a sparse COO gradient for a dense weight.

Source: gradviz's own red-team testing (this project), after ``nn.Embedding(sparse=True)``.
Pattern: a gradient whose layout differs from its input's. The values are right, but gradcheck
requires each gradient to have its input's layout ("grad is incorrect layout") and fails it.
"""

import torch

BUG = "backward returns a sparse gradient for a strided (dense) weight."


class Embedding(torch.autograd.Function):
    @staticmethod
    def forward(ctx, weight, idx):
        ctx.save_for_backward(idx)
        ctx.n = weight.shape[0]
        return weight[idx]

    @staticmethod
    def backward(ctx, g):
        (idx,) = ctx.saved_tensors
        gw = torch.sparse_coo_tensor(idx.unsqueeze(0), g, (ctx.n, g.shape[1]), check_invariants=True).coalesce()
        return gw, None


def example_inputs(device, dtype):
    weight = torch.randn(5, 3, device=device, dtype=dtype, requires_grad=True)
    return (weight, torch.tensor([0, 2, 2, 4], device=device))

"""KMaxPool: k-max pooling that returns values and int64 indices, without marking the indices.

Source: the k-max pooling module of PyTorch text-CNN repositories (DCNN, Kalchbrenner et al.:
``x.topk(k)`` indices re-sorted into input order, then ``gather``), wrapped into a Function that
also returns its indices, as max-pool-with-indices Functions do. Pattern: an integer output that
forward does not pass to ``mark_non_differentiable`` (autograd makes it non-differentiable by
itself); backward receives a gradient slot for it and ignores it; scatters into zeros; a
non-tensor ``k``.
Correct.
"""

import torch


class KMaxPool(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        idx = x.topk(k, dim=-1).indices.sort(dim=-1).values
        values = x.gather(-1, idx)
        ctx.save_for_backward(idx)
        ctx.x_shape = x.shape
        return values, idx

    @staticmethod
    def backward(ctx, grad_values, _grad_idx):
        (idx,) = ctx.saved_tensors
        grad = grad_values.new_zeros(ctx.x_shape)
        return grad.scatter(-1, idx, grad_values), None


def example_inputs(device, dtype):
    x = torch.tensor([[0.3, 1.9, -0.4, 1.1, 0.8], [2.2, -1.0, 0.6, -0.2, 1.5]], device=device, dtype=dtype)
    return (x.requires_grad_(True), 3)

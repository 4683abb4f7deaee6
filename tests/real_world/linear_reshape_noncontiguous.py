"""Linear with gradient accumulation, flattening with ``.reshape`` (the fix of apex #1573).

Source: NVIDIA/apex, apex/transformer/tensor_parallel/layers.py
(``LinearWithGradAccumulationAndAsyncCommunication``) with the change of pull request #1573
(``.view`` replaced by ``.reshape``). Pattern: a transposed, non-contiguous 3-D input that
requires grad, and a weight.
Correct.
"""

import torch


class LinearWithGradAccumulation(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, weight):
        ctx.save_for_backward(input, weight)
        return torch.matmul(input, weight.t())

    @staticmethod
    def backward(ctx, grad_output):
        total_input, weight = ctx.saved_tensors
        grad_input = grad_output.matmul(weight)
        grad_output = grad_output.reshape(-1, grad_output.shape[2])
        total_input = total_input.reshape(-1, total_input.shape[2])
        grad_weight = grad_output.t().matmul(total_input)
        return grad_input, grad_weight


def example_inputs(device, dtype):
    batch_first = torch.randn(2, 3, 4, device=device, dtype=dtype)
    seq_first = batch_first.transpose(0, 1).requires_grad_(True)  # [seq, batch, hidden], not contiguous
    weight = torch.randn(5, 4, device=device, dtype=dtype, requires_grad=True)
    return (seq_first, weight)

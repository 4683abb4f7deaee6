"""Linear with gradient accumulation: backward flattens with ``.view`` and breaks on strides.

Source: NVIDIA/apex, apex/transformer/tensor_parallel/layers.py
(``LinearWithGradAccumulationAndAsyncCommunication``; pull request #1573 "Support grad_output
with noncontiguous strides": ``grad_output.view(...)`` raised "view size is not compatible with
input tensor's size and stride"). The saved ``total_input`` is flattened the same way. Pattern:
a 3-D ``[seq, batch, hidden]`` input that is a transposed (non-contiguous) tensor, as Megatron
layouts produce.
Buggy: backward raises RuntimeError for a non-contiguous input.
"""

import torch

BUG = "backward flattens the saved input with .view, which raises for a non-contiguous (transposed) input."


class LinearWithGradAccumulation(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, weight):
        ctx.save_for_backward(input, weight)
        return torch.matmul(input, weight.t())

    @staticmethod
    def backward(ctx, grad_output):
        total_input, weight = ctx.saved_tensors
        grad_input = grad_output.matmul(weight)
        grad_output = grad_output.view(grad_output.shape[0] * grad_output.shape[1], grad_output.shape[2])
        total_input = total_input.view(total_input.shape[0] * total_input.shape[1], total_input.shape[2])
        grad_weight = grad_output.t().matmul(total_input)
        return grad_input, grad_weight


def example_inputs(device, dtype):
    batch_first = torch.randn(2, 3, 4, device=device, dtype=dtype)
    seq_first = batch_first.transpose(0, 1).requires_grad_(True)  # [seq, batch, hidden], not contiguous
    weight = torch.randn(5, 4, device=device, dtype=dtype, requires_grad=True)
    return (seq_first, weight)

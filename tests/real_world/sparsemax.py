"""SparsemaxFunction: Euclidean projection onto the simplex, sparse outputs.

Source: deep-spin/entmax, entmax/activations.py (``SparsemaxFunction``). Pattern: forward
sorts, finds the threshold and support, clamps; backward zeroes the gradient off the support and
subtracts its mean on the support (``grad_input[output == 0] = 0``, then ``torch.where``); a
non-tensor ``dim``.
Correct (the example rows keep every entry well inside or well outside the support).
"""

import torch


def _threshold_and_support(input, dim):
    srt, _ = torch.sort(input, descending=True, dim=dim)
    cumsum = srt.cumsum(dim) - 1
    shape = [1] * input.dim()
    shape[dim] = -1
    rhos = torch.arange(1, input.size(dim) + 1, device=input.device, dtype=input.dtype).view(shape)
    support = rhos * srt > cumsum
    support_size = support.sum(dim=dim).unsqueeze(dim)
    tau = cumsum.gather(dim, support_size - 1) / support_size.to(input.dtype)
    return tau, support_size


class SparsemaxFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, dim=0):
        ctx.dim = dim
        max_val, _ = input.max(dim=dim, keepdim=True)
        shifted = input - max_val
        tau, support_size = _threshold_and_support(shifted, dim)
        output = torch.clamp(shifted - tau, min=0)
        ctx.save_for_backward(support_size, output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        support_size, output = ctx.saved_tensors
        dim = ctx.dim
        grad_input = grad_output.clone()
        grad_input[output == 0] = 0
        v_hat = (grad_input.sum(dim=dim) / support_size.to(output.dtype).squeeze(dim)).unsqueeze(dim)
        return torch.where(output != 0, grad_input - v_hat, grad_input), None


def example_inputs(device, dtype):
    x = torch.tensor(
        [[0.9, 0.6, -0.8, 0.1], [1.4, -0.5, 1.1, -1.0], [0.3, 0.5, 0.2, -0.9]], device=device, dtype=dtype
    )
    return (x.requires_grad_(True), 1)

"""SignSTE: binarisation by sign with the hard-tanh straight-through gradient.

Source: naver-ai/burn, openselfsup/models/backbones/binaryfunction.py (``SignSTE``), the
estimator of binarized networks (Courbariaux et al.; itayhubara/BinaryNet.pytorch).
Pattern: forward ``sign(x)``; backward passes grad_output where ``-1 <= x <= 1`` and zero
elsewhere (``torch.where`` with a saved input).
Buggy for gradcheck (by design): sign is flat away from 0, so the numerical Jacobian is zero
while the analytic one is 1 for the inputs inside [-1, 1].
"""

import torch

BUG = "straight-through estimator: sign(x) has zero derivative away from 0, backward passes the gradient where |x| <= 1."


class SignSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return input.sign()

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        inside = input.ge(-1) & input.le(1)
        return torch.where(inside, grad_output, torch.zeros_like(grad_output))


def example_inputs(device, dtype):
    x = torch.tensor([[0.5, -0.3, 1.6], [-2.2, 0.8, -0.7]], device=device, dtype=dtype)
    return (x.requires_grad_(True),)

"""ReverseLayerF: the gradient reversal layer of domain-adversarial training (DANN).

Source: fungtion/DANN, models/functions.py (``ReverseLayerF``, imported by models/model.py).
Pattern: forward ``x.view_as(x)`` (an output that is a view of the input), a non-tensor
``alpha``; backward ``grad_output.neg() * alpha``.
Buggy for gradcheck (by design): the layer is the identity going forward and flips the gradient
going back, so the analytic Jacobian is ``-alpha * I`` and the numerical one ``I``.
"""

import torch

BUG = "gradient reversal: forward is the identity, backward returns -alpha * grad_output."


class ReverseLayerF(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, alpha):
        ctx.alpha = alpha
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.neg() * ctx.alpha, None


def example_inputs(device, dtype):
    return (torch.randn(2, 4, device=device, dtype=dtype, requires_grad=True), 0.3)

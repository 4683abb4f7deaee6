"""qfn: DoReFa-Net's k-bit uniform quantizer, a Function class built inside a factory.

Source: zzzxxxttt/pytorch_DoReFaNet, utils/quant_dorefa.py (``uniform_quantize(k)`` defines
``class qfn(torch.autograd.Function)`` in its body). Pattern: the Function class is created by a
factory and bound to a module-level name that differs from its ``__name__`` (``Quantize4`` vs
``qfn``); forward ``round(x * n) / n``; backward ``grad_output.clone()`` (a round STE).
Buggy for gradcheck (by design): rounding is flat between steps, the backward is the identity.
"""

import torch

FUNCTION = "Quantize4"
BUG = "round straight-through estimator: forward rounds to 4 bits (zero derivative), backward passes the gradient through."


def uniform_quantize(k):
    class qfn(torch.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            n = float(2**k - 1)
            return torch.round(input * n) / n

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output.clone()

    return qfn


Quantize4 = uniform_quantize(4)


def example_inputs(device, dtype):
    # points between quantization steps (multiples of 1/15), away from the rounding edges
    x = torch.tensor([0.05, 0.31, 0.52, 0.77, 0.97], device=device, dtype=dtype)
    return (x.requires_grad_(True),)

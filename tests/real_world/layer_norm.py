"""LayerNorm: the fused layer-norm Function of the Triton tutorial, its maths in torch.

Source: triton-lang/triton, python/tutorials/05-layer-norm.py (``class LayerNorm(torch.autograd.
Function)``, whose forward and backward launch Triton kernels; the kernels' formulas are
re-expressed here in torch). Pattern: three differentiable inputs (x, weight, bias) plus
non-tensor ``normalized_shape`` and ``eps``; backward from the saved mean and reciprocal
standard deviation, with weight and bias gradients summed over rows.
Correct.
"""

import torch


class LayerNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, normalized_shape, weight, bias, eps):
        mean = x.mean(-1, keepdim=True)
        rstd = ((x - mean).pow(2).mean(-1, keepdim=True) + eps).rsqrt()
        x_hat = (x - mean) * rstd
        ctx.save_for_backward(x, weight, mean, rstd)
        return x_hat * weight + bias

    @staticmethod
    def backward(ctx, dy):
        x, w, mean, rstd = ctx.saved_tensors
        n = x.shape[-1]
        x_hat = (x - mean) * rstd
        wdy = w * dy
        c1 = (x_hat * wdy).sum(-1, keepdim=True) / n
        c2 = wdy.sum(-1, keepdim=True) / n
        dx = (wdy - (x_hat * c1 + c2)) * rstd
        dw = (dy * x_hat).reshape(-1, n).sum(0)
        db = dy.reshape(-1, n).sum(0)
        return dx, None, dw, db, None


def example_inputs(device, dtype):
    return (
        torch.randn(3, 5, device=device, dtype=dtype, requires_grad=True),
        (5,),
        torch.randn(5, device=device, dtype=dtype, requires_grad=True),
        torch.randn(5, device=device, dtype=dtype, requires_grad=True),
        1e-5,
    )

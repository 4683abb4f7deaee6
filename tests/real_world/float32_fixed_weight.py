"""Mixed precision: a float32 weight by design, the input in the run's dtype.

Source: gradviz's own red-team testing (this project). Pattern: a fixed tensor whose dtype the
user chose on purpose. Computing in float32 makes finite differences at eps=1e-6 too coarse:
gradcheck fails it. A checker that cast the weight to float64 would check another Function.
"""

import torch

BUG = "computed in float32 (the weight's dtype): central differences at eps=1e-6 lose the digits gradcheck needs."


class MixedLinear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(w)
        ctx.dt = x.dtype
        return (x.to(w.dtype) @ w).to(x.dtype)

    @staticmethod
    def backward(ctx, g):
        (w,) = ctx.saved_tensors
        return (g.to(w.dtype) @ w.t()).to(ctx.dt), None


def example_inputs(device, dtype):
    return (
        torch.randn(2, 3, device=device, dtype=dtype, requires_grad=True),
        torch.randn(3, 2, device=device, dtype=torch.float32),
    )

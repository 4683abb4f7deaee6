"""NonDetFunc: backward multiplies the gradient by a little random jitter.

Source: pytorch/pytorch, test/test_autograd.py (``test_gradcheck_nondeterministic``, which
expects gradcheck to report "Backward is not reentrant" unless ``nondet_tol`` covers the
jitter). Pattern: forward returns its input; backward draws random numbers, so two backward
passes on the same graph differ; a non-tensor argument.
Buggy: non-reentrant (the jitter of 1e-6 is well inside the Jacobian tolerances).
"""

import torch

BUG = "backward multiplies by (1 + U(0, 1) * jitter): two backward passes differ, so it is not reentrant."


class NonDetFunc(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, jitter=0.0):
        ctx.jitter = jitter
        return x

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out * (1 + torch.rand_like(grad_out) * ctx.jitter), None


def example_inputs(device, dtype):
    return (torch.randn(3, 2, device=device, dtype=dtype, requires_grad=True), 1e-6)

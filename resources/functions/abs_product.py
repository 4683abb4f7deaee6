"""Something: (u, v) -> |u·v| elementwise, the lecture's two-input example.

The forward keeps both inputs (save_for_backward), because each gradient needs the other
input: d|uv|/du = sign(u)·|v| and d|uv|/dv = |u|·sign(v). Both Jacobian blocks are diagonal.
The lecture reads them with ctx.saved_variables, which no longer exists in PyTorch; this copy
uses ctx.saved_tensors and is otherwise the lecture's code.
"""

import torch
from torch.autograd import Function

CATEGORY = "Seed examples"


class Something(Function):
    @staticmethod
    def forward(ctx, input1, input2):
        ctx.save_for_backward(input1, input2)
        return (input1 * input2).abs()

    @staticmethod
    def backward(ctx, grad_output):
        # the lecture wrote ctx.saved_variables (removed from PyTorch since)
        input1, input2 = ctx.saved_tensors
        return grad_output * input1.sign() * input2.abs(), grad_output * input1.abs() * input2.sign()


def example_inputs(device, dtype):
    u = torch.randn(3, 4, device=device, dtype=dtype, requires_grad=True)
    v = torch.randn(3, 4, device=device, dtype=dtype, requires_grad=True)
    return u, v

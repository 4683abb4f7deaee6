"""ScaleGradGenVmap: forward copies, backward scales the gradient by a constant.

Source: pytorch/pytorch, torch/testing/_internal/autograd_function_db.py
(``ScaleGradGenVmap``). Pattern: a gradient-scaling layer (forward ``x.clone()``, backward
``grad_output * 3.14``), the kind used to damp or boost gradients of one branch.
Buggy for gradcheck (by design): the analytic Jacobian is 3.14 times the numerical one.
"""

import torch

BUG = "backward scales the gradient by 3.14 while forward is the identity."


class ScaleGradGenVmap(torch.autograd.Function):
    generate_vmap_rule = True
    scale = 3.14

    @staticmethod
    def forward(x):
        return x.clone()

    @staticmethod
    def setup_context(ctx, inputs, outputs):
        pass

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ScaleGradGenVmap.scale


def example_inputs(device, dtype):
    return (torch.randn(2, 3, device=device, dtype=dtype, requires_grad=True),)

"""CubeGenVmap: backward uses the saved slope where it needs the second output's gradient.

Source: pytorch/pytorch, torch/testing/_internal/autograd_function_db.py (``CubeGenVmap``,
``generate_vmap_rule = True``). Pattern: setup_context Function with two outputs
``(x**3, 3 x**2)``. Its backward returns ``grad_output * dinput + 6 * dinput``: the second term
should be ``6 * grad_saved * x``, so it ignores the gradient of the second output and adds a
constant that is not multiplied by any grad_output.
Buggy (a real slip in PyTorch's own test database).
"""

import torch

BUG = "backward adds 6 * dinput instead of 6 * grad_saved * x: the second output's gradient is ignored and a term is not multiplied by grad_output."


class CubeGenVmap(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x**3, 3 * x**2

    @staticmethod
    def setup_context(ctx, inputs, outputs):
        ctx.save_for_backward(inputs[0], outputs[1])

    @staticmethod
    def backward(ctx, grad_output, grad_saved):
        _x, dinput = ctx.saved_tensors
        return grad_output * dinput + 6 * dinput


def example_inputs(device, dtype):
    return (torch.empty(3, device=device, dtype=dtype).uniform_(0.8, 2.0).requires_grad_(True),)

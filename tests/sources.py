"""User sources shared by tests of several layers: written the way users write them."""

HEADER = """
import torch
from torch.autograd import Function
"""

GOOD_BACKWARD = """
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g
"""

SQUARE = (
    HEADER
    + """
class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x
"""
    + GOOD_BACKWARD
    + """
def example_inputs(device, dtype):
    return (torch.randn(3, device=device, dtype=dtype, requires_grad=True),)
"""
)

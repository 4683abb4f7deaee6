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

LARGE_SIN_WRONG_AT = 77_777  # the one element whose derivative LARGE_SIN gets wrong
LARGE_SIN = (
    HEADER
    + f"""
class LargeSin(Function):
    '''sin of 10^5 elements: a 10^5 x 10^5 Jacobian, too large to hold; one derivative 1 % off.'''

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        d = x.cos()
        d[{LARGE_SIN_WRONG_AT}] *= 1.01
        return g * d


def example_inputs(device, dtype):
    return (torch.randn(100_000, device=device, dtype=dtype, requires_grad=True),)
"""
)

"""One small Function file, written with the forward, backward and inputs a test names."""

from tests.sources import HEADER


def fn_source(forward: str, backward: str, inputs: str) -> str:
    return HEADER + f"""
class F(Function):
    @staticmethod
    def forward(ctx, x):
        {forward}

    @staticmethod
    def backward(ctx, g):
        {backward}


def example_inputs(device, dtype):
    return ({inputs},)
"""

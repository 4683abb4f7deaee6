"""SwishImplementation: memory-efficient Swish that saves only its input.

Source: lukemelas/EfficientNet-PyTorch, efficientnet_pytorch/utils.py
(``SwishImplementation``, behind ``MemoryEfficientSwish``). Pattern: hand-written activation;
backward recomputes the sigmoid: ``grad * s * (1 + x * (1 - s))``.
Correct.
"""

import torch


class SwishImplementation(torch.autograd.Function):
    @staticmethod
    def forward(ctx, i):
        ctx.save_for_backward(i)
        return i * torch.sigmoid(i)

    @staticmethod
    def backward(ctx, grad_output):
        (i,) = ctx.saved_tensors
        s = torch.sigmoid(i)
        return grad_output * (s * (1 + i * (1 - s)))


def example_inputs(device, dtype):
    return (torch.randn(3, 4, device=device, dtype=dtype, requires_grad=True),)

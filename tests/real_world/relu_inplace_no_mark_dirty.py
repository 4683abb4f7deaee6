"""ReLUInplaceFunction: rectifies its input in place but deliberately skips ``mark_dirty``.

Source: ahendriksen/msd_pytorch, msd_pytorch/relu_inplace.py (``ReLUInplaceFunction``; the
in-place kernel is a CUDA extension there, ``clamp_`` here). Its comment: "Unfortunately, we
cannot mark the input as dirty ... this breaks the backward gradient computation." Pattern:
forward modifies its input in place without ``ctx.mark_dirty`` and returns it; backward masks
grad_output with the saved output.
Correct as far as gradcheck can tell (the input is a fresh clone each call), though autograd is
not told about the modification.
"""

import torch


class ReLUInplaceFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        output = input.clamp_(min=0)
        ctx.save_for_backward(output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        (output,) = ctx.saved_tensors
        return grad_output * (output > 0).to(grad_output.dtype)


def example_inputs(device, dtype):
    x = torch.tensor([[0.8, -0.6, 1.9], [-1.1, 0.25, -0.05]], device=device, dtype=dtype)
    return (x.requires_grad_(True),)

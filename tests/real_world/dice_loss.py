"""DiceLoss: a soft Dice score written as a Function with a 0-d output.

Source: mattmacy/torchbiomed, torchbiomed/loss.py (``DiceLoss``, from the V-Net PyTorch port;
written there as a legacy Function over two classes). Re-expressed as a static-method Function
for one foreground channel. Pattern: custom loss; forward ``2 <x, t> / (<x, x> + sum(t))`` returns
a 0-d tensor; the target (binary, float) does not require grad and gets None; backward uses the
formula from the source's comment ``2 (t U - 2 x I) / U**2``.
Correct.
"""

import torch


class DiceLoss(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, target):
        ctx.save_for_backward(input, target)
        intersect = torch.dot(input, target)
        union = torch.dot(input, input) + torch.sum(target)
        return 2 * intersect / union

    @staticmethod
    def backward(ctx, grad_output):
        input, target = ctx.saved_tensors
        intersect = torch.dot(input, target)
        union = torch.dot(input, input) + torch.sum(target)
        grad = 2 * (target * union - 2 * input * intersect) / (union * union)
        return grad * grad_output, None


def example_inputs(device, dtype):
    probs = torch.rand(8, device=device, dtype=dtype).requires_grad_(True)
    target = torch.tensor([1, 0, 1, 1, 0, 0, 1, 0], device=device, dtype=dtype)
    return (probs, target)

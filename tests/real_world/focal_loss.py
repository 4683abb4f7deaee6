"""SigmoidFocalLossFunction: focal loss with integer labels and a once-differentiable backward.

Source: open-mmlab/mmcv, mmcv/ops/focal_loss.py (``SigmoidFocalLossFunction``, whose forward and
backward call the ``sigmoid_focal_loss`` CUDA kernels; their formulas are re-expressed here in
torch). Pattern: custom loss; an int64 target (not differentiable); non-tensor ``gamma``,
``alpha`` and ``reduction`` (mean gives a 0-d output); ``@once_differentiable`` backward that
returns None for all but the logits.
Correct.
"""

import torch
from torch.autograd.function import once_differentiable


class SigmoidFocalLossFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, target, gamma=2.0, alpha=0.25, reduction="mean"):
        onehot = torch.nn.functional.one_hot(target, input.size(1)).to(input.dtype)
        p = torch.sigmoid(input)
        positive = -alpha * (1 - p) ** gamma * torch.log(p)
        negative = -(1 - alpha) * p**gamma * torch.log(1 - p)
        loss = onehot * positive + (1 - onehot) * negative
        ctx.gamma, ctx.alpha, ctx.reduction = gamma, alpha, reduction
        ctx.save_for_backward(input, onehot)
        return loss.mean() if reduction == "mean" else loss

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        input, onehot = ctx.saved_tensors
        gamma, alpha = ctx.gamma, ctx.alpha
        p = torch.sigmoid(input)
        d_pos = -alpha * (1 - p) ** gamma * ((1 - p) - gamma * p * torch.log(p))
        d_neg = -(1 - alpha) * p**gamma * (gamma * (1 - p) * torch.log(1 - p) - p)
        grad = onehot * d_pos + (1 - onehot) * d_neg
        if ctx.reduction == "mean":
            grad = grad / input.numel()
        return grad * grad_output, None, None, None, None


def example_inputs(device, dtype):
    logits = torch.randn(4, 3, device=device, dtype=dtype, requires_grad=True)
    labels = torch.tensor([0, 2, 1, 2], device=device)
    return (logits, labels, 2.0, 0.25, "mean")

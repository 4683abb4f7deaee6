"""InPlaceABN: batch norm + leaky ReLU computed in place, undone from the output in backward.

Source: mapillary/inplace_abn, modules/functions.py (``InPlaceABN``; CUDA kernels there,
re-expressed in torch here, training mode). Pattern: ``ctx.mark_dirty(x)`` and forward returns
the modified input; running-statistics buffers updated in place (not differentiable); saved
output only: backward inverts the leaky ReLU and the affine map to recover ``x_hat``;
``@once_differentiable``; non-tensor arguments after the tensors.
Correct.
"""

import torch
from torch.autograd.function import once_differentiable


def _per_channel(t):
    return [0, *range(2, t.dim())]


class InPlaceABN(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, momentum=0.1, eps=1e-5, slope=0.01):
        dims = _per_channel(x)
        shape = [1, -1] + [1] * (x.dim() - 2)
        n = x.numel() // x.size(1)
        mean = x.mean(dims)
        var = x.var(dims, unbiased=False)
        running_mean.mul_(1 - momentum).add_(momentum * mean)
        running_var.mul_(1 - momentum).add_(momentum * var * n / (n - 1))
        inv_std = (var + eps).rsqrt()
        x.sub_(mean.view(shape)).mul_((inv_std * weight).view(shape)).add_(bias.view(shape))
        torch.nn.functional.leaky_relu_(x, slope)
        ctx.slope = slope
        ctx.save_for_backward(x, weight, bias, inv_std)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    @once_differentiable
    def backward(ctx, dz):
        z, weight, bias, inv_std = ctx.saved_tensors
        dims = _per_channel(z)
        shape = [1, -1] + [1] * (z.dim() - 2)
        n = z.numel() // z.size(1)
        positive = z >= 0
        dy = torch.where(positive, dz, dz * ctx.slope)
        y = torch.where(positive, z, z / ctx.slope)
        x_hat = (y - bias.view(shape)) / weight.view(shape)
        edz = dy.sum(dims)
        eydz = (dy * x_hat).sum(dims)
        dx = (dy - edz.view(shape) / n - x_hat * (eydz.view(shape) / n)) * (weight * inv_std).view(shape)
        return dx, eydz, edz, None, None, None, None, None


def example_inputs(device, dtype):
    return (
        torch.randn(4, 3, device=device, dtype=dtype, requires_grad=True),
        torch.tensor([0.8, 1.3, -0.9], device=device, dtype=dtype, requires_grad=True),
        torch.tensor([0.1, -0.2, 0.3], device=device, dtype=dtype, requires_grad=True),
        torch.zeros(3, device=device, dtype=dtype),
        torch.ones(3, device=device, dtype=dtype),
    )

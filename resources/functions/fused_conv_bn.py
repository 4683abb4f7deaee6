"""FusedConvBN2DFunction: Conv2d followed by BatchNorm2d in one Function that saves only its input.

From the PyTorch tutorial on fusing convolution and batch norm. Unfused, autograd keeps the
conv input, the conv output (batch norm's input) and more for backward; fused, the forward
saves just X and the weight, plus C-sized statistics on ctx, and the backward recomputes the
convolution. The memory panel measures what that saves. Parameters are restricted as in the
tutorial: conv without bias, stride 1, no padding, dilation 1, groups 1; batch norm with
eps=1e-3, no affine weights and no running statistics. Note the batch norm here uses the
unbiased variance with eps outside the square root: out = (x - mean) / (sqrt(var) + eps).
Its backward is not twice differentiable (it reuses statistics stored on ctx) and does not say
so with @once_differentiable: `gradviz check --all-checks` reports that as a double-backward failure.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Function

CATEGORY = "Conv-BN"
FUNCTION = "FusedConvBN2DFunction"


def unsqueeze_all(t):
    # broadcast a C-sized tensor over (N, C, H, W); the seed text uses it without defining it
    return t[None, :, None, None]


def convolution_backward(grad_out, X, weight):
    grad_w = F.conv2d(X.transpose(0, 1), grad_out.transpose(0, 1)).transpose(0, 1)
    grad_X = F.conv_transpose2d(grad_out, weight)
    return grad_X, grad_w


def batch_norm_backward(grad_out, X, sum, sqrt_var, N, eps):
    # We use the formula: out = (X - mean(X)) / (sqrt(var(X)) + eps)
    tmp = ((X - unsqueeze_all(sum) / N) * grad_out).sum(dim=(0, 2, 3))
    tmp *= -1
    d_denom = tmp / (sqrt_var + eps) ** 2  # d_denom = -num / denom**2
    d_var = d_denom / (2 * sqrt_var)  # denom = torch.sqrt(var) + eps
    # Compute d_mean_dx before allocating the final NCHW-sized grad_input buffer
    d_mean_dx = grad_out / unsqueeze_all(sqrt_var + eps)
    d_mean_dx = unsqueeze_all(-d_mean_dx.sum(dim=(0, 2, 3)) / N)
    # (1) unbiased_var(x) = ((X - unsqueeze_all(mean))**2).sum(dim=(0, 2, 3)) / (N - 1)
    grad_input = X * unsqueeze_all(d_var * N)
    grad_input += unsqueeze_all(-d_var * sum)
    grad_input *= 2 / ((N - 1) * N)
    # (2) mean (see above)
    grad_input += d_mean_dx
    # (3) Add 'grad_out / <factor>' without allocating an extra buffer
    grad_input *= unsqueeze_all(sqrt_var + eps)
    grad_input += grad_out
    grad_input /= unsqueeze_all(sqrt_var + eps)  # sqrt_var + eps > 0!
    return grad_input


class FusedConvBN2DFunction(Function):
    @staticmethod
    def forward(ctx, X, conv_weight, eps=1e-3):
        assert X.ndim == 4  # N, C, H, W
        # Only need to save this single buffer for backward!
        ctx.save_for_backward(X, conv_weight)

        # Exact same Conv2D forward from example above
        X = F.conv2d(X, conv_weight)
        # Exact same BatchNorm2D forward from example above
        sum = X.sum(dim=(0, 2, 3))
        var = X.var(unbiased=True, dim=(0, 2, 3))
        N = X.numel() / X.size(1)
        sqrt_var = torch.sqrt(var)
        ctx.eps = eps
        ctx.sum = sum
        ctx.N = N
        ctx.sqrt_var = sqrt_var
        mean = sum / N
        denom = sqrt_var + eps
        # Instead of `out = (X - a) / b`, doing `out = X - a; out /= b`
        # avoids allocating one extra NCHW-sized buffer here
        out = X - unsqueeze_all(mean)
        out /= unsqueeze_all(denom)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        X, conv_weight = ctx.saved_tensors
        # (4) Batch norm backward
        # (5) We need to recompute conv
        X_conv_out = F.conv2d(X, conv_weight)
        grad_out = batch_norm_backward(grad_out, X_conv_out, ctx.sum, ctx.sqrt_var, ctx.N, ctx.eps)
        # (6) Conv2d backward
        grad_X, grad_input = convolution_backward(grad_out, X, conv_weight)
        # more gradients than inputs is fine as long as the extra ones are None
        return grad_X, grad_input, None, None, None, None, None


class FusedConvBN(nn.Module):
    def __init__(
        self, in_channels, out_channels, kernel_size, exp_avg_factor=0.1, eps=1e-3, device=None, dtype=None
    ):
        super().__init__()
        # the seed uses factory_kwargs without defining it
        factory_kwargs = {"device": device, "dtype": dtype}
        # Conv parameters
        weight_shape = (out_channels, in_channels, kernel_size, kernel_size)
        self.conv_weight = nn.Parameter(torch.empty(*weight_shape, **factory_kwargs))
        # Batch norm parameters
        num_features = out_channels
        self.num_features = num_features
        self.eps = eps
        # Initialize
        self.reset_parameters()

    def forward(self, X):
        return FusedConvBN2DFunction.apply(X, self.conv_weight, self.eps)

    def reset_parameters(self) -> None:
        nn.init.kaiming_uniform_(self.conv_weight, a=math.sqrt(5))


def example_inputs(device, dtype):
    # the tutorial's gradcheck inputs
    weight = torch.rand(5, 3, 3, 3, device=device, dtype=dtype, requires_grad=True)
    X = torch.rand(2, 3, 4, 4, device=device, dtype=dtype, requires_grad=True)
    return X, weight

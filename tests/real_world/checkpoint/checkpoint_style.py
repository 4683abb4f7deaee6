"""Checkpoint-style Functions: the module's parameters are passed in *and* read through the module.

Source: the pattern of detrex's ``projects/co_mot/util/checkpoint.py`` (modified from
csrhddlam/pytorch-checkpoint, itself PyTorch's old ``torch.utils.checkpoint``): forward runs
``run_function(*inputs)`` without grad, backward recomputes it with grad on detached inputs and
takes ``autograd.grad`` with respect to those inputs and the parameters that were passed in. The
parameters reach ``run_function`` only through the module, never through the arguments, so a
checker that perturbs a copy of the weight sees no dependence on it at all.

``Checkpoint`` is right; ``CheckpointWrongWeight`` doubles the parameters' gradients (a bug
only a check that perturbs the module's own weight can see).
"""

import torch
from torch import nn


class Checkpoint(torch.autograd.Function):
    @staticmethod
    def forward(ctx, run_function, x, *params):
        ctx.run_function = run_function
        ctx.save_for_backward(x, *params)
        with torch.no_grad():
            return run_function(x)

    @staticmethod
    def backward(ctx, grad_out):
        x, *params = ctx.saved_tensors
        x = x.detach().requires_grad_(x.requires_grad)
        with torch.enable_grad():
            out = ctx.run_function(x.view_as(x))
        grads = torch.autograd.grad(out, [x, *params], grad_out, allow_unused=True)
        return (None, *grads)


class CheckpointWrongWeight(torch.autograd.Function):
    @staticmethod
    def forward(ctx, run_function, x, *params):
        ctx.run_function = run_function
        ctx.save_for_backward(x, *params)
        with torch.no_grad():
            return run_function(x)

    @staticmethod
    def backward(ctx, grad_out):
        x, *params = ctx.saved_tensors
        x = x.detach().requires_grad_(x.requires_grad)
        with torch.enable_grad():
            out = ctx.run_function(x.view_as(x))
        grad_x, *grad_params = torch.autograd.grad(out, [x, *params], grad_out, allow_unused=True)
        # BUG: the parameters' gradients scaled twice (a loss scale applied once too often)
        grad_params = [None if g is None else 2 * g for g in grad_params]
        return (None, grad_x, *grad_params)


def make_module(device=None, dtype=torch.float64):
    """A small Linear + tanh block, like the layers detrex checkpoints."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 2), nn.Tanh()).to(device=device, dtype=dtype)


def example_inputs(device, dtype):
    block = make_module(device, dtype)
    x = torch.randn(4, 3, device=device, dtype=dtype, requires_grad=True)
    return (block, x, *block.parameters())

"""Functions with vmap rules (right and wrong) for gradviz's vmap_rule check, in the style of
PyTorch's ``torch/testing/_internal/autograd_function_db.py`` (``NumpyCube``, ``NumpyMul`` and
their ``vmap`` staticmethods). Also a CLI target: ``example_inputs`` gives fixed values.

gradcheck's ``check_batched_grad`` uses the prototype vmap, which never calls these rules; the
vmap_rule check runs ``torch.func.vmap`` and so calls them. The op namespace ``gvtest_vmap`` is
this file's alone (ops are global to the process).

Source: pytorch/pytorch, torch/testing/_internal/autograd_function_db.py (``NumpyCube``, ``NumpyMul``,
their ``vmap`` staticmethods; the wrong rules are the slips a rule written for unbatched shapes makes).
Pattern: setup_context Functions with vmap rules; the corpus checks ``NumpyCube``.
Correct.
"""

from __future__ import annotations

import numpy as np
import torch


def _batch_first(x, dim):
    """``x`` with its batch dimension first (a new one of size 1 where it has none)."""
    return x.unsqueeze(0) if dim is None else x.movedim(dim, 0)


class ScaleRule(torch.autograd.Function):
    """x * 3 with a right vmap staticmethod (the batch dimension moved first, out_dims 0)."""

    @staticmethod
    def forward(x):
        return x * 3

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, g):
        return g * 3

    @staticmethod
    def vmap(info, in_dims, x):
        return ScaleRule.apply(_batch_first(x, in_dims[0])), 0


class RowSumWrongRule(torch.autograd.Function):
    """x.sum(-1) with a wrong vmap rule: it sums over the batch dimension too, as a rule written
    for the unbatched shape does (every sample then gets the sum of all samples)."""

    @staticmethod
    def forward(x):
        return x.sum(-1)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.shape = inputs[0].shape

    @staticmethod
    def backward(ctx, g):
        return g.unsqueeze(-1).expand(ctx.shape).clone()

    @staticmethod
    def vmap(info, in_dims, x):
        x = _batch_first(x, in_dims[0])
        total = x.sum(0, keepdim=True).sum(-1)  # wrong: the batch dimension is summed over
        return total.expand(x.shape[0], *total.shape[1:]).clone(), 0


class WrongOutDims(torch.autograd.Function):
    """x.t() with out_dims 1 where the batch dimension is at 0: samples come back transposed."""

    @staticmethod
    def forward(x):
        return x.t().clone()

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, g):
        return g.t().clone()

    @staticmethod
    def vmap(info, in_dims, x):
        x = _batch_first(x, in_dims[0])
        return x.transpose(1, 2).clone(), 1  # wrong: the batch dimension of the result is 0


class SinGenerated(torch.autograd.Function):
    """sin with ``generate_vmap_rule = True``: PyTorch writes the rule; it is right."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x.sin()

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.cos()


def _np(t):
    return t.detach().cpu().numpy()


class NumpyMul(torch.autograd.Function):
    """x * y in NumPy, with a right vmap rule (PyTorch's ``NumpyMul``)."""

    @staticmethod
    def forward(x, y):
        return torch.tensor(np.multiply(_np(x), _np(y)), device=x.device)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return NumpyMul.apply(g, y), NumpyMul.apply(g, x)

    @staticmethod
    def vmap(info, in_dims, x, y):
        size = info.batch_size
        x = _batch_first(x, in_dims[0]).expand(size, *x.shape[(in_dims[0] is not None) :])
        y = _batch_first(y, in_dims[1]).expand(size, *y.shape[(in_dims[1] is not None) :])
        return NumpyMul.apply(x, y), 0


class NumpyCube(torch.autograd.Function):
    """x**3 in NumPy, backward through NumpyMul, a right vmap rule: gradcheck's batched-gradient
    test fails it (the prototype vmap cannot run NumPy), while torch.func.vmap runs it right."""

    @staticmethod
    def forward(x):
        return torch.tensor(_np(x) ** 3, device=x.device)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return NumpyMul.apply(g, 3 * x * x)

    @staticmethod
    def vmap(info, in_dims, x):
        return NumpyCube.apply(_batch_first(x, in_dims[0])), 0


class PlainSquare(torch.autograd.Function):
    """No vmap rule at all: the vmap_rule check does not run by default."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


def _define_halve():
    """x / 2 as a custom op, with a right autograd formula and a wrong vmap rule (sample 1 off by one).

    The corpus test loads every file afresh; ops are global to the process, so a second load
    takes the op the first one defined."""
    from torch._library.custom_ops import OPDEFS

    if "gvtest_vmap::halve" in OPDEFS:
        return OPDEFS["gvtest_vmap::halve"]

    @torch.library.custom_op("gvtest_vmap::halve", mutates_args=())
    def halve(x: torch.Tensor) -> torch.Tensor:
        return x / 2

    @halve.register_fake
    def _(x):
        return torch.empty_like(x)

    def setup_context(ctx, inputs, output):
        pass

    def backward(ctx, g):
        return g / 2

    halve.register_autograd(backward, setup_context=setup_context)

    @halve.register_vmap
    def _(info, in_dims, x):
        x = _batch_first(x, in_dims[0])
        one = (torch.arange(x.shape[0], device=x.device) == 1).to(x.dtype).reshape(-1, *[1] * (x.dim() - 1))
        return x / 2 + one, 0  # wrong: sample 1 is off by one

    return halve


halve = _define_halve()

FUNCTION = "NumpyCube"  # the corpus test checks this one (right, with a right rule)
FUNCTIONS = [ScaleRule, RowSumWrongRule, WrongOutDims, SinGenerated, NumpyCube, PlainSquare]


def example_inputs(device, dtype):
    """Fixed values (no random numbers), so the CLI's worker and the test see the same input."""
    x = torch.linspace(0.5, 2.0, 12, device=device, dtype=dtype).reshape(3, 4)
    return (x.requires_grad_(),)

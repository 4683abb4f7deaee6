"""gradviz's direct engine call gives exactly what torch.autograd.grad gives, without sympy."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from gradviz.core.vjp import backward, vjp


class Scale(torch.autograd.Function):
    """Backward reads grad_output's values and strides, so any difference in what it is given shows."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x * w, (x * x).sum(0)

    @staticmethod
    def backward(ctx, g, h):
        x, w = ctx.saved_tensors
        return g * w + 2 * x * h, (g * x).sum(0) + float(g.is_contiguous())


def _graph():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 4, dtype=torch.float64, generator=g, requires_grad=True)
    w = torch.randn(4, dtype=torch.float64, generator=g, requires_grad=True)
    return (x, w), Scale.apply(x, w)


def test_plain_vjp_equals_autograd_grad_bitwise():
    leaves, outs = _graph()
    grads = [torch.randn(o.shape, dtype=o.dtype) for o in outs]
    ours = vjp(outs, leaves, grads, retain_graph=True)
    theirs = torch.autograd.grad(outs, leaves, grads, retain_graph=True, allow_unused=True)
    for a, b in zip(ours, theirs):
        assert torch.equal(a, b)


def test_batched_vjp_equals_autograd_grad_bitwise():
    leaves, outs = _graph()
    grads = [torch.randn(5, *o.shape, dtype=o.dtype) for o in outs]
    ours = vjp(outs, leaves, grads, retain_graph=True, batched=True)
    theirs = torch.autograd.grad(outs, leaves, grads, retain_graph=True, allow_unused=True, is_grads_batched=True)
    for a, b in zip(ours, theirs):
        assert torch.equal(a, b)


def test_unused_input_gives_none_like_autograd_grad():
    leaves, outs = _graph()
    spare = torch.ones(2, dtype=torch.float64, requires_grad=True)
    grads = [torch.ones_like(o) for o in outs]
    assert vjp(outs, (*leaves, spare), grads)[-1] is None


def test_mismatched_grad_output_raises_torchs_own_error():
    leaves, outs = _graph()
    wrong = [torch.ones(7, dtype=torch.float64), torch.ones_like(outs[1])]
    with pytest.raises(RuntimeError, match="Mismatch in shape") as ours:
        vjp(outs, leaves, wrong, retain_graph=True)
    with pytest.raises(RuntimeError) as theirs:
        torch.autograd.grad(outs, leaves, wrong, retain_graph=True)
    assert str(ours.value) == str(theirs.value)


def test_tensor_subclass_goes_through_autograd_grad():
    """A __torch_function__ subclass must see the call it overrides; the engine call would skip it."""
    seen = []

    class Logged(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if func is torch.autograd.grad:
                seen.append(func)
            return super().__torch_function__(func, types, args, kwargs or {})

    x = torch.ones(3, dtype=torch.float64).as_subclass(Logged).requires_grad_()
    y = x * 2
    (g,) = vjp((y,), (x,), (torch.ones(3, dtype=torch.float64),))
    assert seen == [torch.autograd.grad]
    assert torch.equal(g.as_subclass(torch.Tensor), torch.full((3,), 2.0, dtype=torch.float64))


def test_backward_accumulates_like_autograd_backward():
    leaves, outs = _graph()
    grads = [torch.randn(o.shape, dtype=o.dtype) for o in outs]
    backward(outs, grads, inputs=leaves, retain_graph=True)
    ours = [leaf.grad.clone() for leaf in leaves]
    for leaf in leaves:
        leaf.grad = None
    torch.autograd.backward(outs, grads, inputs=leaves, retain_graph=True)
    for a, leaf in zip(ours, leaves):
        assert torch.equal(a, leaf.grad)


def test_the_default_check_and_graph_never_import_sympy():
    """The import costs 0.3-0.4 s of every fresh worker (--all-checks still pays it: gradgradcheck
    is PyTorch's own code)."""
    code = """
import sys, torch
from gradviz.core.check import check_function
from gradviz.core.graph import graph_from_outputs
from gradviz.core.inputs import prepare_inputs
from gradviz.core.loader import choose_function, load_source
from gradviz.schema.library import find_builtin
from gradviz.schema.settings import CheckSettings
loaded = load_source(find_builtin("linear").read_text(), "linear.py")
fn = choose_function(loaded)
args = loaded.example_inputs(torch.device("cpu"), torch.float64)
check_function(fn, prepare_inputs(args, torch.device("cpu"), torch.float64, [f"in{k}" for k in range(len(args))]), CheckSettings(), loaded=loaded)
graph_from_outputs(fn.apply(*args), inputs=tuple(a for a in args if a.requires_grad))
print("sympy" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip().splitlines()[-1] == "False"

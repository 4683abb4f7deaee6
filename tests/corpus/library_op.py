"""An operator defined the C++-extension way, in Python: torch.library.Library(ns, "DEF"), define and
impl, its autograd given with torch.library.register_autograd("ns::name", ...). No global holds it:
it is found among the dispatcher's registrations, by its qualified name.

Expected: exit 0.
"""

import torch

lib = torch.library.Library("gvcorpus_lib", "DEF")
lib.define("scale(Tensor x, float alpha) -> Tensor")


def scale_kernel(x, alpha):
    return x * alpha


lib.impl("scale", scale_kernel, "CompositeExplicitAutograd")


@torch.library.register_fake("gvcorpus_lib::scale")
def _(x, alpha):
    return torch.empty_like(x)


def setup_context(ctx, inputs, output):
    ctx.alpha = inputs[1]


def backward(ctx, grad):
    return grad * ctx.alpha, None


torch.library.register_autograd("gvcorpus_lib::scale", backward, setup_context=setup_context)


def example_inputs(device, dtype):
    return (torch.randn(5, device=device, dtype=dtype, requires_grad=True), 2.5)

"""The first-call costs every check pays (gradviz's modules, autograd's and vmap's first calls),
paid once on tiny tensors: by the worker before any run is forked from it (``startup``), by a
spawned run while it waits for its request (``spawned``) and by a pre-forked spare
(``fork_spare``). A module of its own so that none of them imports another for it.
"""

from __future__ import annotations


def warm_up() -> None:
    """Pay, once, the first-call costs every run would pay again: gradviz's own modules, autograd's
    and vmap's first calls, one tiny check with its graph. Tiny tensors only: no OpenMP parallel
    region may run here. (Autograd's first ``grad`` would import sympy, 0.3-0.4 s; gradviz's
    ``core.vjp`` never needs it.)"""
    import torch

    from gradviz.core.check import check_function
    from gradviz.core.graph import graph_from_outputs
    from gradviz.core.inputs import prepare_inputs
    from gradviz.schema.settings import CheckSettings
    from gradviz.worker import handlers  # noqa: F401 - imported for its imports

    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    # more elements than jacobian.SMALL, so the batched paths (vmap, is_grads_batched) warm up too
    x = torch.linspace(0.5, 1.5, 24, dtype=torch.float64, requires_grad=True)
    prepared = prepare_inputs((x,), torch.device("cpu"), torch.float64, ["x"])
    check_function(Square, prepared, CheckSettings())
    graph_from_outputs(Square.apply(x.clone()), inputs=(x,))

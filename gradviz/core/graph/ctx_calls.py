"""Watching a Function's ctx during forward, for the flags PyTorch keeps no readable trace of.

PyTorch reads ``ctx.dirty_tensors`` and ``ctx.non_differentiable`` and clears them as forward
returns, and ``set_materialize_grads`` has no getter: the only way to know a node used them is to
see the calls happen.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

__all__ = ["watch_ctx_calls"]

_WATCHED_CTX_CALLS = ("mark_dirty", "mark_non_differentiable", "set_materialize_grads")


@contextmanager
def watch_ctx_calls(fn: type[torch.autograd.Function]) -> Iterator[dict[int, tuple[object, set[str]]]]:
    """Record which flags each ctx of ``fn`` set during forward: {id(ctx): (ctx, flags)}.

    The three methods are wrapped on ``fn``'s own backward class (the type of its ctx) and put
    back afterwards; other Functions are not touched.
    """
    cls = fn._backward_cls
    calls: dict[int, tuple[object, set[str]]] = {}
    before = {name: cls.__dict__.get(name) for name in _WATCHED_CTX_CALLS}

    def watched(name: str, method):
        def call(ctx, *args, **kwargs):
            flags = calls.setdefault(id(ctx), (ctx, set()))[1]
            if name == "set_materialize_grads":
                value = args[0] if args else kwargs.get("value", True)
                (flags.discard if value else flags.add)("materialize_grads_off")
            else:
                flags.add(name)
            return method(ctx, *args, **kwargs)

        return call

    for name in _WATCHED_CTX_CALLS:
        setattr(cls, name, watched(name, getattr(cls, name)))
    try:
        yield calls
    finally:
        for name, method in before.items():
            if method is None:
                delattr(cls, name)
            else:
                setattr(cls, name, method)

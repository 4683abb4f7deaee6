"""gradviz: see what a custom torch.autograd.Function's backward really computes.

``gradviz.check(fn, inputs)`` gives gradcheck's verdict with every cell of both Jacobians;
``gradviz.show(fn, inputs)`` opens the window on them. ``import gradviz`` does not import torch
(the window's process imports this package too): the API is loaded on first use.
"""

from __future__ import annotations

from typing import Any

from gradviz._version import __version__ as __version__

__all__ = ["GradientMismatch", "GradvizError", "Report", "UserCodeError", "check", "show"]


def __getattr__(name: str) -> Any:
    if name in ("GradvizError", "UserCodeError"):
        from gradviz.schema import errors

        return getattr(errors, name)
    if name in __all__:
        from gradviz import api

        return getattr(api, name)
    raise AttributeError(f"module 'gradviz' has no attribute {name!r}")

"""gradviz: see what a custom torch.autograd.Function's backward really computes.

``gradviz.check(fn, inputs)`` gives gradcheck's verdict with every cell of both Jacobians;
``gradviz.show(fn, inputs)`` opens the window on them. ``import gradviz`` does not import torch
(the window's process imports this package too): the API is loaded on first use, by the module
``__getattr__`` below. Type checkers and editors read the ``TYPE_CHECKING`` imports instead, so
``gradviz.check`` and ``gradviz.Report`` have their real types there; they never see the
``__getattr__`` (a module ``__getattr__`` would make every other name, ``gradviz.chek`` too, an
``Any`` that checks), so a misspelt name is an error.
"""

from __future__ import annotations

from gradviz import _loading

if _loading.run_with_dash_m():  # python -m gradviz: a Ctrl+C while it loads exits 130 quietly
    _loading.exit_quietly_on_interrupt()

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # never executed: the same names, for mypy, pyright and editors
    from gradviz.api.audit import AuditReport, audit
    from gradviz.api.check import check
    from gradviz.api.report import GradientMismatch, Report
    from gradviz.api.window import show
    from gradviz.schema.errors import GradvizError, UserCodeError

from gradviz._version import __version__ as __version__

__all__ = ["AuditReport", "GradientMismatch", "GradvizError", "Report", "UserCodeError", "audit", "check", "show"]

# each lazy export and the module it comes from (keep in step with the TYPE_CHECKING imports above)
_LAZY = {
    "AuditReport": "gradviz.api.audit",
    "GradientMismatch": "gradviz.api.report",
    "GradvizError": "gradviz.schema.errors",
    "Report": "gradviz.api.report",
    "UserCodeError": "gradviz.schema.errors",
    "audit": "gradviz.api.audit",
    "check": "gradviz.api.check",
    "show": "gradviz.api.window",
}


if not TYPE_CHECKING:  # hidden from type checkers: see the module docstring

    def __getattr__(name: str) -> Any:
        if name in _LAZY:
            return getattr(importlib.import_module(_LAZY[name]), name)
        raise AttributeError(f"module 'gradviz' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])

"""gradviz where the Function already lives: check it in this process, on these tensors.

``gradviz.check`` (and ``gradviz.show``, ``gradviz.Report``, ``gradviz.GradientMismatch``) come
from here; ``import gradviz`` itself stays light (no torch) until one of them is used.
"""

from gradviz.api.check import check
from gradviz.api.report import GradientMismatch, Report
from gradviz.api.window import show

__all__ = ["GradientMismatch", "Report", "check", "show"]

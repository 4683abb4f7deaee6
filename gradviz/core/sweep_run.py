"""What one eps sweep works on, fixed once it starts: read by each of its measurements.

The sweep's helpers (the directional Taylor test, the analytic blocks, the Jacobian sweep of each
input) all need the Function at its inputs, the steps, the settings, where errors point and the
private generator; one frozen record carries them instead of ten positional arguments each.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from gradviz.core.callables import Checkable
from gradviz.core.jacobian import Progress
from gradviz.schema.errors import ErrorKind, UserCodeError, from_exception
from gradviz.schema.settings import CheckSettings


@dataclass(frozen=True)
class SweepRun:
    """The Function at its inputs and everything about the sweep that does not change during it."""

    fn: Checkable
    args: tuple
    outputs: tuple  # one forward with autograd at ``args``
    names: list[str]  # the user's names of the arguments
    out_indices: list[int]  # differentiable, non-empty outputs
    in_indices: list[int]  # non-empty inputs that require grad
    steps: list[float]  # largest first; the check's eps among them
    settings: CheckSettings
    where: str  # the file errors in user code point at
    generator: torch.Generator  # private: the user's RNG is untouched
    tracker: Progress

    def forward_error(self, exc: BaseException, how: str = "") -> UserCodeError:
        """The user's forward raised: ``how`` says on what inputs (" (on inputs moved ...)")."""
        return from_exception(ErrorKind.FORWARD, exc, self.where, f"{self.fn.__name__}.forward{how}")

    def backward_error(self, exc: BaseException) -> UserCodeError:
        return from_exception(ErrorKind.BACKWARD, exc, self.where, f"{self.fn.__name__}.backward")

"""What one gradient check works on, fixed after its first forward: read by each of its steps.

The numerical and analytic Jacobians, gradcheck's other checks and the large-Jacobian path all
need the Function at its inputs, its first outputs, the outputs compared, the settings and
whether every forward needs fresh copies; one frozen record carries them instead of eight to
ten positional arguments each.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from gradviz.core.callables import Checkable
from gradviz.core.inputs import PreparedInputs
from gradviz.core.jacobian import Jacobian, Progress, RowVisitor, analytical_jacobian
from gradviz.core.loader import LoadedSource
from gradviz.core.user_code import CodeFiles
from gradviz.schema.settings import CheckSettings


@dataclass(frozen=True)
class CheckRun:
    """The Function at its inputs after the first forward, and how the check is asked for."""

    fn: Checkable
    inputs: PreparedInputs
    outputs: tuple  # the first forward's, with autograd (see ``user_code.first_forward``)
    out_indices: list[int]  # the outputs whose Jacobian rows are compared
    settings: CheckSettings
    mutates: bool  # the forward modifies or returns an input: every later forward runs on copies
    code: CodeFiles  # where errors in user code point
    loaded: LoadedSource | None = None

    @property
    def args(self) -> tuple:
        return self.inputs.args

    @property
    def in_indices(self) -> list[int]:
        return self.inputs.grad_indices

    @property
    def names(self) -> list[str]:
        return self.inputs.names

    @property
    def leaves(self) -> list[torch.Tensor]:
        """The inputs whose Jacobian columns are compared, in ``in_indices`` order."""
        return [self.args[j] for j in self.in_indices]

    def analytic_rows(self, progress: Progress, *, batched: bool, visit: RowVisitor | None = None) -> Jacobian:
        """Every compared block's rows from the user's backward (``jacobian.analytical_jacobian``);
        with ``visit`` the rows go there instead of being kept."""
        return analytical_jacobian(
            self.outputs,
            self.out_indices,
            self.leaves,
            self.in_indices,
            chunk_bytes=self.settings.chunk_bytes,
            progress=progress,
            batched=batched,
            visit=visit,
        )

"""The forward at many perturbed copies of one input: one vmapped call per chunk, or one call each.

The eps sweep and the kink probe both need ``f(x)`` with input j replaced by many nearby
values. As for the numerical Jacobian, a chunk of copies goes through one vmapped forward where
the Function allows it (checked once against plain calls), and through one plain call per copy
otherwise (``batched=False``: always), with grad mode on and the arguments requiring grad as
gradcheck calls them. A vmapped call runs inside ``batched_phase`` so the worker can retry a run
that dies there with plain calls only. Every
output is copied out before the next call, and every argument handed to user code is a fresh
copy: nothing the forward keeps or modifies can reach the next evaluation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch._vmap_internals import _vmap

from gradviz.core.jacobian import batched_phase, call_apply
from gradviz.core.quiet_warnings import warnings_ignored
from gradviz.schema.errors import ErrorKind, UserCodeError

FIXED_OUTPUTS = "Finite differences need outputs whose shape and dtype do not depend on the input values."


class PerturbedForward:
    """``f`` at rows of a ``(k, numel_j)`` tensor of input-j values (C order), output by output."""

    def __init__(
        self,
        apply: Callable,
        args: Sequence,
        j: int,
        out_indices: Sequence[int],
        *,
        clone_inputs: bool = False,
        batched: bool = True,
    ) -> None:
        self.apply, self.args, self.j = apply, list(args), j
        self.out_indices, self.clone_inputs = list(out_indices), clone_inputs
        self.x = args[j].detach()
        self.values = self.x.flatten().clone()  # C order, whatever the strides; never a view of x
        with torch.enable_grad():
            outputs = call_apply(apply, args, clone=True)
        self.reference = {i: self._checked(outputs, i, "the unperturbed input").detach().clone() for i in out_indices}
        # batched copies are contiguous: keep strided inputs on the exact plain path
        self.path = "batched" if batched and self.x.is_contiguous() else "loop"
        self.note: str | None = None
        self._probed = False

    @property
    def out_bytes(self) -> int:
        """Bytes of every kept output of one evaluation."""
        return sum(r.numel() * r.element_size() for r in self.reference.values())

    @property
    def row_bytes(self) -> int:
        """Bytes one perturbed copy costs: its input values and its outputs."""
        return self.values.numel() * self.values.element_size() + self.out_bytes

    def __call__(self, stacked: torch.Tensor) -> dict[int, torch.Tensor]:
        """Outputs ``(k, numel_i)`` per output i, one row per row of ``stacked``."""
        if self.path == "batched":
            outs = self._batched(stacked)
            if outs is not None and not self._probed:
                self._probed = True
                if not self._agrees_with_loop(stacked, outs):
                    self.note = (
                        "The forward gives different results when called batched (vmap) than when called "
                        "once per perturbed input, so gradviz used one call per perturbed input."
                    )
                    outs = None
            if outs is not None:
                return outs
            self.path = "loop"
        return self._looped(stacked)

    def _batched(self, stacked: torch.Tensor) -> dict[int, torch.Tensor] | None:
        shape = self.x.shape

        def forward_one(xj: torch.Tensor) -> tuple[torch.Tensor, ...]:
            call = list(self.args)
            call[self.j] = xj.view(shape)
            outputs = call_apply(self.apply, call, clone=self.clone_inputs)
            return tuple(outputs[i] for i in self.out_indices)

        try:
            with warnings_ignored(), batched_phase():  # vmap's "no batching rule" performance notes
                with torch.no_grad():
                    outs = _vmap(forward_one)(stacked)
            result = {}
            for i, o in zip(self.out_indices, outs):
                ref = self.reference[i]
                if o.shape[1:] != ref.shape or o.dtype != ref.dtype:
                    return None  # the plain calls give the precise error
                result[i] = o.detach().reshape(stacked.shape[0], -1)
        except Exception:
            return None
        return result

    def _looped(self, stacked: torch.Tensor) -> dict[int, torch.Tensor]:
        k = stacked.shape[0]
        result = {
            i: torch.empty((k, ref.numel()), dtype=ref.dtype, device=ref.device) for i, ref in self.reference.items()
        }
        with torch.enable_grad():
            for r in range(k):
                x = self.x.clone()  # keeps the input's strides
                x.copy_(stacked[r].view(self.x.shape))
                x.requires_grad_(self.args[self.j].requires_grad)
                call = list(self.args)
                call[self.j] = x
                outputs = call_apply(self.apply, call, clone=self.clone_inputs)
                for i in self.out_indices:
                    result[i][r].copy_(self._checked(outputs, i, "a perturbed input").detach().reshape(-1))
        return result

    def _agrees_with_loop(self, stacked: torch.Tensor, outs: dict[int, torch.Tensor]) -> bool:
        probe = sorted({0, stacked.shape[0] - 1})
        plain = self._looped(stacked[probe])
        for i in self.out_indices:
            a = outs[i][probe].cpu().double().numpy()
            b = plain[i].cpu().double().numpy()
            finite = np.abs(b[np.isfinite(b)])
            atol = 1e-9 * max(float(finite.max()) if finite.size else 0.0, 1.0)
            if not np.allclose(a, b, rtol=1e-6, atol=atol, equal_nan=True):
                return False
        return True

    def _checked(self, outputs: tuple, i: int, what: str) -> torch.Tensor:
        got = outputs[i] if i < len(outputs) else None
        ref = getattr(self, "reference", {}).get(i)
        if isinstance(got, torch.Tensor) and (ref is None or (got.shape == ref.shape and got.dtype == ref.dtype)):
            return got
        found = (
            f"{tuple(got.shape)} {str(got.dtype).removeprefix('torch.')}"
            if isinstance(got, torch.Tensor)
            else type(got).__name__
        )
        expected = f" instead of {tuple(ref.shape)} {str(ref.dtype).removeprefix('torch.')}" if ref is not None else ""
        raise UserCodeError(
            ErrorKind.BAD_OUTPUT,
            f"forward returned {found} as output {i} for {what} of input {self.j}{expected}. {FIXED_OUTPUTS}",
        )

    def shifted(self, columns: Sequence[int], steps: Sequence[float]) -> torch.Tensor:
        """Rows ``x + s e_c`` for each column c, each signed step s in turn: ``(len(columns) * len(steps), numel)``.

        ``x + s`` is computed as gradcheck computes it (the element plus a Python float, in the
        input's dtype), so a step here perturbs exactly as the check's eps does.
        """
        cols = torch.as_tensor(list(columns), device=self.values.device)
        original = self.values[cols]
        n = len(columns)
        stacked = self.values.reshape(1, -1).repeat(n * len(steps), 1)
        rows = torch.arange(n, device=self.values.device)
        for k, step in enumerate(steps):
            stacked[rows + k * n, cols] = original + step
        return stacked

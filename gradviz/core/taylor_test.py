"""The directional Taylor test of the eps sweep: f along random directions, at every step.

For random v (inputs) and w (outputs), with the step actually taken ``δ = (x + h v) - x``
(rounded in the input's dtype),

    remainder(h) = |w·(f(x + δ) - f(x)) - (Jᵀw)·δ|          Jᵀw: one call of the user's backward
    curvature(h) = |w·(f(x + δ⁺) - 2 f(x) + f(x + δ⁻)) - (Jᵀw)·(δ⁺ + δ⁻)|

A right J leaves the h² term of Taylor's expansion (slope 2 on log-log axes); a wrong one leaves
h·wᵀ(J_true - J)v (slope 1). The curvature is h² where f is smooth and h at a kink. One forward
per step; the slopes are read by ``core/sweep_verdict.py``.
"""

from __future__ import annotations

import torch

from gradviz.core.jacobian import Progress, call_apply
from gradviz.core.perturb import PerturbedForward
from gradviz.core.sweep_run import SweepRun
from gradviz.core.sweep_verdict import flat_tail
from gradviz.core.vjp import vjp
from gradviz.schema.errors import Cancelled, GradvizError

FLOOR_FACTOR = 4.0  # round-off of w·f(x): FLOOR_FACTOR · machine eps · Σ|w||f|
MOVED = " (on inputs moved along a test direction)"



class DirectionalTaylorTest:
    """f along one random direction per input (and along all of them at once), at every step."""

    def __init__(self, run: SweepRun, machine: float) -> None:
        self.run = run
        self.fn, self.args, self.steps = run.fn, list(run.args), run.steps
        self.out_indices, self.in_indices = out_indices, in_indices = run.out_indices, run.in_indices
        outputs, args, generator = run.outputs, run.args, run.generator
        self.f0 = {i: outputs[i].detach().double().cpu().reshape(-1) for i in out_indices}
        self.v = {j: torch.randn(args[j].numel(), generator=generator, dtype=torch.float64) for j in in_indices}
        self.w = {i: torch.randn(outputs[i].numel(), generator=generator, dtype=torch.float64) for i in out_indices}
        self.machine = machine
        leaves = [args[j] for j in in_indices]
        self.g: dict[tuple[int, int], torch.Tensor] = {}
        for i in out_indices:  # Jᵀw for one output at a time: one call of the backward each
            grads = self._vjp([outputs[i]], leaves, [self.w[i]])
            for j, g in zip(in_indices, grads):
                self.g[i, j] = g
        every = self._vjp([outputs[i] for i in out_indices], leaves, [self.w[i] for i in out_indices])
        self.g_all = dict(zip(in_indices, every))
        self.cache: dict[int, tuple] = {}

    def _vjp(self, outs, leaves, ws) -> list[torch.Tensor]:
        grad_outputs = [w.to(dtype=o.dtype, device=o.device).view(o.shape) for o, w in zip(outs, ws)]
        try:
            grads = vjp(outs, leaves, grad_outputs, retain_graph=True)
        except (Exception, SystemExit) as exc:
            raise self.run.backward_error(exc) from None
        return [
            torch.zeros(x.numel(), dtype=torch.float64) if g is None else g.detach().double().cpu().reshape(-1)
            for g, x in zip(grads, leaves)
        ]

    def _moved(self, x: torch.Tensor, v: torch.Tensor, h: float) -> tuple[torch.Tensor, torch.Tensor]:
        """x + h v rounded in x's dtype (keeping its strides), and the step actually taken (float64)."""
        base = x.detach().double().cpu().reshape(-1)
        target = (base + h * v).to(dtype=x.dtype)
        moved = x.detach().clone()
        moved.copy_(target.view(x.shape).to(x.device))
        return moved, moved.detach().double().cpu().reshape(-1) - base

    def _outputs(self, j: int, tracker: Progress):
        """Outputs at x_j ± h v_j for every step (one vmapped call where the forward allows it)."""
        if j in self.cache:
            return self.cache[j]
        x = self.args[j]
        moves = [self._moved(x, sign * self.v[j], h) for h in self.steps for sign in (1, -1)]
        forward = PerturbedForward(self.fn.apply, self.args, j, self.out_indices, clone_inputs=True, batched=self.run.settings.batched)
        try:
            outs = forward(torch.stack([m.detach().reshape(-1) for m, _ in moves]))  # C order, whatever the strides
        except (GradvizError, Cancelled):
            raise
        except (Exception, SystemExit) as exc:
            raise self.run.forward_error(exc, MOVED) from None
        tracker.advance(len(moves))
        self.cache[j] = (outs, [d for _, d in moves])
        return self.cache[j]

    def block(self, i: int, j: int, tracker: Progress) -> tuple[list[float], list[float], float]:
        outs, deltas = self._outputs(j, tracker)
        f = outs[i].double().cpu()
        w, g, f0 = self.w[i], self.g[i, j], self.f0[i]
        return self._curves(f, w, f0, [(g, deltas)])

    def _curves(self, f: torch.Tensor, w, f0, terms) -> tuple[list[float], list[float], float]:
        wf0 = float(w @ f0)
        remainder, curvature = [], []
        for s in range(len(self.steps)):
            plus, minus = f[2 * s], f[2 * s + 1]
            linear_plus = sum(float(g @ d[2 * s]) for g, d in terms)
            linear_both = sum(float(g @ (d[2 * s] + d[2 * s + 1])) for g, d in terms)
            remainder.append(abs(float(w @ plus) - wf0 - linear_plus))
            curvature.append(abs(float(w @ plus) - 2 * wf0 + float(w @ minus) - linear_both))
        # rounding of each f_k adds up like a random walk: ‖w∘f‖₂, not Σ|w f|; the forward's own
        # rounding shows where the smallest steps' remainders lie flat
        floor = FLOOR_FACTOR * self.machine * (float(torch.linalg.vector_norm(w * f0)) + abs(wf0))
        floor = max(floor, flat_tail(self.steps, remainder))
        return remainder, curvature, floor

    def overall(self, tracker: Progress) -> tuple[list[float], list[float], float]:
        """All inputs moved at once, all outputs weighted: the whole Function's Taylor test."""
        rows = []
        deltas: dict[int, list[torch.Tensor]] = {j: [] for j in self.in_indices}
        with torch.enable_grad():
            for h in self.steps:
                for sign in (1, -1):
                    call = list(self.args)
                    for j in self.in_indices:
                        moved, d = self._moved(self.args[j], sign * self.v[j], h)
                        call[j] = moved.requires_grad_(self.args[j].requires_grad)
                        deltas[j].append(d)
                    try:
                        outputs = call_apply(self.fn.apply, call, clone=True)
                    except (Exception, SystemExit) as exc:
                        raise self.run.forward_error(exc, MOVED) from None
                    rows.append(torch.cat([outputs[i].detach().double().cpu().reshape(-1) for i in self.out_indices]))
        tracker.advance(len(rows))
        f = torch.stack(rows)
        w = torch.cat([self.w[i] for i in self.out_indices])
        f0 = torch.cat([self.f0[i] for i in self.out_indices])
        return self._curves(f, w, f0, [(self.g_all[j], deltas[j]) for j in self.in_indices])


"""The sweep's verdict read from curves alone (``core/sweep_verdict.py``), without running a Function.

The curves are built from the formulas the sweep measures: a right backward leaves a Taylor
remainder ~ h², a wrong one ~ h, a kink a second difference ~ h; the Jacobian sweep's error
falls like h² (truncation) and rises like 1/h (round-off). Each verdict is then the one the
module's rules must give.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from gradviz.core.sweep_verdict import (
    NO_EPS_HELPS,
    classify,
    fit_slope,
    flat_tail,
    judge_overall,
    summarize,
    taylor_block,
    valley,
)
from gradviz.schema.settings import SWEEP_STEPS, CheckSettings
from gradviz.schema.sweep import CellCurve, Verdict
from tests.paths import ROOT

STEPS = list(SWEEP_STEPS)  # largest first
H = np.array(STEPS)
FLOOR = 1e-20  # far below every curve here: every point carries its slope


def block(remainder, curvature, ratios=None, *, title="out0 / x"):
    b = taylor_block(STEPS, list(remainder), list(curvature), FLOOR, output=0, input=0, title=title, shape=(3, 3))
    if ratios is not None:
        b.ratios = list(ratios)
        b.errors = list(np.asarray(ratios) * 1e-6)
        b.failing = [int(r > 1) for r in ratios]
    return b


def valley_ratios(bottom: float) -> np.ndarray:
    """Error over the bound: truncation (h²) above ``bottom``, round-off (1/h) below, 0.01 at it."""
    return 0.01 * np.maximum((H / bottom) ** 2, bottom / H)


def test_slope_fit_reads_the_smallest_clean_steps():
    right = H**2 + 1e-12  # slope 2 down to a floor
    assert fit_slope(STEPS, right, floor=1e-12) == pytest.approx(2.0, abs=0.05)
    wrong = 0.3 * H + H**2  # slope 2 at large steps, 1 at small ones: wrong
    assert fit_slope(STEPS, wrong, floor=1e-16) == pytest.approx(1.0, abs=0.05)
    assert fit_slope(STEPS, np.full(len(STEPS), 1e-15), floor=1e-15) is None


def test_valley_takes_the_middle_of_a_flat_bottom():
    assert valley([100, 10, 0.1, 0.1, 0.1, 10, 100]) == 3
    assert valley([np.nan, np.inf]) is None


def test_flat_tail_is_the_round_off_the_smallest_steps_lie_on():
    flat = H**2 + 1e-9  # the smallest steps lie flat at 1e-9
    assert flat_tail(STEPS, flat) == pytest.approx(1e-9, rel=0.01)
    assert flat_tail(STEPS, H**2) == 0.0  # still falling: no floor shown
    assert flat_tail(STEPS[:2], H[:2] ** 2) == 0.0  # too few points


def test_a_kink_is_non_differentiable_whatever_the_remainder():
    b = block(H**2, H, valley_ratios(1e-5))
    classify(b, STEPS, CheckSettings(eps=1e-6), "float64")
    assert b.verdict == Verdict.NON_DIFFERENTIABLE and b.curvature_slope == pytest.approx(1.0, abs=0.05)


def test_slope_one_where_no_step_passes_is_a_wrong_backward():
    b = block(0.3 * H, H**2, np.full(len(STEPS), 5.0))
    classify(b, STEPS, CheckSettings(eps=1e-6), "float64")
    assert b.verdict == Verdict.BACKWARD_WRONG and "best 5×" in b.message


def test_slope_one_that_passes_at_eps_is_called_right_with_the_discrepancy_named():
    settings = CheckSettings(eps=1e-6)
    b = block(0.3 * H, H**2, valley_ratios(1e-6))
    classify(b, STEPS, settings, "float64")
    assert b.verdict == Verdict.BACKWARD_RIGHT and "small discrepancy" in b.message


@pytest.mark.parametrize("eps, verdict", [(1e-8, Verdict.EPS_TOO_SMALL), (1e-3, Verdict.EPS_TOO_LARGE)])
def test_a_right_backward_failing_at_eps_names_the_side_of_the_valley(eps, verdict):
    steps = sorted(set(STEPS) | {eps}, reverse=True)
    h = np.array(steps)
    b = taylor_block(steps, list(h**2), list(h**2), FLOOR, output=0, input=0, title="out0 / x", shape=(3, 3))
    b.ratios = list(0.01 * np.maximum((h / 1e-5) ** 2, 1e-5 / h))  # bottom at 1e-5: fails at eps
    b.errors = list(np.asarray(b.ratios) * 1e-6)
    classify(b, steps, CheckSettings(eps=eps), "float64")
    assert b.verdict == verdict
    assert b.best_eps == pytest.approx(1e-5)
    assert f"use eps={b.best_eps:g}" in b.message
    # each side of the valley has the slope its cause gives: truncation h², round-off 1/h
    assert b.truncation_slope == pytest.approx(2.0, abs=0.05)
    assert b.roundoff_slope == pytest.approx(-1.0, abs=0.05)


def test_no_passing_step_is_precision_or_inconclusive_by_the_remainder():
    settings = CheckSettings(eps=1e-6)
    precise = block(H**2, H**2, np.full(len(STEPS), 3.0))
    classify(precise, STEPS, settings, "float32")
    assert precise.verdict == Verdict.PRECISION
    flat = taylor_block(STEPS, [1e-30] * len(STEPS), [1e-30] * len(STEPS), 1e-20, output=0, input=0, title="t", shape=(1, 1))
    flat.ratios, flat.errors = [3.0] * len(STEPS), [3e-6] * len(STEPS)
    classify(flat, STEPS, settings, "float32")
    assert flat.remainder_slope is None and flat.verdict == Verdict.INCONCLUSIVE
    assert "check in float64" in flat.message


def test_a_block_not_swept_cell_by_cell_is_judged_by_its_remainder_only():
    b = block(H**2, H**2)
    classify(b, STEPS, CheckSettings(eps=1e-6), "float64")
    assert b.verdict == Verdict.BACKWARD_RIGHT and "eps not judged" in b.message and b.best_eps is None


def test_overall_takes_the_worst_swept_block_at_every_step():
    settings = CheckSettings(eps=1e-6)
    a, b, c = block(H**2, H**2, valley_ratios(1e-5)), block(H**2, H**2, valley_ratios(1e-4)), block(H**2, H**2)
    a.cells = [CellCurve(0, k, f"a{k}", 0.0, [float(k)] * len(STEPS)) for k in range(3)]
    b.cells = [CellCurve(0, k, f"b{k}", 0.0, [k + 0.5] * len(STEPS)) for k in range(3)]
    overall = block(H**2, H**2, title="all outputs / all inputs")
    judge_overall(overall, [a, b, c], STEPS, settings, "float64")
    np.testing.assert_array_equal(overall.ratios, np.maximum(a.ratios, b.ratios))
    np.testing.assert_array_equal(overall.failing, np.add(a.failing, b.failing))
    assert [cell.label for cell in overall.cells] == ["b2", "a2", "b1"]
    assert overall.verdict == Verdict.EPS_TOO_SMALL


def test_the_most_serious_block_gives_the_functions_verdict():
    settings = CheckSettings(eps=1e-6)
    right = block(H**2, H**2, valley_ratios(1e-6))
    wrong = block(0.3 * H, H**2, np.full(len(STEPS), 5.0), title="out1 / y")
    for b in (right, wrong):
        classify(b, STEPS, settings, "float64")
    overall = block(H**2, H**2, title="all outputs / all inputs")
    judge_overall(overall, [right, wrong], STEPS, settings, "float64")
    verdict, message = summarize([right, wrong], overall, settings)
    assert verdict == Verdict.BACKWARD_WRONG in NO_EPS_HELPS and message == wrong.message
    verdict, message = summarize([right], overall, settings)  # all right: the whole Function's words
    assert verdict == overall.verdict and not message.startswith("all outputs")


def test_the_verdict_module_imports_without_torch():
    code = "import sys\nsys.modules['torch'] = None\nimport gradviz.core.sweep_verdict\n"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr

"""The float64 re-check's message is the one diagnosis the warnings, the JSON and the window's Why panel show."""

from __future__ import annotations

from gradviz.schema.precision import KINKS_ONLY, PRECISION_ONLY, REAL_BUG, PrecisionCheck


def _check(float64_failing: int | None, only_at_kinks: bool = False) -> PrecisionCheck:
    return PrecisionCheck(
        dtype="float32", n_failing=5, n_cells=144, float64_failing=float64_failing, float64_cells=144,
        eps=1e-6, atol=1e-5, rtol=1e-3, only_at_kinks=only_at_kinks,
    )


def test_failures_only_at_kinks_are_never_called_a_real_bug():
    found = _check(2, only_at_kinks=True)
    assert found.verdict == KINKS_ONLY
    assert "only at kinks" in found.message and "real bug" not in found.message
    assert PrecisionCheck.from_dict(found.to_dict()).message == found.message  # survives the worker's JSON


def test_the_other_verdicts_are_unchanged():
    assert _check(2).verdict == REAL_BUG and "real bug" in _check(2).message
    assert _check(0, only_at_kinks=True).verdict == PRECISION_ONLY  # nothing fails in float64: no kink to blame

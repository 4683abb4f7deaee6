"""The memory study's display prep, from real worker payloads and hand-made edge cases (no Qt)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import numpy as np
import pytest

from gradviz.app.memory_display import (
    MemoryResult,
    bar_top,
    checks_html,
    headline,
    measured_points,
    read_memory,
    sweep_curves,
)
from gradviz.schema.memory import ConvBNStudy
from gradviz.schema.requests import MemoryRequest
from gradviz.schema.settings import MemoryOptions
from gradviz.schema.units import UNITS, choose_unit, format_bytes
from gradviz.worker.handlers import handle_memory
from tests.paths import ROOT


@pytest.fixture(scope="module")
def payload() -> dict:
    return handle_memory(MemoryRequest(MemoryOptions(layers=3, shape=(4, 3, 20, 20), out_channels=8)), None)


@pytest.fixture(scope="module")
def result(payload) -> MemoryResult:
    """The worker's dict read as the window reads it."""
    read, error = read_memory(payload)
    assert error is None and read is not None
    return read


def test_read_memory_gives_the_typed_study_and_sweep(payload, result):
    assert result.study == ConvBNStudy.from_dict(payload["study"])
    assert [row.to_dict() for row in result.sweep] == payload["sweep"]


@pytest.mark.parametrize(
    "broken", [{}, {"study": {"variants": {}}}, {"study": None}, {"study": {"device": "cpu"}, "sweep": [{"x": 1}]}]
)
def test_a_study_that_cannot_be_read_is_an_error_not_a_crash(payload, broken):
    read, error = read_memory(broken)
    assert read is None and error is not None and error.startswith("The memory study could not be read")


def test_a_sweep_row_that_cannot_be_read_is_an_error(payload):
    read, error = read_memory({**payload, "sweep": [{**payload["sweep"][0], "stray": 1}]})
    assert read is None and "stray" in (error or "")


def test_choose_unit_is_the_largest_binary_unit_that_keeps_a_number_at_least_one():
    assert choose_unit(0) == UNITS[0] and choose_unit(1023) == ("B", 1)
    assert choose_unit(1024) == ("KiB", 1024) and choose_unit(5 * 2**30) == ("GiB", 2**30)
    assert choose_unit(2**50) == ("TiB", 2**40)


@pytest.mark.parametrize(
    ("n", "unit", "text"),
    [(384, ("B", 1), "384 B"), (1536, ("KiB", 1024), "1.50 KiB"), (17.1 * 2**20, ("MiB", 2**20), "17.1 MiB"),
     (300 * 2**10, ("KiB", 1024), "300 KiB"), (512, ("KiB", 1024), "0.50 KiB")],
)
def test_format_bytes_in_a_unit_keeps_about_three_significant_figures(n, unit, text):
    assert format_bytes(n, unit, three_figures=True) == text


def test_the_unit_comes_from_the_taller_bar_with_its_ctx_attributes(payload, result):
    variants = payload["study"]["variants"]
    fused = variants["fused"]["saved_bytes"] + variants["fused"]["ctx_attribute_bytes"]
    assert bar_top(result.study) == max(variants["unfused"]["saved_bytes"], fused)
    assert 1 <= bar_top(result.study) / choose_unit(bar_top(result.study))[1] < 1024


def test_headline_and_checks_say_what_was_measured(payload, result):
    study = payload["study"]
    unit = choose_unit(bar_top(result.study))
    difference = study["saved_difference_bytes"]
    percent = 100 * difference / study["variants"]["unfused"]["saved_bytes"]
    assert headline(result.study, unit) == (
        f"fused saves {format_bytes(difference, unit, three_figures=True)} ({percent:.1f} %)"
    )
    html = checks_html(result.study)
    assert f"{difference:,} B measured" in html and f"{study['formula_bytes']:,} B by formula" in html
    assert "3 layers, input 4x3x20x20, float32 on cpu" in html and html.count("✓") == 3
    worse = dataclasses.replace(result.study, saved_difference_bytes=-difference, grads_match=False)
    assert headline(worse, unit).startswith("fused costs ") and checks_html(worse).count("✗") == 2


def test_sweep_curves_are_the_rows_of_each_variant_and_batch(payload, result):
    sweep, size = payload["sweep"], 1024
    curves = sweep_curves(result.sweep, size)
    batches = sorted({r["batch"] for r in sweep})
    assert list(curves) == [(v, b) for v in ("unfused", "fused") for b in batches]
    for (variant, batch), (x, y) in curves.items():
        rows = sorted((r for r in sweep if r["batch"] == batch), key=lambda r: r["layers"])
        np.testing.assert_array_equal(x, [r["layers"] for r in rows])
        np.testing.assert_allclose(y, [r[f"{variant}_saved_bytes"] / size for r in rows])


def test_the_measured_points_are_the_bars(payload, result):
    study = payload["study"]
    x, y = measured_points(result.study, result.sweep, 1)
    assert x == [study["layers"]] * 2
    assert y == [study["variants"][v]["saved_bytes"] for v in ("unfused", "fused")]
    assert measured_points(result.study, [], 1) == ([], [])


def test_memory_display_imports_without_qt():
    code = "import sys\nfor name in ('PySide6', 'pyqtgraph', 'torch'): sys.modules[name] = None\nimport gradviz.app.memory_display\n"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr


def test_node_summary_adds_up_to_each_variants_saved_bytes(payload, result):
    from gradviz.app.memory_display import node_summary, why_text

    study = result.study
    for name in ("unfused", "fused"):
        variant = payload["study"]["variants"][name]
        kinds = node_summary(study.variants[name])
        assert sum(b for *_, b in kinds) == variant["saved_bytes"]
        assert sum(count for _, _, count, _ in kinds) == len(variant["tensors"])
    unfused = dict((op, (nodes, count)) for op, nodes, count, _ in node_summary(study.unfused))
    assert unfused == {"ConvolutionBackward0": (3, 6), "NativeBatchNormBackward0": (3, 9)}  # 3 layers
    text = why_text(study, choose_unit(bar_top(study)))
    assert "NativeBatchNormBackward0 ×3 keep 9 tensors" in text and "FusedConvBN2DFunctionBackward ×3 keep 6" in text

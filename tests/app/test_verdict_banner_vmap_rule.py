"""The banner shows a warned vmap_rule check as a warning with its detail, never as "declared
unsupported" and never in the verdict (the verdict stays gradcheck's)."""

from __future__ import annotations

import torch

import gradviz
from gradviz.app.panels.verdict_banner import VerdictBanner
from tests.real_world import vmap_functions as vf


def test_warned_vmap_rule_is_a_warning_line_not_a_failure(qtbot):
    x = vf.example_inputs(torch.device("cpu"), torch.float64)[0]
    result = gradviz.check(vf.RowSumWrongRule, x, raise_exception=False).result
    rule = next(c for c in result.checks if c.name == "vmap_rule")
    assert rule.status == "warned" and result.passed == torch.autograd.gradcheck(
        vf.RowSumWrongRule.apply, (x,), raise_exception=False
    )
    banner = VerdictBanner()
    qtbot.addWidget(banner)
    banner.show_result(result)
    assert banner.state == ("passed" if result.passed else "failed")
    assert "⚠ <b>vmap_rule</b>: RowSumWrongRule under torch.func.vmap" in banner.details.text()
    assert "declared unsupported" not in banner.details.text()

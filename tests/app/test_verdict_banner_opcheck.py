"""The banner of a custom op whose gradient is right and whose fake kernel is missing: the verdict
is gradcheck's (passed), and the warned registration checks are named beside it with what breaks
and how to fix it. The result travels as the worker sends it (its summary and array files)."""

from __future__ import annotations

import torch

import gradviz
from gradviz.app.panels.verdict_banner import VerdictBanner
from gradviz.schema.result_files import read_check_result, write_check_result
from tests.real_world import registration_ops as reg


def test_warned_registration_checks_are_beside_a_passed_verdict(qtbot, tmp_path):
    x = reg.example_inputs(torch.device("cpu"), torch.float64)[0]
    expected = torch.autograd.gradcheck(reg.square_no_fake, (x,), raise_exception=False)
    result = read_check_result(write_check_result(gradviz.check(reg.square_no_fake, x).result, tmp_path))
    assert result.passed == expected
    banner = VerdictBanner()
    qtbot.addWidget(banner)
    banner.show_result(result)
    assert banner.state == "passed"
    details = banner.details.text()
    assert "⚠ <b>opcheck_faketensor</b>: opcheck's test_faketensor fails" in details
    assert "torch.compile" in details and "@square_no_fake.register_fake" in details
    assert "warned (not part of gradcheck's verdict): opcheck_faketensor" in banner.headline.text()

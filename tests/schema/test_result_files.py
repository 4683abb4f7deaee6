"""A result written by the worker reads back as the very CheckResult the core made."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from gradviz.core.check import check_source
from gradviz.core.loader import load_file
from gradviz.schema.library import builtin_functions, find_builtin
from gradviz.schema.result_files import read_check_result, write_check_result


@pytest.mark.parametrize("name", [*[e.name for e in builtin_functions()][:6], "buggy_linear_transpose"])
def test_write_then_read_gives_the_same_result(tmp_path, name):
    result = check_source(load_file(find_builtin(name)))
    summary = json.loads(json.dumps(write_check_result(result, tmp_path), allow_nan=False))  # through strict JSON
    back = read_check_result(summary)
    for f in dataclasses.fields(result):
        if f.name == "blocks":
            continue
        if f.name == "seconds":  # rounded to microseconds in the JSON
            assert back.seconds == pytest.approx(result.seconds, abs=1e-6)
            continue
        assert getattr(back, f.name) == getattr(result, f.name), f.name
    assert back.passed == result.passed and len(back.blocks) == len(result.blocks)
    for a, b in zip(result.blocks, back.blocks):
        for field in dataclasses.fields(a):
            x, y = getattr(a, field.name), getattr(b, field.name)
            if isinstance(x, np.ndarray):
                np.testing.assert_array_equal(x, y)
                assert x.dtype == y.dtype
            elif isinstance(x, float) and np.isnan(x):
                assert np.isnan(y)
            else:
                assert x == y, field.name


def test_a_pickled_array_file_is_refused(tmp_path):
    result = check_source(load_file(find_builtin("mul_constant")))
    summary = write_check_result(result, tmp_path)
    target = summary["blocks"][0]["files"]["analytic"]
    np.save(target, np.array([object()], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="pickle"):
        read_check_result(summary)

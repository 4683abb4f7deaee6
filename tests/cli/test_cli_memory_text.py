"""``gradviz memory``'s text is printed from the typed ConvBNStudy, the same from the worker's dict."""

from __future__ import annotations

import json

from gradviz.cli.memory import format_memory
from gradviz.core.memory import conv_bn_study
from gradviz.schema.memory import ConvBNStudy
from gradviz.schema.units import KIB, format_bytes


def test_the_memory_text_reads_the_model():
    study = conv_bn_study(2, (2, 3, 8, 8), 4, 3, dtype="float64")
    text = format_memory(study)
    assert format_memory(ConvBNStudy.from_dict(json.loads(json.dumps(study.to_dict(), allow_nan=False)))) == text
    assert f"saved {format_bytes(study.unfused.saved_bytes, KIB)}" in text
    assert f"+ {format_bytes(study.fused.ctx_attribute_bytes, KIB)} on ctx" in text
    assert f"(formula: {format_bytes(study.formula_bytes, KIB)})" in text
    assert "CUDA" not in text  # measured on the CPU: no peaks

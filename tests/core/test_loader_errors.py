"""Every way user code can fail becomes a UserCodeError naming the kind, the file and the line."""

from __future__ import annotations

import pytest
import torch

from gradviz.core.check import check_source
from gradviz.core.loader import choose_function, load_file, load_source
from gradviz.schema.errors import SettingsError, UserCodeError
from gradviz.schema.settings import CheckSettings
from tests.sources import HEADER, SQUARE


def line_of(source: str, text: str) -> int:
    """1-based line of the first line containing ``text`` (after the fixture's dedent/lstrip)."""
    lines = source.lstrip("\n").splitlines()
    return next(k for k, line in enumerate(lines, 1) if text in line)


def run(write_source, source: str) -> UserCodeError:
    path = write_source(source)
    with pytest.raises(UserCodeError) as info:
        check_source(load_file(path))
    err = info.value
    assert err.filename == str(path.resolve())
    return err


def test_good_source_passes(write_source):
    result = check_source(load_file(write_source(SQUARE)))
    assert result.passed and result.function == "Square"


def test_syntax_error_names_line_and_column(write_source):
    source = SQUARE.replace("return x * x", "return x * * x")
    err = run(write_source, source)
    assert err.kind == "syntax"
    assert err.lineno == line_of(source, "return x * * x")
    assert "Syntax error" in err.message and f"line {err.lineno}" in err.message


def test_exception_at_import(write_source):
    source = SQUARE + "\nraise ValueError('config missing')\n"
    err = run(write_source, source)
    assert err.kind == "import"
    assert err.lineno == line_of(source, "config missing")
    assert "ValueError: config missing" in err.message
    assert all(f.filename == err.filename for f in err.frames)


def test_sys_exit_at_import_is_an_error_not_an_exit(write_source):
    err = run(write_source, SQUARE + "\nimport sys\nsys.exit(0)\n")
    assert err.kind == "import" and "sys.exit(0)" in err.message


def test_no_function(write_source):
    err = run(write_source, HEADER + "x = 1\n")
    assert err.kind == "no_function"


def test_imported_function_does_not_count(write_source):
    err = run(write_source, HEADER + "from torch.autograd.function import InplaceFunction\n")
    assert err.kind == "no_function"


def test_empty_file(write_source):
    err = run(write_source, "   \n")
    assert err.kind == "no_function" and "empty" in err.message


def test_not_utf8(tmp_path):
    path = tmp_path / "latin1.py"
    path.write_bytes(b"import torch\n# caf\xe9\n")
    with pytest.raises(UserCodeError) as info:
        load_file(path)
    assert "UTF-8" in info.value.message and info.value.lineno == 2


def test_unknown_function_name_lists_the_defined_ones(write_source):
    with pytest.raises(UserCodeError) as info:
        choose_function(load_file(write_source(SQUARE)), "Cube")
    assert info.value.kind == "unknown_function" and "Square" in info.value.message


def test_several_functions_chosen_by_name_or_first(write_source):
    source = SQUARE + SQUARE.replace("class Square", "class Square2").replace(HEADER, "")
    loaded = load_file(write_source(source))
    assert list(loaded.functions) == ["Square", "Square2"]
    assert choose_function(loaded).__name__ == "Square"
    assert any("Several Functions" in n for n in loaded.notes)
    assert check_source(loaded, "Square2").function == "Square2"


def test_exception_in_example_inputs(write_source):
    source = SQUARE.replace("return (torch.randn(3", "return (torch.randn(-3")
    err = run(write_source, source)
    assert err.kind == "example_inputs"
    assert err.lineno == line_of(source, "torch.randn(-3")


def test_example_inputs_returning_non_tuple(write_source):
    source = SQUARE.replace(
        "return (torch.randn(3, device=device, dtype=dtype, requires_grad=True),)", "return {'x': 1}"
    )
    err = run(write_source, source)
    assert err.kind == "example_inputs" and "tuple" in err.message


def test_exception_in_forward(write_source):
    source = SQUARE.replace("return x * x", "return x @ torch.ones(7, dtype=x.dtype)")
    err = run(write_source, source)
    assert err.kind == "forward"
    assert err.lineno == line_of(source, "torch.ones(7")
    assert "Square.forward raised RuntimeError" in err.message


def test_exception_in_backward(write_source):
    source = SQUARE.replace("return 2 * x * g", "return 2 * x * g * undefined_name")
    err = run(write_source, source)
    assert err.kind == "backward"
    assert err.lineno == line_of(source, "undefined_name")
    assert "NameError" in err.message
    assert "torch" not in err.traceback_text().replace("torch.", "")  # user frames only


def test_wrong_number_of_gradients_points_at_return(write_source):
    source = SQUARE.replace("return 2 * x * g", "return 2 * x * g, x")
    err = run(write_source, source)
    assert err.kind == "gradient_count"
    assert err.lineno == line_of(source, "return 2 * x * g, x")
    assert "expected 1, got 2" in err.message


def test_gradient_of_wrong_shape_points_at_return(write_source):
    source = SQUARE.replace("return 2 * x * g", "return (2 * x * g).sum()")
    source = source.replace("torch.randn(3,", "torch.randn(3, 2,")
    err = run(write_source, source)
    assert err.kind == "gradient_shape"
    assert err.lineno == line_of(source, "return (2 * x * g).sum()")
    assert "the gradient for x (its 1st input) in the wrong shape" in err.message and "[3, 2]" in err.message


def test_forward_returning_non_tensor(write_source):
    err = run(write_source, SQUARE.replace("return x * x", "return float(x.sum())"))
    assert err.kind == "bad_output" and "float" in err.message


def test_editor_source_has_line_text_in_traceback():
    source = SQUARE.lstrip("\n").replace("return 2 * x * g", "return 2 * x * g * nope")
    with pytest.raises(UserCodeError) as info:
        check_source(load_source(source, "<editor>"))
    assert info.value.filename == "<editor>"
    assert "nope" in info.value.traceback_text()


def test_cuda_without_cuda_is_a_settings_error(write_source):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(SettingsError, match="CUDA"):
        check_source(load_file(write_source(SQUARE)), settings=CheckSettings(device="cuda"))


@pytest.mark.parametrize(
    "settings, match",
    [
        (CheckSettings(device="tpu"), "device"),
        (CheckSettings(dtype="int8"), "dtype"),
        (CheckSettings(eps=0.0), "eps"),
        (CheckSettings(atol=-1.0), "atol"),
    ],
)
def test_bad_settings(write_source, settings, match):
    with pytest.raises(SettingsError, match=match):
        check_source(load_file(write_source(SQUARE)), settings=settings)


def test_missing_example_inputs_uses_random_tensors_and_says_so(write_source):
    source = SQUARE.split("def example_inputs")[0]
    result = check_source(load_file(write_source(source)))
    assert result.passed
    assert result.inputs[0].shape == (4, 4)
    assert any("No example_inputs" in n for n in result.notes)


def test_inputs_without_requires_grad_are_made_to_and_noted(write_source):
    source = SQUARE.replace(", requires_grad=True", "")
    result = check_source(load_file(write_source(source)))
    assert result.inputs[0].requires_grad
    assert any("No input had requires_grad" in n for n in result.notes)


def test_inputs_keep_user_requires_grad(write_source):
    source = (
        HEADER
        + """
class Mul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g * b, g * a

def example_inputs(device, dtype):
    return torch.randn(3, requires_grad=True), torch.randn(3), torch.arange(3)
"""
    )
    source = source.replace("def forward(ctx, a, b)", "def forward(ctx, a, b, c)")
    source = source.replace("return g * b, g * a", "return g * b, g * a, None")
    result = check_source(load_file(write_source(source)))
    assert [t.requires_grad for t in result.inputs] == [True, False, False]
    assert [(b.output, b.input) for b in result.blocks] == [(0, 0)]
    assert result.inputs[2].dtype == "int64"  # integer tensors keep their dtype


@pytest.mark.parametrize("value", ["['Square']", "{}", "3"])
def test_function_constant_that_is_not_a_name_is_a_clear_error(write_source, value):
    err = run(write_source, SQUARE + f"\nFUNCTION = {value}\n")
    assert err.kind == "unknown_function" and "FUNCTION must be the name of a Function" in err.message

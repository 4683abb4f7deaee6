"""Complex Functions get gradcheck's verdict: checked through view_as_real, right and wrong backwards alike."""

import pytest
import torch
from torch.autograd import Function

import gradviz
from gradviz.core.check import check_function
from gradviz.core.inputs import prepare_inputs


class Square(Function):
    """z², holomorphic: grad = g * conj(2z)."""

    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return z * z

    @staticmethod
    def backward(ctx, g):
        (z,) = ctx.saved_tensors
        return g * (2 * z).conj()


class SquareNoConj(Square):
    """The classic slip: the holomorphic derivative without PyTorch's conjugate."""

    @staticmethod
    def backward(ctx, g):
        (z,) = ctx.saved_tensors
        return g * 2 * z


class AbsSquared(Function):
    """|z|², complex to real: grad = g * 2z."""

    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return (z * z.conj()).real

    @staticmethod
    def backward(ctx, g):
        (z,) = ctx.saved_tensors
        return g * 2 * z


class AbsSquaredConj(AbsSquared):
    @staticmethod
    def backward(ctx, g):
        (z,) = ctx.saved_tensors
        return g * 2 * z.conj()


class Polar(Function):
    """r·e^{iθ} from two real inputs: real to complex."""

    @staticmethod
    def forward(ctx, r, theta):
        ctx.save_for_backward(r, theta)
        return torch.polar(r, theta)

    @staticmethod
    def backward(ctx, g):
        r, theta = ctx.saved_tensors
        e = torch.polar(torch.ones_like(r), theta)
        return (g * e.conj()).real, (g * (1j * r * e).conj()).real


class PolarSwapped(Polar):
    @staticmethod
    def backward(ctx, g):
        r, theta = ctx.saved_tensors
        e = torch.polar(torch.ones_like(r), theta)
        return (g * (1j * r * e).conj()).real, (g * e.conj()).real


class ScaleByReal(Function):
    """z * w with complex z and real w: mixed inputs."""

    @staticmethod
    def forward(ctx, z, w):
        ctx.save_for_backward(z, w)
        return z * w

    @staticmethod
    def backward(ctx, g):
        z, w = ctx.saved_tensors
        return g * w, (g * z.conj()).real


class ScaleByRealNoReal(ScaleByReal):
    @staticmethod
    def backward(ctx, g):
        z, w = ctx.saved_tensors
        return g * w, (g * z).real


class ConjOut(Function):
    """conj(z), returned with the conjugate bit set."""

    @staticmethod
    def forward(ctx, z):
        return z.conj()

    @staticmethod
    def backward(ctx, g):
        return g.conj()


class ConjOutForgot(ConjOut):
    @staticmethod
    def backward(ctx, g):
        return g


def _z(dtype=torch.complex128, n=5):
    return torch.randn(n, dtype=dtype, requires_grad=True)


def _real(n=5):
    return torch.rand(n, dtype=torch.float64).add(0.5).requires_grad_()


CASES = [
    (Square, lambda: (_z(),)),
    (SquareNoConj, lambda: (_z(),)),
    (AbsSquared, lambda: (_z(),)),
    (AbsSquaredConj, lambda: (_z(),)),
    (Polar, lambda: (_real(), _real())),
    (PolarSwapped, lambda: (_real(), _real())),
    (ScaleByReal, lambda: (_z(), _real())),
    (ScaleByRealNoReal, lambda: (_z(), _real())),
    (ConjOut, lambda: (_z(),)),
    (ConjOutForgot, lambda: (_z(),)),
]


@pytest.mark.parametrize("fn, make", CASES, ids=[c[0].__name__ for c in CASES])
def test_the_verdict_is_gradchecks(fn, make):
    torch.manual_seed(0)
    inputs = make()
    expected = torch.autograd.gradcheck(fn.apply, inputs, raise_exception=False)
    report = gradviz.check(fn, inputs, raise_exception=False)
    assert report.passed == expected, report.message()


def test_both_verdicts_occur_among_the_cases():
    """The cases above are no use unless gradcheck passes some and fails others."""
    verdicts = set()
    for fn, make in CASES:
        torch.manual_seed(0)
        verdicts.add(torch.autograd.gradcheck(fn.apply, make(), raise_exception=False))
    assert verdicts == {True, False}


def test_a_complex_input_is_read_through_view_as_real():
    torch.manual_seed(0)
    z = _z(n=3)
    report = gradviz.check(SquareNoConj, (z,), raise_exception=False)
    block = report.block(0, 0)
    # the analytic Jacobian equals autograd's real Jacobian of the same backward through view_as_real
    expected = torch.autograd.functional.jacobian(
        lambda r: torch.view_as_real(SquareNoConj.apply(torch.view_as_complex(r))),
        torch.view_as_real(z.detach()),
    ).reshape(6, 6)
    assert torch.allclose(torch.from_numpy(block.analytic), expected)
    assert [i.shape for i in report.result.inputs] == [(3, 2)]
    assert any("view_as_real(z)" in note for note in report.notes)
    assert report.failing_cells, "a wrong conjugate must show failing cells"
    assert ".conj()" in report.hints[0]


class SquareTripled(Square):
    @staticmethod
    def backward(ctx, g):
        (z,) = ctx.saved_tensors
        return g * (3 * z).conj()


def test_the_conjugate_hint_comes_only_where_a_conjugate_is_missing():
    torch.manual_seed(0)
    assert not gradviz.check(Square, (_z(),)).hints
    tripled = gradviz.check(SquareTripled, (_z(),), raise_exception=False)
    assert not tripled.passed and not any(".conj()" in h for h in tripled.hints)
    mixed = gradviz.check(ScaleByRealNoReal, (_z(), _real()), raise_exception=False)
    assert not mixed.block(0, 0).n_failing and ".conj()" in mixed.block(0, 1).hints[0]
    assert not any(h.startswith("On every failing cell analytic = -numerical,") for h in mixed.block(0, 1).hints)


def test_a_complex_output_of_real_inputs_is_noted():
    torch.manual_seed(0)
    report = gradviz.check(Polar, (_real(), _real()))
    assert report.passed and any("returns a complex tensor" in note for note in report.notes)
    assert not any("although" in note for note in report.notes)  # complex128 is what float64 asks for


def test_the_callers_complex_tensor_is_untouched():
    z = _z()
    before = z.detach().clone()
    gradviz.check(Square, (z,))
    assert torch.equal(z.detach(), before) and z.grad is None


def test_complex64_gets_the_float32_warning():
    torch.manual_seed(0)
    inputs = prepare_inputs((_z(torch.complex64),), None, None, ["z"])
    result = check_function(Square, inputs)
    assert result.dtype == "float32" and any("float32" in w for w in result.warnings)

"""Property tests: on random Functions, gradviz's verdict is ``torch.autograd.gradcheck``'s.

Hypothesis draws small chains of ops (elementwise, reductions, views, binary ops with a second
input) inside a ``torch.autograd.Function`` whose backward is the hand-written VJP chain
(``random_functions.py``), correct or with one mutation. gradcheck is the oracle: a mutation may
happen to be a no-op (transposing a symmetric gradient, a factor within rtol), so the test asks
for gradcheck's verdict, not for FAIL.

Deterministic in CI (``derandomize=True``, no example database). For a longer random search:
``GRADVIZ_HYPOTHESIS_PROFILE=deep pytest tests/core/test_properties.py``.
"""

from __future__ import annotations

import contextlib
import os

import numpy as np
import torch
from hypothesis import HealthCheck, Phase, given, settings

from gradviz.core.check import CheckSettings, check_function
from gradviz.core.inputs import prepare_inputs
from tests.core.random_functions import (
    MUTATION_KINDS,
    OP_KINDS,
    Mutation,
    Program,
    make_function,
    mutated_programs,
    programs,
)
from tests.real_world.oracle import gradcheck_passes, torch_gradcheck

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    database=None,
    max_examples=400,
    print_blob=False,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "deep", deadline=None, database=None, max_examples=3000, suppress_health_check=[HealthCheck.too_slow]
)
PROFILE = settings.get_profile(os.environ.get("GRADVIZ_HYPOTHESIS_PROFILE", "ci"))

CPU = torch.device("cpu")
SETTINGS = CheckSettings(eps=1e-6, atol=1e-5, rtol=1e-3)


def gradviz_result(fn, program: Program):
    prepared = prepare_inputs(program.inputs(), CPU, torch.float64, program.names())
    return check_function(fn, prepared, SETTINGS)


def gradcheck_verdict(fn, program: Program) -> bool:
    """gradcheck with its defaults apart from the tolerances, on fresh copies of the same inputs."""
    return gradcheck_passes(
        lambda *a: fn.apply(*a), program.inputs(), eps=SETTINGS.eps, atol=SETTINGS.atol, rtol=SETTINGS.rtol
    )


def gradcheck_reason(fn, program: Program) -> str:
    """gradcheck's own first line on why it fails (for messages only)."""
    verdict = torch_gradcheck(
        lambda *a: fn.apply(*a),
        program.inputs(),
        failing_on=(Exception,),  # GradcheckError, or whatever the Function raised
        eps=SETTINGS.eps,
        atol=SETTINGS.atol,
        rtol=SETTINGS.rtol,
    )
    return verdict.reason or "passes"


def report(fn, program: Program, mutation: Mutation | None, result) -> str:
    """The Function, both verdicts and the worst cell of each failing block."""
    lines = [
        program.describe(mutation),
        f"gradviz: {'PASS' if result.passed else 'FAIL'} "
        f"(analytic path {result.analytic_path}, numerical path {result.numerical_path})",
        f"gradcheck: {gradcheck_reason(fn, program)}",
    ]
    for block in result.blocks:
        if not block.passed:
            row, col = block.worst
            lines.append(
                f"  {result.cell_label(block, row, col)}: analytic {block.analytic[row, col]:.6g}, "
                f"numerical {block.numerical[row, col]:.6g} ({block.n_failing} failing cells)"
            )
    lines += [f"  {c.name}: {c.status} ({c.detail})" for c in result.extra_checks if c.failed]
    return "\n".join(lines)


@settings(PROFILE)
@given(programs())
def test_correct_backward_passes(program):
    fn = make_function(program)
    result = gradviz_result(fn, program)
    assert gradcheck_verdict(fn, program), "generator bug: gradcheck rejects the correct backward\n" + report(
        fn, program, None, result
    )
    assert result.passed, report(fn, program, None, result)


@settings(PROFILE)
@given(mutated_programs())
def test_mutated_backward_verdict_is_gradchecks(case):
    program, mutation = case
    fn = make_function(program, mutation)
    result = gradviz_result(fn, program)
    assert result.passed == gradcheck_verdict(fn, program), report(fn, program, mutation, result)


def reference_analytic(fn, program: Program) -> list[np.ndarray]:
    """Blocks (output 0, input j) from torch.autograd.functional.jacobian through fn's backward."""
    inputs = program.inputs()
    jac = torch.autograd.functional.jacobian(lambda *a: fn.apply(*a), inputs)
    out_numel = max(1, int(np.prod(program.out_shape)))
    return [j.detach().reshape(out_numel, x.numel()).numpy() for j, x in zip(jac, inputs)]


def reference_numerical(fn, program: Program, eps: float) -> list[np.ndarray]:
    """Blocks by a plain central-difference loop: (f(x + eps e_c) - f(x - eps e_c)) / (2 eps)."""
    inputs = [x.detach() for x in program.inputs()]
    blocks = []
    with torch.no_grad():
        for x in inputs:
            columns = []
            for c in range(x.numel()):
                flat = x.view(-1)
                orig = flat[c].item()
                flat[c] = orig + eps
                plus = fn.apply(*inputs).reshape(-1).clone()
                flat[c] = orig - eps
                minus = fn.apply(*inputs).reshape(-1).clone()
                flat[c] = orig
                columns.append((plus - minus) / (2 * eps))
            blocks.append(torch.stack(columns, dim=1).numpy())
    return blocks


@settings(PROFILE)
@given(mutated_programs())
def test_blocks_equal_reference_jacobians(case):
    """gradviz's analytic blocks are the backward's Jacobian; its numerical ones plain central differences.

    Tolerances are far below gradcheck's: only rounding differences of batched kernels are allowed.
    """
    program, mutation = case
    fn = make_function(program, mutation)
    result = gradviz_result(fn, program)
    analytic = reference_analytic(fn, program)
    numerical = reference_numerical(fn, program, SETTINGS.eps)
    assert [b.input for b in result.blocks] == list(range(len(analytic)))
    for block in result.blocks:
        a, n = analytic[block.input], numerical[block.input]
        same_analytic = np.allclose(block.analytic, a, rtol=1e-12, atol=1e-12)
        same_numerical = np.allclose(block.numerical, n, rtol=1e-7, atol=1e-8)
        assert same_analytic and same_numerical, (
            f"{report(fn, program, mutation, result)}\n"
            f"block out0 / {program.names()[block.input]}:\n"
            f"  gradviz analytic\n{block.analytic}\n  functional.jacobian\n{a}\n"
            f"  gradviz numerical\n{block.numerical}\n  central differences\n{n}"
        )


class _EveryKindReached(Exception):
    """Ends the search below early: the question is answered once every kind has been drawn."""


def test_generator_reaches_every_op_and_mutation():
    """Guards against a generator that silently stopped drawing an op or a mutation.

    The question is whether each kind turns up within 1000 examples; the search stops at the
    example where the last one turns up (24 with the CI profile's fixed seed), as the answer can
    no longer change. Drawing all 1000 would cost ~25 s of CPU (~45 s in a loaded CI run) for nothing."""
    ops, mutations = set(), set()

    @settings(PROFILE, max_examples=1000, phases=[Phase.generate])
    @given(mutated_programs())
    def collect(case):
        program, mutation = case
        ops.update(type(op).__name__ for op in program.ops)
        mutations.add(mutation.kind)
        if ops == set(OP_KINDS) and mutations == set(MUTATION_KINDS):
            raise _EveryKindReached

    with contextlib.suppress(_EveryKindReached):
        collect()
    assert ops == set(OP_KINDS)
    assert mutations == set(MUTATION_KINDS)

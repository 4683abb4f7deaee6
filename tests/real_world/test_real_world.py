"""gradviz against PyTorch on custom Functions collected from PyTorch's tests and public projects.

For every corpus file (``tests/real_world/*.py``; see each file's docstring for its source):

1. gradviz's verdict is ``torch.autograd.gradcheck``'s (with gradcheck's default checks);
2. with ``jacobian_only=True`` it is the verdict of comparing ``torch.autograd.functional.jacobian``
   with central differences, cell by cell, under gradcheck's tolerance rule;
3. every Jacobian block gradviz shows equals PyTorch's (analytic) and an independent
   central-difference loop (numerical);
4. the corpus itself is sound: gradcheck fails exactly on the files that declare ``BUG``.

PyTorch's side is computed by ``oracle.py`` from fresh inputs built the way gradviz builds them
(``example_inputs(cpu, float64)`` under ``torch.manual_seed(0)``).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from pathlib import Path

import numpy as np
import pytest
import torch

from gradviz.core.check import check_source
from gradviz.core.loader import choose_function, load_file
from gradviz.schema.errors import GradvizError
from gradviz.schema.results import CheckResult
from gradviz.schema.settings import CheckSettings

from . import oracle

CORPUS = oracle.corpus_files()
TOL = oracle.Tolerances(eps=1e-6, atol=1e-5, rtol=1e-3)
SEED = 0
# Errors that say the file could not even be loaded: never a verdict, always a failure.
LOAD_KINDS = {"syntax", "import", "no_function", "unknown_function", "example_inputs"}


def settings(**extra) -> CheckSettings:
    fields = {f.name for f in dataclasses.fields(CheckSettings)}
    missing = set(extra) - fields
    if missing:
        pytest.fail(f"CheckSettings has no field {', '.join(sorted(missing))} yet")
    return CheckSettings(eps=TOL.eps, atol=TOL.atol, rtol=TOL.rtol, seed=SEED, **extra)


@dataclasses.dataclass
class GradvizRun:
    passed: bool
    result: CheckResult | None
    error: GradvizError | None = None

    def describe(self) -> str:
        if self.error is not None:
            return f"raised {self.error.kind}: {self.error}"
        failing = [
            f"out{b.output}/{self.result.inputs[b.input].name}: {b.n_failing} cells, max |a-n| {b.max_abs_error:.3g}"
            for b in self.result.blocks
            if not b.passed
        ]
        extra = [f"{c.name}: {c.detail}" for c in self.result.checks if c.failed]
        return "; ".join(failing + extra) or ("passed" if self.passed else "failed")


def run_gradviz(path: Path, **extra) -> GradvizRun:
    """gradviz's verdict; an error from forward or backward, or a refusal to give a verdict
    (nothing to check), counts as FAIL, as gradcheck raising does."""
    loaded = load_file(path)
    choose_function(loaded, None)
    try:
        result = check_source(loaded, None, settings(**extra))
    except GradvizError as exc:
        if exc.kind in LOAD_KINDS:
            raise
        return GradvizRun(False, None, exc)
    return GradvizRun(result.passed, result)


@functools.cache
def default_run(path: Path) -> GradvizRun:
    return run_gradviz(path)


@functools.cache
def pytorch(path: Path):
    """Module, Function and gradcheck's verdict for one corpus file."""
    module = oracle.load_module(path)
    fn = oracle.chosen_function(module)
    verdict = oracle.gradcheck_verdict(fn, oracle.example_args(module, SEED), TOL)
    return module, fn, verdict


@functools.cache
def pytorch_jacobians(path: Path):
    """Analytic blocks (or the exception), numerical blocks (or the exception), and how much two
    analytic Jacobians differ (non-zero only for a backward that draws random numbers)."""
    module, fn, _ = pytorch(path)
    try:
        analytic = oracle.analytical_jacobian(fn, oracle.example_args(module, SEED))
        again = oracle.analytical_jacobian(fn, oracle.example_args(module, SEED))
        spread = max(
            (float(np.nanmax(np.abs(analytic[k] - again[k]), initial=0.0)) for k in analytic), default=0.0
        )
    except Exception as exc:
        analytic, spread = exc, 0.0
    try:
        numerical = oracle.numerical_jacobian(fn, oracle.example_args(module, SEED), TOL.eps)
    except Exception as exc:
        numerical = exc
    return analytic, numerical, spread


def test_corpus_is_large_and_balanced():
    assert len(CORPUS) >= 36
    buggy = [p for p in CORPUS if pytorch(p)[0].__dict__.get("BUG")]
    assert 0.35 <= len(buggy) / len(CORPUS) <= 0.65
    for path in CORPUS:
        module = pytorch(path)[0]
        assert module.__doc__ and "Source:" in module.__doc__, path.name
        assert callable(getattr(module, "example_inputs", None)), path.name


def refused_as_empty(run: GradvizRun, path: Path) -> bool:
    """gradviz said "nothing to check"; true only if PyTorch's Jacobians have no cell either."""
    if run.error is None or run.error.kind != "nothing_to_check":
        return False
    _, numerical, _ = pytorch_jacobians(path)
    assert not isinstance(numerical, Exception) and all(b.size == 0 for b in numerical.values()), (
        f"gradviz found nothing to check, PyTorch has Jacobian cells: {run.describe()}"
    )
    return True


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_gradcheck_fails_exactly_on_declared_bugs(path):
    module, _, verdict = pytorch(path)
    bug = getattr(module, "BUG", None)
    if bug is None:
        assert verdict.passed, f"gradcheck fails on a file without BUG: {verdict.reason}"
    else:
        assert not verdict.passed, f"gradcheck passes on a file with BUG = {bug!r}"


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_verdict_is_gradchecks(path):
    _, _, expected = pytorch(path)
    run = default_run(path)
    assert run.passed == expected.passed, (
        f"gradviz {'PASS' if run.passed else 'FAIL'} ({run.describe()}), "
        f"gradcheck {'PASS' if expected.passed else 'FAIL'} ({expected.reason or 'passed'})"
    )


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_jacobian_only_verdict(path):
    module, fn, _ = pytorch(path)
    expected = oracle.jacobian_verdict(lambda: oracle.example_args(module, SEED), fn, TOL)
    run = run_gradviz(path, jacobian_only=True)
    if refused_as_empty(run, path):
        return
    assert run.passed == expected.passed, (
        f"gradviz (jacobian_only) {'PASS' if run.passed else 'FAIL'} ({run.describe()}), "
        f"Jacobian oracle {'PASS' if expected.passed else 'FAIL'} ({expected.reason or 'passed'})"
    )


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_jacobians_are_pytorchs(path):
    analytic, numerical, spread = pytorch_jacobians(path)
    run = default_run(path)
    if refused_as_empty(run, path):
        return
    if run.result is None:
        # gradviz reported the user's code as failing; PyTorch must fail there too.
        assert isinstance(analytic, Exception) or isinstance(numerical, Exception), (
            f"gradviz raised ({run.describe()}) where PyTorch computes both Jacobians"
        )
        return
    assert not isinstance(numerical, Exception), (
        f"gradviz has a numerical Jacobian where PyTorch raised {numerical!r}"
    )
    got = {(b.output, b.input): b for b in run.result.blocks}
    assert set(got) == set(numerical), f"gradviz blocks {sorted(got)}, PyTorch's {sorted(numerical)}"
    for key, block in sorted(got.items()):
        label = f"block out{key[0]} / input{key[1]}"
        # One ulp of an output of size ~1 is 2.2e-16 / (2 eps) = 1.1e-10 in a numerical cell: BLAS may
        # round a freshly allocated copy differently, so allow a few ulps and nothing more.
        np.testing.assert_allclose(
            block.numerical, numerical[key], rtol=1e-9, atol=1e-9, err_msg=f"{label}: numerical"
        )
        if isinstance(analytic, Exception):
            pytest.fail(f"gradviz shows an analytic {label} where functional.jacobian raised {analytic!r}")
        torch.testing.assert_close(
            torch.from_numpy(block.analytic),
            torch.from_numpy(analytic[key]),
            rtol=1e-10,
            atol=1e-12 + 10 * spread,
            equal_nan=True,
            msg=lambda m, label=label: (
                f"{label}: analytic differs from torch.autograd.functional.jacobian\n{m}"
            ),
        )


def forward_parameter_names(fn: type[torch.autograd.Function]) -> list[str] | None:
    """Names of apply's positional arguments as forward declares them (None for ``*args``)."""
    params = list(inspect.signature(fn.forward).parameters.values())
    takes_ctx = (
        fn.setup_context is torch.autograd.Function.setup_context
    )  # no setup_context: forward(ctx, ...)
    params = params[1:] if takes_ctx else params
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return None
    return [p.name for p in params]


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_inputs_are_named_as_in_forward(path):
    """Cell labels (``out0[2] / x[1]``) use forward's own parameter names."""
    _, fn, _ = pytorch(path)
    expected = forward_parameter_names(fn)
    run = default_run(path)
    if expected is None or run.result is None:
        return
    names = [info.name for info in run.result.inputs]
    assert names == expected[: len(names)], (
        f"gradviz labels the inputs {names}, forward names them {expected}"
    )

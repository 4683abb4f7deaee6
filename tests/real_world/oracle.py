"""PyTorch's own answers: gradcheck's verdict (for any test) and both Jacobians of a corpus file.

Torch only (no gradviz imports), so any test can hold gradviz to these. :func:`gradcheck_passes`
is the one place a test asks "what does ``torch.autograd.gradcheck`` say with these options".
The corpus helpers build their inputs afresh from the file's ``example_inputs`` under ``torch.manual_seed(seed)``, exactly as
gradviz is told to, and calls the Function through :func:`call_function`, which hands ``apply``
clones of the tensor arguments (``x.clone()`` keeps the graph, so in-place Functions work).

Jacobian convention (gradcheck's): block ``(i, j)`` has one row per element of output ``i`` and
one column per element of input ``j``, both flattened in C order.
"""

from __future__ import annotations

import importlib.util
import itertools
import sys
import uuid
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import torch
from torch.autograd.gradcheck import GradcheckError
from torch.func import functional_call

CPU = torch.device("cpu")
BlockKey = tuple[int, int]


HERE = Path(__file__).resolve().parent
# custom ops are global to the process and named ns::name, not module attributes: test_custom_ops.py checks them
NOT_CORPUS = {"__init__.py", "oracle.py", "custom_ops_collection.py", "registration_ops.py", "list_ops.py"}


def corpus_files() -> list[Path]:
    """The collection's Function files: the one list both corpus tests (core and API) walk."""
    return sorted(p for p in HERE.glob("*.py") if p.name not in NOT_CORPUS and not p.name.startswith("test_"))


@dataclass(frozen=True)
class Tolerances:
    eps: float = 1e-6
    atol: float = 1e-5
    rtol: float = 1e-3


def load_module(path: str | Path) -> ModuleType:
    """Run a corpus file as a fresh module, with its folder on ``sys.path`` while it loads.

    Sibling modules it imports (``from realpkg.ops import X``) are dropped from ``sys.modules``
    afterwards, so whoever loads the file next finds the same clean interpreter state.
    """
    path = Path(path).resolve()
    folder = str(path.parent)
    name = f"real_world_{path.stem}_{uuid.uuid4().hex[:8]}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    before = set(sys.modules)
    sys.path.insert(0, folder)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(folder)
        for added in set(sys.modules) - before:
            file = getattr(sys.modules[added], "__file__", None) or ""
            if added == name or file.startswith(folder):
                del sys.modules[added]
    return module


def is_function(obj: object) -> bool:
    return isinstance(obj, type) and issubclass(obj, torch.autograd.Function)


def chosen_function(module: ModuleType) -> type[torch.autograd.Function]:
    """``FUNCTION`` if the file names one, else the first Function class the file defines."""
    name = getattr(module, "FUNCTION", None)
    if name is not None:
        return getattr(module, name)
    return next(
        obj for obj in vars(module).values() if is_function(obj) and obj.__module__ == module.__name__
    )


def example_args(module: ModuleType, seed: int = 0, dtype: torch.dtype = torch.float64) -> tuple:
    """The positional arguments of ``apply``, built by the file under a fixed seed."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        args = module.example_inputs(CPU, dtype)
    return tuple(args) if isinstance(args, tuple | list) else (args,)


def call_function(fn: type[torch.autograd.Function], *args) -> tuple:
    """``fn.apply`` on clones of the tensor arguments; the outputs as a tuple."""
    out = fn.apply(*(a.clone() if isinstance(a, torch.Tensor) else a for a in args))
    return out if isinstance(out, tuple) else (out,)


def grad_positions(args: tuple) -> list[int]:
    return [j for j, a in enumerate(args) if isinstance(a, torch.Tensor) and a.requires_grad]


def checked_outputs(fn: type[torch.autograd.Function], args: tuple) -> tuple[list[int], bool]:
    """Positions of the differentiable outputs; without any, of the floating-point ones.

    The flag says whether any output is differentiable (gradcheck then only requires the
    numerical Jacobian of the floating-point outputs to be zero).
    """
    with torch.enable_grad():
        outputs = call_function(fn, *args)
    differentiable = [i for i, o in enumerate(outputs) if isinstance(o, torch.Tensor) and o.requires_grad]
    if differentiable:
        return differentiable, True
    floating = [i for i, o in enumerate(outputs) if isinstance(o, torch.Tensor) and o.is_floating_point()]
    return floating, False


@dataclass
class Verdict:
    passed: bool
    reason: str = ""


def torch_gradcheck(
    fn: Callable[..., Any],
    args: tuple,
    *,
    failing_on: tuple[type[BaseException], ...] = (),
    quiet: bool = False,
    copies: bool = False,
    **options: Any,
) -> Verdict:
    """``torch.autograd.gradcheck(fn, args, **options)``'s verdict, with exactly the caller's
    options (gradcheck's own defaults for the rest), and its first line on why it failed.

    A failed check (gradcheck's ``GradcheckError``) is a failing verdict, as with
    ``raise_exception=False``; so is an exception of a type in ``failing_on`` (a backward that
    raises, a Function without a jvp); any other exception errors the test.
    ``copies``: gradcheck gets detached copies of the tensor arguments (``requires_grad`` kept),
    so the caller's tensors are neither perturbed nor given a ``.grad``.
    ``quiet``: gradcheck's warnings (its "not double precision" advice) are silenced.
    """
    if copies:
        args = tuple(a.detach().clone().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a for a in args)
    with warnings.catch_warnings():
        if quiet:
            warnings.simplefilter("ignore")
        try:
            # raise_exception=True only so the message is there: gradcheck's raise_exception=False
            # is exactly "catch GradcheckError, return False" around the same check
            return Verdict(bool(torch.autograd.gradcheck(fn, args, raise_exception=True, **options)))
        except (GradcheckError, *failing_on) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            return Verdict(False, f"{type(exc).__name__}: {first}")


def gradcheck_passes(fn: Callable[..., Any], args: tuple, **how: Any) -> bool:
    """:func:`torch_gradcheck`'s verdict alone (same keywords)."""
    return torch_gradcheck(fn, args, **how).passed


def module_gradcheck_passes(module: torch.nn.Module, x: torch.Tensor, names: list[str] | tuple[str, ...]) -> bool:
    """gradcheck of ``module`` as a function of ``x`` and the named parameters (copies of them,
    passed in through ``functional_call``), with gradcheck's defaults."""
    params = tuple(module.get_parameter(n).detach().clone().requires_grad_(True) for n in names)

    def call(x, *ps):
        return functional_call(module, dict(zip(names, ps, strict=True)), (x,))

    return gradcheck_passes(call, (x, *params))


def gradcheck_verdict(
    fn: type[torch.autograd.Function], args: tuple, tol: Tolerances = Tolerances()
) -> Verdict:
    """A corpus Function under gradcheck's default checks, ``apply`` fed clones (:func:`call_function`);
    raising counts as failing."""

    def wrapper(*a):
        return call_function(fn, *a)

    return torch_gradcheck(
        wrapper, args, failing_on=(Exception,), quiet=True, eps=tol.eps, atol=tol.atol, rtol=tol.rtol
    )


def analytical_jacobian(fn: type[torch.autograd.Function], args: tuple) -> dict[BlockKey, np.ndarray]:
    """Rows of every block through the Function's backward, one one-hot grad_output at a time."""
    positions = grad_positions(args)
    out_indices, differentiable = checked_outputs(fn, args)
    if not differentiable:
        return {
            (i, j): np.zeros((_output_numel(fn, args, i), args[j].numel()))
            for i in out_indices
            for j in positions
        }

    # gradcheck's definition: one backward per row, through the very tensors passed in (so an
    # input passed twice, or a gradient with another layout, is seen as gradcheck sees it)
    with torch.enable_grad():
        outputs = call_function(fn, *args)
    leaves = [args[j] for j in positions]
    blocks = {}
    for i in out_indices:
        out = outputs[i]
        rows = {j: [] for j in positions}
        for r in range(out.numel()):
            grad_out = torch.zeros(out.numel(), dtype=out.dtype, device=out.device)
            grad_out[r] = 1
            grads = torch.autograd.grad(out, leaves, grad_out.view_as(out), retain_graph=True, allow_unused=True)
            for j, g in zip(positions, grads):
                if g is None:
                    g = torch.zeros_like(args[j])
                elif g.layout != torch.strided:
                    g = g.to_dense()
                rows[j].append(g.detach().reshape(-1).to(torch.float64))
        for j in positions:
            stacked = torch.stack(rows[j]) if rows[j] else torch.zeros(0, args[j].numel(), dtype=torch.float64)
            blocks[i, j] = stacked.numpy().copy()
    return blocks


def _output_numel(fn, args, i) -> int:
    with torch.no_grad():
        return call_function(fn, *args)[i].numel()


def numerical_jacobian(
    fn: type[torch.autograd.Function], args: tuple, eps: float = 1e-6
) -> dict[BlockKey, np.ndarray]:
    """Central differences, one element at a time: ``(f(x + eps e_c) - f(x - eps e_c)) / (2 eps)``.

    The element is perturbed in place and restored to its exact value; ``call_function`` passes
    clones to ``apply``, and every output is cloned before the next call can touch it.
    """
    positions = grad_positions(args)
    out_indices, _ = checked_outputs(fn, args)
    blocks: dict[BlockKey, np.ndarray] = {}
    for j in positions:
        x = args[j]
        columns: dict[int, list[torch.Tensor]] = {i: [] for i in out_indices}
        for idx in itertools.product(*(range(n) for n in x.shape)):
            with torch.no_grad():
                orig = x[idx].clone()
                x[idx] = orig + eps
            plus = _cloned_outputs(fn, args, out_indices)
            with torch.no_grad():
                x[idx] = orig - eps
            minus = _cloned_outputs(fn, args, out_indices)
            with torch.no_grad():
                x[idx] = orig
            for i in out_indices:
                columns[i].append(((plus[i] - minus[i]) / (2 * eps)).reshape(-1))
        for i in out_indices:
            cols = columns[i]
            blocks[i, j] = torch.stack(cols, dim=1).to(torch.float64).numpy().copy()
    return blocks


def _cloned_outputs(fn, args, out_indices) -> dict[int, torch.Tensor]:
    outputs = call_function(fn, *args)
    return {i: outputs[i].detach().clone() for i in out_indices}


def allclose(analytic: np.ndarray, numerical: np.ndarray, tol: Tolerances = Tolerances()) -> bool:
    """gradcheck's cell rule ``|a - n| <= atol + rtol * |n|``; a NaN anywhere fails."""
    return bool(np.all(np.abs(analytic - numerical) <= tol.atol + tol.rtol * np.abs(numerical)))


def jacobian_verdict(
    make_args: Callable[[], tuple], fn: type[torch.autograd.Function], tol: Tolerances = Tolerances()
) -> Verdict:
    """Jacobian-only verdict: every analytic block allclose to its numerical one."""
    try:
        analytic = analytical_jacobian(fn, make_args())
    except Exception as exc:
        return Verdict(False, f"backward raised {type(exc).__name__}: {exc}")
    try:
        numerical = numerical_jacobian(fn, make_args(), tol.eps)
    except Exception as exc:
        return Verdict(False, f"forward raised {type(exc).__name__}: {exc}")
    for key, n in numerical.items():
        if not allclose(analytic[key], n, tol):
            worst = float(np.nanmax(np.abs(analytic[key] - n))) if n.size else 0.0
            return Verdict(False, f"block out{key[0]} / input{key[1]}: max |a - n| = {worst:.3g}")
    return Verdict(True)

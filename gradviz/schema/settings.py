"""What a check is asked to do: the one place gradviz's defaults live.

The CLI, the session format, the run bar and the core all read their defaults from here, and
every value that arrives from outside (a flag, a session file, a request) goes through
``validate`` before anything runs, so a bad value is one clear sentence, never a traceback.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

from gradviz.schema.errors import SettingsError

DTYPES = ("float64", "float32", "float16", "bfloat16")  # what a check may run in
MEMORY_DTYPES = ("float64", "float32")  # what the conv-BN memory study runs in
NO_CUDA_DEVICE = "no CUDA device is visible (driver missing or CUDA_VISIBLE_DEVICES empty)"  # why cuda is refused
DEFAULT_CHUNK_BYTES = 8 * 2**20  # small chunks stay in cache: measured faster than 32 MiB
SEED_RANGE = (-(2**63), 2**64 - 1)  # what torch.manual_seed accepts
# what a failing torch.library.opcheck test of a custom op does: "warn" (a named check beside
# gradcheck's verdict, which it leaves alone) or "fail" (it fails the verdict too)
OPCHECK_MODES = ("warn", "fail")


@dataclass
class Tolerance:
    """gradcheck's rule: a cell passes when ``|a - n| <= atol + rtol * |n|``; the defaults are
    gradcheck's (float64's in ``DTYPE_DEFAULTS``)."""

    eps: float = 1e-6
    atol: float = 1e-5
    rtol: float = 1e-3

    def bound(self, numerical: Any) -> Any:
        """The allowed |a - n| for numerical value(s) ``numerical`` (a float or an array)."""
        return self.atol + self.rtol * abs(numerical)


# Each dtype's finite-difference step and tolerances. float64 keeps gradcheck's defaults (the
# verdict is gradcheck's); the lower precisions take JAX check_grads' gradient tolerances
# (jax/_src/public_test_util.py: default_gradient_tolerance, used as both atol and rtol). JAX
# uses one step, 1e-4, for every dtype; here each dtype gets a step near the cube root of its
# machine epsilon, where the central difference's truncation (~eps²) meets its round-off
# (~machine eps / eps), chosen by sweeping the built-in correct Functions (plus tanh and SiLU):
# in float32 a step of 1e-4 fails LinearFunction (its 20-term sums round to 2x the bound) while
# 3e-3 passes every one with a 6x margin; in float16 and bfloat16 0.1 passes every elementwise
# one (LinearFunction's 20-term sums pass only at steps of 1 or more there; the float64
# re-check explains such failures).
DTYPE_DEFAULTS = {
    "float64": Tolerance(),  # gradcheck's: eps=1e-6, atol=1e-5, rtol=1e-3
    "float32": Tolerance(eps=3e-3, atol=2e-3, rtol=2e-3),
    "float16": Tolerance(eps=1e-1, atol=1e-2, rtol=1e-2),
    "bfloat16": Tolerance(eps=1e-1, atol=1e-1, rtol=1e-1),
}
TOLERANCE_FIELDS = ("eps", "atol", "rtol")  # the settings each dtype has its own defaults for
MACHINE_EPS = {"float64": 2.0**-52, "float32": 2.0**-23, "float16": 2.0**-10, "bfloat16": 2.0**-7}


def dtype_defaults(dtype: str) -> Tolerance:
    """eps, atol and rtol for a check in ``dtype`` (a copy: the caller may change it)."""
    if dtype not in DTYPE_DEFAULTS:
        raise SettingsError(f"Unsupported dtype {dtype!r}: use {', '.join(DTYPES)}.")
    return Tolerance(**asdict(DTYPE_DEFAULTS[dtype]))


# gradcheck's boolean options that CheckSettings carries under gradcheck's own names
GRADCHECK_FLAGS = (
    "fast_mode",
    "check_batched_grad",
    "check_batched_forward_grad",
    "check_forward_ad",
    "check_backward_ad",
)


@dataclass
class CheckSettings:
    """One check's settings; the defaults are gradcheck's."""

    device: str = "cpu"
    dtype: str = "float64"
    eps: float = DTYPE_DEFAULTS["float64"].eps  # the dtype's tolerances: ``for_dtype`` for another dtype
    atol: float = DTYPE_DEFAULTS["float64"].atol
    rtol: float = DTYPE_DEFAULTS["float64"].rtol
    seed: int = 0
    max_jacobian_bytes: int | None = None  # None: the two Jacobians may take a quarter of RAM
    jacobian_only: bool = False  # skip gradcheck's other default checks (reentrancy, grad_output, undefined)
    all_checks: bool = False  # add double backward (gradgradcheck)
    nondet_tol: float = 0.0
    # gradcheck's own options, with its defaults and meaning (see gradviz/core/gradcheck_options.py)
    fast_mode: bool = False  # the verdict is gradcheck(fast_mode=True)'s: random projections u^T J v
    check_batched_grad: bool = False  # also gradcheck's batched-grad test (prototype vmap over backward)
    check_batched_forward_grad: bool = False  # also gradcheck's batched test of forward AD (needs check_forward_ad)
    check_forward_ad: bool = False  # also the forward-mode Jacobian (jvp / forward AD): CheckResult.forward_blocks
    check_backward_ad: bool = True  # False: forward mode alone decides (needs check_forward_ad, as gradcheck)
    masked: bool | None = None  # masked semantics of sparse inputs; no effect on dense ones
    check_vmap_rule: bool | None = None  # beyond gradcheck, never the verdict; None: where a vmap rule exists
    opcheck: str = "warn"  # a custom op's registration (opcheck's tests): OPCHECK_MODES
    chunk_bytes: int = DEFAULT_CHUNK_BYTES
    batched: bool = True  # vmap batches where they agree with plain calls; False: plain calls only
    # explanations, never part of the verdict: a float64 re-check when a lower precision fails,
    # and one-sided differences on failing cells to mark kinks
    explain: bool = True
    jitter: float = 0.0  # > 0: move each differentiable input element by up to jitter·(1+|x|), away from kinks

    @classmethod
    def for_dtype(cls, dtype: str, **overrides: Any) -> CheckSettings:
        """Settings for ``dtype`` with that dtype's eps, atol and rtol (``DTYPE_DEFAULTS``)."""
        values = {**asdict(dtype_defaults(dtype)), "dtype": dtype, **overrides}
        return cls(**values)

    def tolerance(self) -> Tolerance:
        return Tolerance(self.eps, self.atol, self.rtol)

    def uses_dtype_defaults(self) -> bool:
        """eps, atol and rtol are exactly this dtype's defaults."""
        return self.dtype in DTYPE_DEFAULTS and self.tolerance() == DTYPE_DEFAULTS[self.dtype]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CheckSettings:
        """Settings from JSON-like data, refusing unknown names; validated."""
        settings = cls(**known_options(cls, data, "setting"))
        settings.validate()
        return settings

    def validate(self) -> None:
        """Raise SettingsError naming the first bad value."""
        if not isinstance(self.device, str) or not self.device:
            raise SettingsError(f"device must be a name such as cpu or cuda, not {self.device!r}.")
        if self.dtype not in DTYPES:
            raise SettingsError(f"Unsupported dtype {self.dtype!r}: use {', '.join(DTYPES)}.")
        check_positive("eps", self.eps)
        check_non_negative("jitter", self.jitter)
        for name in ("atol", "rtol", "nondet_tol"):
            check_non_negative(name, getattr(self, name))
        check_seed(self.seed)
        if self.max_jacobian_bytes is not None:
            check_positive_int("the memory limit (bytes)", self.max_jacobian_bytes)
        check_positive_int("chunk_bytes", self.chunk_bytes)
        for name in ("jacobian_only", "all_checks", "batched", "explain", *GRADCHECK_FLAGS):
            if not isinstance(getattr(self, name), bool):
                raise SettingsError(f"{name} must be true or false, not {getattr(self, name)!r}.")
        for name in ("masked", "check_vmap_rule"):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), bool):
                raise SettingsError(f"{name} must be true, false or null, not {getattr(self, name)!r}.")
        if self.opcheck not in OPCHECK_MODES:
            raise SettingsError(f"opcheck must be {' or '.join(OPCHECK_MODES)}, not {self.opcheck!r}.")
        self._validate_modes()

    def _validate_modes(self) -> None:
        """gradcheck's own preconditions (it raises before computing anything)."""
        if not (self.check_forward_ad or self.check_backward_ad):
            raise SettingsError(
                "Expected at least one of check_forward_ad or check_backward_ad to be True (gradcheck "
                "refuses check_backward_ad=False alone too): keep check_backward_ad=True or set check_forward_ad=True."
            )
        if self.check_batched_grad and not self.check_backward_ad:
            raise SettingsError("Setting check_batched_grad=True requires check_backward_ad to be True.")
        if self.check_batched_forward_grad and not self.check_forward_ad:
            raise SettingsError(
                "Setting check_batched_forward_grad=True requires check_forward_ad to be True (as gradcheck requires)."
            )


def _number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SettingsError(f"{name} must be a number, not {value!r}.")
    if not math.isfinite(value):
        raise SettingsError(f"{name} must be a finite number, not {value}.")
    return float(value)


def check_positive(name: str, value: object) -> float:
    """A finite number > 0, or SettingsError."""
    number = _number(name, value)
    if not number > 0:
        raise SettingsError(f"{name} must be positive, got {value}.")
    return number


def check_non_negative(name: str, value: object) -> float:
    """A finite number >= 0, or SettingsError."""
    number = _number(name, value)
    if number < 0:
        raise SettingsError(f"{name} must be >= 0, got {value}.")
    return number


def check_positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise SettingsError(f"{name} must be a positive whole number, got {value!r}.")
    return value


def check_seed(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SettingsError(f"seed must be a whole number, not {value!r}.")
    low, high = SEED_RANGE
    if not low <= value <= high:
        raise SettingsError(f"seed {value} is out of range: use a whole number from {low} to {high}.")
    return value


def check_timeout(value: object) -> float | None:
    """A run time limit in seconds: None (no limit) or a finite number > 0."""
    if value is None:
        return None
    return check_positive("timeout", value)


def memory_limit_bytes(megabytes: object) -> int:
    """``--max-memory-mb`` as bytes: a finite number > 0 that is at least one byte."""
    number = check_positive("the memory limit (MB)", megabytes) * 2**20
    if not math.isfinite(number) or number >= 2**63:
        raise SettingsError(f"the memory limit (MB) is too large: {megabytes}.")
    if number < 1:
        raise SettingsError(f"the memory limit (MB) is too small: {megabytes}.")
    return int(number)


def default_memory_limit() -> int:
    """A quarter of physical RAM, and at most half of what this process may still allocate
    under RLIMIT_AS and its cgroup's limit (``machine.memory_headroom``): room for both
    Jacobians and everything else."""
    from gradviz.schema.machine import memory_headroom, physical_memory

    ram = physical_memory()
    limit = ram // 4 if ram else 4 * 2**30
    headroom = memory_headroom()
    return limit if headroom is None else max(1, min(limit, headroom // 2))


def _half_decades(first: int, last: int) -> tuple[float, ...]:
    """10^(-first/2) ... 10^(-last/2), three significant digits: 0.1, 0.0316, 0.01, ..."""
    return tuple(float(f"{10 ** (-k / 2):.3g}") for k in range(first, last + 1))


SWEEP_STEPS = _half_decades(2, 20)  # 1e-1 ... 1e-10 in half-decades


@dataclass
class SweepOptions:
    """What an eps sweep measures, beside the check's own settings."""

    steps: tuple[float, ...] = SWEEP_STEPS  # finite-difference steps; the check's eps is always added
    block: tuple[int, int] | None = None  # (output, input) to sweep cell by cell; None: every block that fits
    worst_cells: int = 3  # cells whose own error curves are kept (the worst at the check's eps)
    max_block_cells: int = 2**24  # larger blocks get the directional Taylor test only
    max_columns: int = 256  # wider inputs: this many columns at every step (the worst quarter, the rest at random)

    def to_dict(self) -> dict[str, Any]:
        return {
            "steps": list(self.steps),
            "block": list(self.block) if self.block is not None else None,
            "worst_cells": self.worst_cells,
            "max_block_cells": self.max_block_cells,
            "max_columns": self.max_columns,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SweepOptions:
        """Options from JSON-like data, refusing unknown names; validated."""
        values = known_options(cls, data, "sweep option")
        if values.get("steps") is not None:
            if not isinstance(values["steps"], list | tuple):
                raise SettingsError(f"steps must be a list of numbers, not {values['steps']!r}.")
            values["steps"] = tuple(values["steps"])
        if values.get("block") is not None:
            values["block"] = parse_block(values["block"])
        options = cls(**values)
        options.validate()
        return options

    def validate(self) -> None:
        if not self.steps:
            raise SettingsError("An eps sweep needs at least one step.")
        for step in self.steps:
            check_positive("each sweep step", step)
        if self.block is not None:
            parse_block(self.block)
        check_non_negative("worst_cells", self.worst_cells)
        if isinstance(self.worst_cells, bool) or not isinstance(self.worst_cells, int):
            raise SettingsError(f"worst_cells must be a whole number, not {self.worst_cells!r}.")
        check_positive_int("max_block_cells", self.max_block_cells)
        check_positive_int("max_columns", self.max_columns)


def known_options(cls: type, data: dict[str, Any], what: str) -> dict[str, Any]:
    """A copy of ``data`` when every name in it is a field of the dataclass ``cls``; otherwise
    SettingsError naming the others ("Unknown sweep option(s): stpes.")."""
    unknown = sorted(set(data) - {f.name for f in fields(cls)})
    if unknown:
        raise SettingsError(f"Unknown {what}(s): {', '.join(unknown)}.")
    return dict(data)


def parse_block(value: object) -> tuple[int, int]:
    """``(output, input)`` from a pair or from text such as ``"0,1"``; SettingsError otherwise."""
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(",")]
        try:
            value = [int(p) for p in parts]
        except ValueError:
            raise SettingsError(f"A block is two indices output,input such as 0,1; got {value!r}.") from None
    if (
        not isinstance(value, list | tuple)
        or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)
    ):
        raise SettingsError(f"A block is two indices output,input such as 0,1; got {value!r}.")
    return int(value[0]), int(value[1])


RUN_TIMEOUT_S = 120  # the window stops a run after this long unless the user changes it (0: never)


@dataclass
class MemoryOptions:
    """The conv-BN memory study: a stack of Conv2d + BatchNorm2d pairs against the fused Function."""

    layers: int = 3
    shape: tuple[int, int, int, int] = (8, 3, 32, 32)  # N, C, H, W of the input
    out_channels: int = 16
    kernel: int = 3
    device: str = "cpu"
    dtype: str = "float32"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "shape": list(self.shape)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MemoryOptions:
        """Options from JSON-like data (a session, a request), refusing unknown names; validated."""
        values = known_options(cls, data, "memory option")
        if "shape" in values:
            shape = values["shape"]
            if not isinstance(shape, list | tuple) or len(shape) != 4:
                raise SettingsError(f"The input shape must be four sizes N, C, H, W; got {shape!r}.")
            values["shape"] = tuple(shape)
        options = cls(**values)
        options.validate()
        return options

    def validate(self) -> None:
        for name in ("layers", "out_channels", "kernel"):
            check_positive_int(name, getattr(self, name))
        for size in self.shape:
            check_positive_int("each input size (N, C, H, W)", size)
        if self.dtype not in MEMORY_DTYPES:
            raise SettingsError(f"Unsupported dtype {self.dtype!r}: use {' or '.join(MEMORY_DTYPES)}.")
        if not isinstance(self.device, str) or not self.device:
            raise SettingsError(f"device must be a name such as cpu or cuda, not {self.device!r}.")

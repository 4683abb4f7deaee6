"""What a check is asked to do: the one place gradviz's defaults live.

The CLI, the session format, the run bar and the core all read their defaults from here, and
every value that arrives from outside (a flag, a session file, a request) goes through
``validate`` before anything runs, so a bad value is one clear sentence, never a traceback.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, fields
from typing import Any

from gradviz.schema.errors import SettingsError

DTYPES = ("float64", "float32")
DEFAULT_CHUNK_BYTES = 8 * 2**20  # small chunks stay in cache: measured faster than 32 MiB
SEED_RANGE = (-(2**63), 2**64 - 1)  # what torch.manual_seed accepts


@dataclass
class Tolerance:
    """gradcheck's rule: a cell passes when ``|a - n| <= atol + rtol * |n|``."""

    eps: float = 1e-6
    atol: float = 1e-5
    rtol: float = 1e-3

    def bound(self, numerical: Any) -> Any:
        """The allowed |a - n| for numerical value(s) ``numerical`` (a float or an array)."""
        return self.atol + self.rtol * abs(numerical)


@dataclass
class CheckSettings:
    """One check's settings; the defaults are gradcheck's."""

    device: str = "cpu"
    dtype: str = "float64"
    eps: float = 1e-6
    atol: float = 1e-5
    rtol: float = 1e-3
    seed: int = 0
    max_jacobian_bytes: int | None = None  # None: the two Jacobians may take a quarter of RAM
    jacobian_only: bool = False  # skip gradcheck's other default checks (reentrancy, grad_output, undefined)
    all_checks: bool = False  # add double backward (gradgradcheck)
    nondet_tol: float = 0.0
    chunk_bytes: int = DEFAULT_CHUNK_BYTES
    batched: bool = True  # vmap batches where they agree with plain calls; False: plain calls only

    def tolerance(self) -> Tolerance:
        return Tolerance(self.eps, self.atol, self.rtol)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CheckSettings:
        """Settings from JSON-like data, refusing unknown names; validated."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise SettingsError(f"Unknown setting(s): {', '.join(unknown)}.")
        settings = cls(**data)
        settings.validate()
        return settings

    def validate(self) -> None:
        """Raise SettingsError naming the first bad value."""
        if not isinstance(self.device, str) or not self.device:
            raise SettingsError(f"device must be a name such as cpu or cuda, not {self.device!r}.")
        if self.dtype not in DTYPES:
            raise SettingsError(f"Unsupported dtype {self.dtype!r}: use {' or '.join(DTYPES)}.")
        check_positive("eps", self.eps)
        for name in ("atol", "rtol", "nondet_tol"):
            check_non_negative(name, getattr(self, name))
        check_seed(self.seed)
        if self.max_jacobian_bytes is not None:
            check_positive_int("the memory limit (bytes)", self.max_jacobian_bytes)
        check_positive_int("chunk_bytes", self.chunk_bytes)
        for name in ("jacobian_only", "all_checks", "batched"):
            if not isinstance(getattr(self, name), bool):
                raise SettingsError(f"{name} must be true or false, not {getattr(self, name)!r}.")


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
    """A quarter of physical RAM: room for both Jacobians and everything else."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 4
    except (ValueError, OSError, AttributeError):
        return 4 * 2**30


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
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise SettingsError(f"Unknown memory option(s): {', '.join(unknown)}.")
        values = dict(data)
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
        if self.dtype not in DTYPES:
            raise SettingsError(f"Unsupported dtype {self.dtype!r}: use {' or '.join(DTYPES)}.")
        if not isinstance(self.device, str) or not self.device:
            raise SettingsError(f"device must be a name such as cpu or cuda, not {self.device!r}.")

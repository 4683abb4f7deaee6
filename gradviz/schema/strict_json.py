"""Strict JSON, the one encoding of non-finite numbers in everything gradviz writes.

JSON has no NaN or Infinity (``json.dumps`` writes ``NaN``, which other parsers refuse), so a
non-finite float travels as one of the strings ``"nan"``, ``"inf"``, ``"-inf"``: lossless (null
would lose the sign of an infinity) and readable by any JSON parser. Writers mark the float fields
with ``encode`` and print with ``dumps``; readers turn a field back into a float with ``decode``,
which also takes the null that older gradviz versions wrote for a non-finite number (read as NaN).
The worker protocol, the CLI's ``--json``, ``report.json`` and sessions all go through here.
"""

from __future__ import annotations

import json
import math
from typing import Any

NONFINITE: dict[str, float] = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def encode(value: float) -> float | str:
    """``value`` as JSON holds it: a finite float as a number, NaN and infinities as strings."""
    if math.isfinite(value):
        return value
    return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")


def encode_optional(value: float | None) -> float | str | None:
    """``encode``, with None (no value at all) kept as null."""
    return None if value is None else encode(value)


def decode(value: float | str | None) -> float:
    """The inverse of ``encode``; null (how older gradviz wrote a non-finite number, losing its
    sign) comes back as NaN. Any other string is a ValueError."""
    if value is None:
        return math.nan
    if isinstance(value, str):
        try:
            return NONFINITE[value]
        except KeyError:
            raise ValueError(f"{value!r} is not a number (the non-finite ones are {', '.join(NONFINITE)})") from None
    return float(value)


def decode_optional(value: float | str | None) -> float | None:
    """``decode`` for a field where null means "no value" (not NaN)."""
    return None if value is None else decode(value)


def encoded(data: Any) -> Any:
    """``data`` with every non-finite float, however deep, replaced by its string."""
    if isinstance(data, float):
        return encode(data)
    if isinstance(data, dict):
        return {key: encoded(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [encoded(value) for value in data]
    return data


def dumps(data: Any, *, indent: int | None = None) -> str:
    """``data`` as strict JSON. Fields written with ``encode`` cost nothing more; a non-finite float
    that slipped through unencoded is written the same way instead of as ``NaN``."""
    try:
        return json.dumps(data, allow_nan=False, indent=indent)
    except ValueError as exc:  # a non-finite float, or circular data (refused again)
        if "ircular" in str(exc):
            raise
        return json.dumps(encoded(data), allow_nan=False, indent=indent)


def stored(data: dict[str, Any], *names: str) -> dict[str, Any]:
    """The entries ``names`` of ``data``, for a ``from_dict`` whose fields are stored as they are."""
    return {name: data[name] for name in names}


def stored_if_there(data: dict[str, Any], *names: str) -> dict[str, Any]:
    """Like ``stored``, None for a name ``data`` lacks (written by an older version, or optional)."""
    return {name: data.get(name) for name in names}

"""The one step from loaded user source to a Function and the inputs it is run on.

The check, the sweep, a region of a large block and the graph all show the same Function at the
same inputs. Every ``*_source`` entry point takes them from ``prepare_source``, so a setting
that changes the inputs (``jitter``, the seed, the dtype) changes them everywhere at once, and no
view can show the values of other inputs than the ones checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from gradviz.core.callables import Checkable
from gradviz.core.inputs import PreparedInputs, prepare_inputs, resolve_device, resolve_dtype
from gradviz.core.kinks import jitter_inputs
from gradviz.core.loader import LoadedSource, argument_names, choose_function
from gradviz.core.target_inputs import target_arguments
from gradviz.schema.settings import CheckSettings


@dataclass
class PreparedSource:
    """The chosen Function, the name the user calls it by, and the inputs every view runs it on."""

    fn: Checkable
    name: str
    inputs: PreparedInputs


def prepare_source(loaded: LoadedSource, function: str | None, settings: CheckSettings) -> PreparedSource:
    """Choose ``function`` in ``loaded`` and draw its inputs as the check does: ``example_inputs``
    seeded with ``settings.seed`` on ``settings.device`` in ``settings.dtype``, then moved off kinks
    by ``settings.jitter`` when it is set."""
    settings.validate()
    fn = choose_function(loaded, function)
    device, dtype = resolve_device(settings.device), resolve_dtype(settings.dtype)
    inputs = example_arguments(loaded, fn, device, dtype, settings.seed)
    if settings.jitter:
        inputs = jitter_inputs(inputs, settings.jitter, settings.seed)
    name = function or loaded.default_function or next(k for k, v in loaded.functions.items() if v is fn)
    return PreparedSource(fn, name, inputs)


def example_arguments(
    loaded: LoadedSource, fn: Checkable, device: torch.device, dtype: torch.dtype, seed: int
) -> PreparedInputs:
    """The arguments for ``fn.apply``: ``example_inputs`` (seeded), moved to device and dtype; no jitter."""
    raw = _example_inputs(loaded, fn, device, dtype, seed)
    names = argument_names(fn, len(raw) if isinstance(raw, tuple | list) else 1)
    return prepare_inputs(raw, device, dtype, names, loaded.filename, fn=fn)


def _example_inputs(
    loaded: LoadedSource, fn: Checkable, device: torch.device, dtype: torch.dtype, seed: int
) -> Any:
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(seed)
        return target_arguments(loaded, fn, device, dtype)

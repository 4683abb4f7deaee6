"""The arguments a file's Function or op is checked at, when the CLI or the window draws them.

A file's ``example_inputs`` is written for one of its Functions; a file with several must not
hand it to a Function it does not fit (``forward() takes 2 positional arguments but 4 were
given`` says nothing about why). So it is given only to a target whose ``forward`` (or schema)
takes that many arguments; another target of the file gets drawn inputs, and a target nothing in
the file fits is refused in one sentence. Drawn inputs are random 4×4 tensors for a Function's
arguments; an op's come from its schema: a tensor for each ``Tensor``, the schema's default for
anything else, and a refusal naming the argument where there is no default (a random tensor
for a ``float`` only ends in a cast error ten lines deep inside torch).
"""

from __future__ import annotations

import inspect
from typing import Any

import torch

from gradviz.core.callables import Checkable, CustomOpFunction
from gradviz.core.custom_ops import op_overload
from gradviz.core.loader import LoadedSource, forward_parameters, required_arguments
from gradviz.schema.errors import ErrorKind, UserCodeError, from_exception

GIVE_INPUTS = "give the arguments with --inputs FILE (a tuple saved with torch.save) or define example_inputs(device, dtype)"


def target_arguments(loaded: LoadedSource, fn: Checkable, device: torch.device, dtype: torch.dtype) -> Any:
    """What ``fn.apply`` is called with: ``example_inputs`` (or ``--inputs``) when it fits ``fn``,
    else drawn inputs (see the module's docstring). The caller seeds the RNG.

    Args:
        loaded: the file, with its ``example_inputs`` and its other Functions.
        fn: the Function or op chosen in it.
        device: where drawn and example inputs are made.
        dtype: the floating-point dtype they are made in.

    Returns:
        The raw arguments, for ``prepare_inputs``.
    """
    if loaded.example_inputs is None:
        return drawn_arguments(fn, device, dtype, loaded, "No example_inputs() defined")
    try:
        raw = loaded.example_inputs(device, dtype)
    except (Exception, SystemExit) as exc:
        raise from_exception(ErrorKind.EXAMPLE_INPUTS, exc, loaded.filename, "example_inputs(device, dtype)") from None
    count = 1 if isinstance(raw, torch.Tensor) else len(raw) if isinstance(raw, tuple | list) else None
    if count is None or takes(fn, count) is not False:
        return raw  # a wrong kind of value is refused by prepare_inputs, in its words
    wanted = f"{fn.__name__} takes {describe_arity(fn)}"
    if loaded.inputs_path is not None:
        raise UserCodeError(
            ErrorKind.EXAMPLE_INPUTS,
            f"--inputs {loaded.inputs_path} holds {_arguments(count)} but {wanted}: save {fn.__name__}'s "
            "arguments, in order (torch.save((x, w), FILE)), and pass that file with --inputs.",
            loaded.filename,
        )
    others = [name for name, other in loaded.functions.items() if other is not fn and takes(other, count)]
    if not others:
        raise UserCodeError(
            ErrorKind.EXAMPLE_INPUTS,
            f"example_inputs() returns {_arguments(count)} but {wanted}: return {fn.__name__}'s arguments, "
            "or give them with --inputs FILE (a tuple saved with torch.save).",
            loaded.filename,
            _line_of(loaded.example_inputs, loaded.filename),
        )
    why = f"example_inputs() returns {_arguments(count)}, for {', '.join(others)}; {wanted}"
    return drawn_arguments(fn, device, dtype, loaded, why)


def drawn_arguments(fn: Checkable, device: torch.device, dtype: torch.dtype, loaded: LoadedSource, why: str) -> tuple:
    """Arguments made up for ``fn``, with a note saying ``why`` and what they are."""
    if isinstance(fn, CustomOpFunction):
        args, said = _schema_arguments(fn, device, dtype, loaded.filename)
    else:
        names = required_arguments(fn)
        args = tuple(_random(device, dtype) for _ in names)
        said = f"random 4×4 tensors for {', '.join(names) or 'no arguments'}"
    loaded.notes.append(f"{why}: using {said}. Define example_inputs(device, dtype) or pass --inputs FILE to choose them.")
    return args


def _schema_arguments(fn: CustomOpFunction, device: torch.device, dtype: torch.dtype, filename: str) -> tuple[tuple, str]:
    """A tensor for each Tensor argument, the schema's default for the others, up to the last
    argument that has no default; refused, by name, where one cannot be made."""
    schema = op_overload(fn.op)._schema
    positional = [a for a in schema.arguments if not a.kwarg_only]
    for a in schema.arguments:
        if a.kwarg_only and not a.has_default_value():
            raise _cannot_make(fn, a, "is keyword-only with no default", filename)
    needed = max((k + 1 for k, a in enumerate(positional) if not a.has_default_value()), default=0)
    args: list[Any] = []
    tensors, defaults = [], []
    for a in positional[:needed]:
        if a.has_default_value():
            args.append(a.default_value)
            defaults.append(f"{a.name}={a.default_value!r}")
        elif _is_tensor(a.type):
            args.append(_random(device, dtype))
            tensors.append(a.name)
        else:
            raise _cannot_make(fn, a, "has no default in the schema", filename)
    said = f"random 4×4 tensors for {', '.join(tensors) or 'no arguments'}"
    if defaults:
        said += f" and the schema's defaults {', '.join(defaults)}"
    return tuple(args), said


def _is_tensor(kind: torch._C.JitType) -> bool:
    """``Tensor`` or ``Tensor?``: one tensor (a ``Tensor[]`` is a list, which is not made up)."""
    if isinstance(kind, torch._C.OptionalType):
        kind = kind.getElementType()
    return isinstance(kind, torch._C.TensorType)


def _cannot_make(fn: CustomOpFunction, a: torch._C.Argument, why: str, filename: str) -> UserCodeError:
    return UserCodeError(
        ErrorKind.EXAMPLE_INPUTS,
        f"{fn.__name__}'s argument {a.name} ({a.type}) {why}, so gradviz cannot choose it: {GIVE_INPUTS}.",
        filename,
    )


def takes(fn: Checkable, count: int) -> bool | None:
    """Whether ``fn`` can be called with ``count`` positional arguments; None when it cannot be told."""
    bounds = _arity(fn)
    if bounds is None:
        return None
    least, most = bounds
    return least <= count and (most is None or count <= most)


def describe_arity(fn: Checkable) -> str:
    """``2 arguments (x, w)``, ``1 to 2 arguments``: what ``fn``'s forward or schema accepts."""
    bounds = _arity(fn)
    if bounds is None:
        return "other arguments"
    least, most = bounds
    if isinstance(fn, CustomOpFunction):
        names = [a.name for a in op_overload(fn.op)._schema.arguments]
    else:
        names = [p.name for p in forward_parameters(fn) if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    listed = f" ({', '.join(names)})" if names else ""
    if most is None:
        return f"{least} or more arguments{listed}"
    if least == most:
        return f"{_arguments(least)}{listed}"
    return f"{least} to {most} arguments{listed}"


def _arity(fn: Checkable) -> tuple[int, int | None] | None:
    """The fewest and most positional arguments (None: no limit), for a Function class or an op."""
    if isinstance(fn, CustomOpFunction):
        positional = [a for a in op_overload(fn.op)._schema.arguments if not a.kwarg_only]
        least = max((k + 1 for k, a in enumerate(positional) if not a.has_default_value()), default=0)
        return least, len(positional)
    if not (isinstance(fn, type) and issubclass(fn, torch.autograd.Function)):
        return None  # a callable, a module with its parameters: whatever it takes, it says itself
    params = forward_parameters(fn)
    if not params:
        try:
            inspect.signature(fn.forward)
        except (TypeError, ValueError):
            return None
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return len(required_arguments(fn)), None
    by_position = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(required_arguments(fn)), len(by_position)


def _arguments(count: int) -> str:
    return f"{count} argument{'s' if count != 1 else ''}"


def _random(device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    return torch.randn(4, 4, device=device, dtype=dtype, requires_grad=True)


def _line_of(func: Any, filename: str) -> int | None:
    """The line of ``func``'s def when it is in ``filename`` (the file being checked)."""
    code = getattr(func, "__code__", None)
    return code.co_firstlineno if code is not None and code.co_filename == filename else None

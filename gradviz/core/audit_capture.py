"""One forward of a model, with every call of a custom Function or custom op written down.

gradcheck checks one Function at inputs someone chose; a model's backward goes wrong at the
activations it really produces. ``capture_calls`` runs the model once and keeps, for every call
of a user's ``torch.autograd.Function`` (``apply``, nested ones too) and of a
``torch.library.custom_op``, copies of its arguments as autograd saw them there: a tensor
requires grad in the copy exactly when autograd differentiated it at that call. The op's own
autograd wrapper (a Function PyTorch generates) is the op, not a second call; PyTorch's own
Functions and ops are built-in and left alone. Everything the forward could change is put back:
the model's parameters, buffers and train/eval flags bitwise, every random generator.
"""

from __future__ import annotations

import contextlib
import inspect
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch.overrides import TorchFunctionMode

from gradviz.core.custom_ops import BUILTIN_NAMESPACES, op_definition, op_name
from gradviz.core.loader import forward_parameters
from gradviz.schema.errors import ErrorKind, from_exception

_FUNCTION = torch.autograd.function.Function


@dataclass
class CapturedCall:
    """One call of a custom node, as the model made it."""

    target: Any  # the Function class, or the op (its CustomOpDef, else its OpOverload)
    function: str  # the class's __name__, or ``ns::name``
    module: str  # dotted path of the innermost nn.Module whose forward made the call ("" at the top)
    call: int  # 1-based, among the calls of the same Function or op
    args: tuple[Any, ...]  # copies; tensors require grad where autograd differentiated them
    grad_enabled: bool  # autograd was recording at the call (not inside another Function's forward or op)
    calls: int = 0  # how many calls of the same Function or op the forward made (set at the end)
    unbound: str | None = None  # why the keyword arguments could not be made positional
    out_bytes: int = 0  # bytes of the tensors the call returned (what each forward of its check makes)

    @property
    def in_bytes(self) -> int:
        """Bytes of the copies of its tensor arguments (held by the capture until the audit ends)."""
        return tensor_bytes(self.args)

    @property
    def differentiated(self) -> list[int]:
        """Positions of the tensor arguments autograd differentiated at this call."""
        return [j for j, a in enumerate(self.args) if isinstance(a, torch.Tensor) and a.requires_grad]


@dataclass
class Capture:
    """Every custom call of one forward, in call order, and what was not recorded."""

    calls: list[CapturedCall] = field(default_factory=list)
    builtin_functions: set[str] = field(default_factory=set)  # PyTorch's own Functions met


def capture_calls(fn: Callable[..., Any], args: tuple[Any, ...]) -> Capture:
    """Run ``fn(*args)`` once and record every custom Function and custom op call.

    Args:
        fn: an ``nn.Module`` or any callable.
        args: its positional arguments.

    Returns:
        The calls, in the order the forward made them.

    Raises:
        UserCodeError: the forward raised (chained to its exception, naming its line).
    """
    capture = Capture()
    paths = _module_paths(fn)
    stack: list[str] = []
    counts: dict[Any, int] = {}
    inside_op = [0]  # inside a custom op's own code: below autograd, which differentiates the op alone

    def record(
        target: Any, name: str, call_args: tuple[Any, ...], kwargs: dict[str, Any], params: list[str]
    ) -> CapturedCall:
        grad = torch.is_grad_enabled() and not inside_op[0]
        key = target
        counts[key] = counts.get(key, 0) + 1
        positional, unbound = _positional(call_args, kwargs, params)
        call = CapturedCall(target, name, stack[-1] if stack else "", counts[key], _own(positional, grad), grad, unbound=unbound)
        capture.calls.append(call)
        return call

    with _state_restored(fn, args), _module_stack(paths, stack), _functions_recorded(record, capture), _ops_recorded(record, inside_op):
        try:
            fn(*args)
        except (Exception, SystemExit) as exc:
            raise from_exception(ErrorKind.FORWARD, exc, _filename(fn), "The model's forward") from None
    for c in capture.calls:
        c.calls = counts[c.target]
    return capture


def tensor_bytes(value: Any) -> int:
    """Bytes of the tensors in ``value`` (nested in tuples, lists and dicts too)."""
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, list | tuple):
        return sum(tensor_bytes(v) for v in value)
    if isinstance(value, dict):
        return sum(tensor_bytes(v) for v in value.values())
    return 0


def _filename(fn: Any) -> str:
    target = type(fn).forward if isinstance(fn, torch.nn.Module) else fn
    try:
        return inspect.getsourcefile(inspect.unwrap(target)) or "<model>"
    except TypeError:
        return "<model>"


def _module_paths(fn: Any) -> dict[int, str]:
    """id of each submodule -> its dotted path from ``named_modules()`` ("" for the model itself)."""
    if not isinstance(fn, torch.nn.Module):
        return {}
    return {id(m): name for name, m in fn.named_modules(remove_duplicate=False)}


@contextlib.contextmanager
def _module_stack(paths: dict[int, str], stack: list[str]) -> Iterator[None]:
    """Keep ``stack`` at the paths of the model's modules whose forward is running, innermost last."""
    depth: list[int] = []

    def pre(module: torch.nn.Module, _args: Any) -> None:
        path = paths.get(id(module))
        depth.append(path is not None)
        if path is not None:
            stack.append(path)

    def post(module: torch.nn.Module, _args: Any, _out: Any) -> None:
        if depth and depth.pop() and stack:
            stack.pop()

    hooks = [
        torch.nn.modules.module.register_module_forward_pre_hook(pre),
        torch.nn.modules.module.register_module_forward_hook(post, always_call=True),
    ]
    try:
        yield
    finally:
        for h in hooks:
            h.remove()


@contextlib.contextmanager
def _functions_recorded(record: Callable[..., CapturedCall], capture: Capture) -> Iterator[None]:
    """``Function.apply`` replaced by one that records each call of a user's Function, then restored."""
    original = _FUNCTION.__dict__["apply"]
    apply = original.__func__

    def recording(cls: type, *args: Any, **kwargs: Any) -> Any:
        module = getattr(cls, "__module__", "") or ""
        if module.startswith("torch.") or module == "torch":
            capture.builtin_functions.add(cls.__name__)  # PyTorch's (a custom op's generated one among them)
            return apply(cls, *args, **kwargs)
        call = record(cls, cls.__name__, args, kwargs, _forward_parameters(cls))
        out = apply(cls, *args, **kwargs)
        call.out_bytes = tensor_bytes(out)
        return out

    _FUNCTION.apply = classmethod(recording)  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        _FUNCTION.apply = original  # type: ignore[method-assign]


class _OpRecorder(TorchFunctionMode):
    """Sees every call of an operator overload; records those of the user's custom ops."""

    def __init__(self, record: Callable[..., CapturedCall], inside: list[int]) -> None:
        super().__init__()
        self.record, self.inside = record, inside

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        if isinstance(func, torch._ops.OpOverloadPacket):
            func = func.default if "default" in func.overloads() else getattr(func, func.overloads()[0])
        if isinstance(func, torch._ops.OpOverload) and func.namespace not in BUILTIN_NAMESPACES:
            target = op_definition(func) or func
            call = self.record(target, op_name(target), args, kwargs, [a.name for a in func._schema.arguments])
            self.inside[0] += 1
            try:
                out = func(*args, **kwargs)
            finally:
                self.inside[0] -= 1
            call.out_bytes = tensor_bytes(out)
            return out
        return func(*args, **kwargs)


@contextlib.contextmanager
def _ops_recorded(record: Callable[..., CapturedCall], inside: list[int]) -> Iterator[None]:
    with _OpRecorder(record, inside):
        yield


def _forward_parameters(cls: type) -> list[str]:
    """The names ``apply``'s positional arguments bind to (forward's, without ctx when it takes one)."""
    return [p.name for p in forward_parameters(cls)]


def _positional(args: tuple[Any, ...], kwargs: dict[str, Any], params: list[str]) -> tuple[tuple[Any, ...], str | None]:
    """The call as positional arguments (check and gradcheck pass only those); why not, if not."""
    if not kwargs:
        return args, None
    values = list(args)
    for name in params[len(args):]:
        if name not in kwargs:
            break
        values.append(kwargs[name])
    unused = set(kwargs) - set(params[len(args) : len(values)])
    if unused:
        return tuple(values), f"keyword arguments {', '.join(sorted(unused))} cannot be passed by position"
    return tuple(values), None


def _own(args: tuple[Any, ...], grad_enabled: bool) -> tuple[Any, ...]:
    """Copies a later call can never change: each tensor detached with its strides, requiring
    grad where autograd differentiated it at this call; containers copied the same way."""

    def own(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            strided = value.layout == torch.strided  # a sparse tensor has no memory format to keep
            copy = value.detach().clone(memory_format=torch.preserve_format) if strided else value.detach().clone()
            return copy.requires_grad_(value.requires_grad and grad_enabled and copy.is_floating_point())
        if isinstance(value, list | tuple) and not hasattr(value, "_fields"):
            return type(value)(own(v) for v in value)
        if isinstance(value, dict):
            return {k: own(v) for k, v in value.items()}
        return value

    with torch.no_grad():
        return tuple(own(v) for v in args)


@contextlib.contextmanager
def _state_restored(fn: Any, args: tuple[Any, ...]) -> Iterator[None]:
    """The model's parameters, buffers (values and objects) and train flags, and every random
    generator, as they were before the block."""
    modules = list(fn.modules()) if isinstance(fn, torch.nn.Module) else []
    flags = [(m, m.training) for m in modules]
    tensors = [
        (m, store, name, t, t.detach().clone())
        for m in modules
        for store in ("_parameters", "_buffers")
        for name, t in getattr(m, store).items()
        if t is not None
    ]
    devices = {a.device.index or 0 for a in args if isinstance(a, torch.Tensor) and a.device.type == "cuda"}
    devices |= {t.device.index or 0 for *_, t, _ in tensors if t.device.type == "cuda"}
    python_state, numpy_state = random.getstate(), np.random.get_state()
    try:
        with torch.random.fork_rng(devices=sorted(devices)):
            yield
    finally:
        random.setstate(python_state)
        np.random.set_state(numpy_state)
        with torch.no_grad():
            for m, store, name, t, saved in tensors:
                getattr(m, store)[name] = t  # the same object, even if the forward replaced it
                t.copy_(saved)  # bitwise: an equality test would miss -0.0 for 0.0 and NaN payloads
        for m, training in flags:
            m.training = training

"""The user's Function called once, and what the check reports of it: its outputs, its
arguments, and errors in its code that point at the user's own file and line.

The check and a region of a large block both start from ``first_forward`` and name a failing
backward with ``backward_error``, so both say the same about the same code; the check's
``second_forward`` is the numerical Jacobian's reference and the measure of the forward's noise.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import torch

from gradviz.core.callables import Checkable, CustomOpFunction, function_class
from gradviz.core.function_info import source_file
from gradviz.core.inputs import PreparedInputs
from gradviz.core.jacobian import call_apply
from gradviz.core.loader import LoadedSource, forward_parameters, method_line
from gradviz.schema.errors import ErrorKind, UserCodeError, from_exception
from gradviz.schema.results import TensorInfo
from gradviz.schema.units import ordinal


class CodeFiles:
    """The files whose frames count as the user's: the loaded source and the Function's own module."""

    def __init__(self, fn: Checkable, loaded: LoadedSource | None) -> None:
        own = source_file(fn)
        self.main = loaded.filename if loaded else own or "<source>"
        self.also = {own} if own else set()

    def error(self, kind: str, exc: BaseException, context: str) -> UserCodeError:
        return from_exception(kind, exc, self.main, context, also=self.also)


def first_forward(fn: Checkable, args: tuple, code: CodeFiles) -> tuple[tuple, bool, list[int], list[int]]:
    """One forward with autograd on; also tells whether later forwards need fresh copies of the
    inputs (it modified one in place, or returned one, as ``mark_dirty`` requires), and which
    modified inputs it did not declare with ``ctx.mark_dirty``, and which inputs it modified.

    The first forward runs on copies, to see what it modifies; when it modifies nothing, the
    outputs returned come from a second forward on the inputs themselves, as gradcheck's do."""
    copies = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    versions = [a._version if isinstance(a, torch.Tensor) else None for a in copies]
    try:
        with torch.enable_grad():
            outputs = call_apply(fn.apply, copies, clone=False)
    except (Exception, SystemExit) as exc:
        raise code.error(ErrorKind.FORWARD, exc, f"{fn.__name__}.forward") from None
    changed = [j for j, (a, v) in enumerate(zip(copies, versions)) if isinstance(a, torch.Tensor) and a._version != v]
    # mark_dirty rebases a modified input onto the Function's own node; without it the input keeps its
    # old one. Only inputs that need gradients matter: a buffer (running statistics) may change quietly.
    nodes = {o.grad_fn for o in outputs if isinstance(o, torch.Tensor) and o.grad_fn is not None}
    undeclared = [j for j in changed if nodes and copies[j].requires_grad and copies[j].grad_fn not in nodes]
    returned = any(o is c for o in outputs for c in copies if isinstance(c, torch.Tensor))
    mutates = bool(changed) or returned
    if not mutates:
        # gradcheck's graph: on the caller's own tensors, so a backward that differentiates with respect
        # to an argument it also reads another way (through a module) finds it in its recomputation
        try:
            with torch.enable_grad():
                outputs = call_apply(fn.apply, args, clone=False)
        except (Exception, SystemExit) as exc:
            raise code.error(ErrorKind.FORWARD, exc, f"{fn.__name__}.forward") from None
    return outputs, mutates, undeclared, changed


def second_forward(fn: Checkable, args: Sequence) -> tuple | None:
    """The forward once more on fresh copies of the same inputs, as the first ran (grad mode on,
    copies requiring grad like the inputs), its outputs detached and copied (no graph is held);
    None when it raised. It measures the forward's noise and is the numerical Jacobian's
    reference: one forward serves both."""
    try:
        with torch.enable_grad():
            outputs = call_apply(fn.apply, args, clone=True)
        return tuple(o.detach().clone() if isinstance(o, torch.Tensor) else o for o in outputs)
    except (Exception, SystemExit):  # the numerical Jacobian runs forward again and says what fails
        return None


def output_infos(outputs: tuple, fn: Checkable, code: CodeFiles, loaded: LoadedSource | None = None) -> list[TensorInfo]:
    """What forward returned; outputs gradviz cannot compare (complex, sparse, meta) are refused."""

    def refuse(message: str) -> UserCodeError:  # the line is found only when needed: it parses the source
        line = method_line(loaded, fn, "forward", last_return=True) if loaded else None
        return UserCodeError(ErrorKind.BAD_OUTPUT, f"{fn.__name__}.forward {message}", code.main, line)

    infos = []
    for i, o in enumerate(outputs):
        if not isinstance(o, torch.Tensor):
            infos.append(TensorInfo(i, f"out{i}", None, None, False))
            continue
        if o.is_meta:
            raise refuse(f"returned a meta tensor as output {i}: it has no values to compare.")
        if o.is_quantized:
            raise refuse(
                f"returned a quantized tensor as output {i}; gradviz compares floating-point outputs. "
                "Return out.dequantize() to check it."
            )
        if o.layout != torch.strided:
            raise refuse(
                f"returned a {str(o.layout).removeprefix('torch.')} tensor as output {i}; gradviz (like "
                "gradcheck) compares dense outputs. Return out.to_dense() to check it."
            )
        infos.append(TensorInfo(i, f"out{i}", tuple(o.shape), str(o.dtype).removeprefix("torch."), o.requires_grad))
    if all(info.shape is None for info in infos):
        raise refuse(
            f"returned {type(outputs[0]).__name__ if outputs else 'nothing'}, not a tensor: forward must "
            "return a tensor or a tuple of tensors."
        )
    return infos


def input_infos(inputs: PreparedInputs) -> list[TensorInfo]:
    """What the check reports of each argument: tensors by shape and dtype, others by type."""
    infos = []
    for j, a in enumerate(inputs.args):
        if isinstance(a, torch.Tensor):
            dtype = str(a.dtype).removeprefix("torch.")
            infos.append(TensorInfo(j, inputs.names[j], tuple(a.shape), dtype, a.requires_grad))
        else:
            infos.append(TensorInfo(j, inputs.names[j], None, type(a).__name__, False))
    return infos


BAD_GRADIENT = (
    "{who} returned the gradient for {input} in the wrong shape: {detail}. "
    "Return it shaped like {like}."
)


def _forward_class(outputs: Sequence[object], node_name: str) -> type | None:
    """The Function class behind the autograd node named ``node_name`` in the graph of ``outputs``
    (PyTorch's error names the node, ``WrongShapeBackward``, not the class)."""
    todo = [o.grad_fn for o in outputs if isinstance(o, torch.Tensor) and o.grad_fn is not None]
    seen: dict[int, object] = {}  # holds each node, so no id is reused while walking
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen[id(node)] = node
        cls = getattr(type(node), "_forward_cls", None)
        if cls is not None and node.name() == node_name:
            return cls
        todo.extend(n for n, _ in node.next_functions)
    return None


def _gradient_owner(
    fn: Checkable, node_name: str, names: Sequence[str], outputs: Sequence[object]
) -> tuple[str, Checkable | None, list[str]]:
    """Whose backward returned the gradient: words for it, its class (None: unknown), the names of
    its inputs. ``fn`` itself, with the checked arguments' names, when it is the Function or op
    that returned it; else the Function inside a callable, with its forward's parameter names."""
    own = function_class(fn)
    inner = _forward_class(outputs, node_name)
    if isinstance(fn, CustomOpFunction) or (own is not None and inner in (None, own)):
        return f"{fn.__name__}.backward", fn, list(names)
    if inner is not None:
        parameters = [p.name for p in forward_parameters(inner)]
        where = "" if inner.__name__ == fn.__name__ else f" (called in {fn.__name__})"  # a stand-in (RealView) keeps it
        return f"{inner.__name__}.backward{where}", inner, parameters
    return f"The backward of {node_name} (called in {fn.__name__})", None, []


def _shape_message(
    fn: Checkable, text: str, names: Sequence[str], outputs: Sequence[object]
) -> tuple[str, Checkable | None]:
    """The message for a gradient of the wrong shape, naming the input and its place counted
    from 1 ("y (its 2nd input)"), and the class whose backward returned it."""
    shape = _SHAPE.search(text)
    node_name, index = (shape.group(1), int(shape.group(2))) if shape else ("?", -1)
    who, owner, inputs = _gradient_owner(fn, node_name, names, outputs)
    place = f"its {ordinal(index + 1)} input"
    named = 0 <= index < len(inputs)
    which = f"{inputs[index]} ({place})" if named else place
    detail = text.split(" - ", 1)[-1]
    like = inputs[index] if named else "that input"
    return BAD_GRADIENT.format(who=who, input=which, detail=detail, like=like), owner


_COUNT = re.compile(r"returned an incorrect number of gradients")
_SHAPE = re.compile(r"Function (\S+) returned an invalid gradient at index (\d+)")


def backward_error(
    fn: Checkable,
    exc: BaseException,
    loaded: LoadedSource | None,
    code: CodeFiles,
    names: Sequence[str] = (),
    outputs: Sequence[object] = (),
) -> UserCodeError:
    """Name the problem; engine-side checks point at backward's return statement.

    ``names``: the checked arguments' names, by which a gradient of the wrong shape is named (as
    every block and cell is) when ``fn`` is the Function or op whose backward returned it;
    ``outputs``: the forward's, in whose graph a Function inside a callable is found by name."""
    error = code.error(ErrorKind.BACKWARD, exc, f"{fn.__name__}.backward")
    text = str(exc)
    kind = (
        ErrorKind.GRADIENT_COUNT
        if _COUNT.search(text)
        else ErrorKind.GRADIENT_SHAPE
        if _SHAPE.search(text)
        else None
    )
    if kind is None:
        if error.lineno is None and loaded:  # e.g. a TypeError calling backward: point at its def
            error.lineno = method_line(loaded, fn, "backward")
        return error
    error.kind = kind
    owner: Checkable | None = fn
    if kind == ErrorKind.GRADIENT_COUNT:
        error.message = (
            f"{fn.__name__}.backward returned the wrong number of gradients: {text.split('(')[-1].rstrip(')')}. "
            "Return one value per forward argument (None for non-tensors)."
        )
    else:
        error.message, owner = _shape_message(fn, text, names, outputs)
    line = method_line(loaded, owner or fn, "backward", last_return=True) if loaded else None
    error.lineno = line or error.lineno
    return error

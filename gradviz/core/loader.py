"""Run user source in a fresh module and find the autograd Functions it defines.

The built-in library goes through this same loader, so what a lecturer shows is exactly
what a user gets when they paste the code into the editor.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import linecache
import os
import re
import sys
import types
import uuid
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from gradviz.core.callables import Checkable, CustomOpFunction, as_checkable, describe_not_checkable
from gradviz.core.custom_ops import Registrations, find_custom_ops
from gradviz.schema.errors import ErrorKind, Frame, GradvizError, SettingsError, UserCodeError, from_exception
from gradviz.schema.source_files import read_source_text
from gradviz.schema.targets import CANNOT_USE_INPUTS, Target, check_inputs_path, locate_module, parse_target

MAX_QUOTED_LINE = 120  # characters of a bad line quoted in a syntax error


@dataclass
class LoadedSource:
    """What one piece of user source defines."""

    filename: str
    source: str
    module: types.ModuleType
    functions: dict[str, Checkable]  # Function classes by name, custom ops by ``ns::name``
    example_inputs: Callable | None
    default_function: str | None = None
    notes: list[str] = field(default_factory=list)
    inputs_path: str | None = None  # --inputs FILE: example_inputs gives that file's arguments

    @property
    def docstring(self) -> str | None:
        return self.module.__doc__

    @property
    def category(self) -> str | None:
        return getattr(self.module, "CATEGORY", None)

    @property
    def bug(self) -> str | None:
        return getattr(self.module, "BUG", None)


def read_source(path: str | Path) -> str:
    """Read a user file as UTF-8, refusing directories, FIFOs, devices and huge files first."""
    return read_source_text(path)


def load_file(path: str | Path) -> LoadedSource:
    """Load a file with its own folder first on ``sys.path``, as ``python file.py`` would, so a
    file that imports its sibling modules (the user's package) works wherever gradviz started."""
    path = Path(path).resolve()
    source = read_source(path)
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    return load_source(source, str(path))


def load_source(source: str, filename: str = "<editor>") -> LoadedSource:
    """Execute ``source`` as a new module and collect its Function subclasses."""
    if not source.strip():
        raise UserCodeError(
            ErrorKind.NO_FUNCTION, "The source is empty: write a torch.autograd.Function subclass.", filename
        )
    # linecache lets tracebacks and inspect show lines of code that never was a file.
    lines = source.splitlines(keepends=True)
    linecache.cache[filename] = (len(source), None, lines, filename)
    try:
        code = compile(source, filename, "exec")
    except SyntaxError as exc:
        raise _syntax_error(exc, filename) from None
    except ValueError as exc:  # NUL bytes in the source
        raise UserCodeError(ErrorKind.SYNTAX, f"The source cannot be compiled: {exc}.", filename) from None
    except (RecursionError, MemoryError):
        raise UserCodeError(
            ErrorKind.SYNTAX,
            "The source is nested too deeply for Python's compiler (an expression or block thousands of "
            "levels deep). Split it into smaller pieces.",
            filename,
        ) from None

    module = types.ModuleType(f"usercode_{uuid.uuid4().hex[:12]}")  # not "gradviz...": our warning filters
    module.__file__ = filename
    sys.modules[module.__name__] = module  # dataclasses, pickle and typing look modules up here
    registered = Registrations()
    try:
        exec(code, module.__dict__)
    except (Exception, SystemExit) as exc:
        raise from_exception(ErrorKind.IMPORT, exc, filename, "Running the file") from None

    functions = find_functions(module, registered)
    if not functions:
        raise UserCodeError(
            ErrorKind.NO_FUNCTION,
            "No torch.autograd.Function subclass or custom op is defined or imported in this source. Define "
            "a class with static forward(ctx, ...) and backward(ctx, ...) methods, or a torch.library.custom_op "
            "with register_autograd, or import yours (from mypackage.ops import MyFunction).",
            filename,
        )
    example_inputs = module.__dict__.get("example_inputs")
    if example_inputs is not None and not callable(example_inputs):
        raise UserCodeError(
            ErrorKind.EXAMPLE_INPUTS, "example_inputs must be a function (device, dtype) -> tuple", filename
        )
    default = module.__dict__.get("FUNCTION")
    return LoadedSource(filename, source, module, functions, example_inputs, default)


# Abstract bases a file may import along with its Function: never something to check.
_BASES = (torch.autograd.Function, torch.autograd.function.InplaceFunction, torch.autograd.function.NestedIOFunction)


def find_functions(module: types.ModuleType, registered: Registrations | None = None) -> dict[str, Checkable]:
    """Every concrete Function the module defines or imports: its own first, then imported ones;
    then its custom ops, by ``ns::name``, the same way: those among its globals, and with
    ``registered`` (taken before it ran) every operator it registered however it did.

    A user's Function usually lives in their package; a file that imports it and defines
    ``example_inputs`` is the normal case, so imported Functions count too.
    """
    found = {
        name: obj
        for name, obj in module.__dict__.items()
        if isinstance(obj, type)
        and issubclass(obj, torch.autograd.Function)
        and obj not in _BASES
        and obj.forward is not torch.autograd.Function.forward
    }
    own = {n: f for n, f in found.items() if f.__module__ == module.__name__}
    ops: dict[str, Checkable] = {n: CustomOpFunction(op) for n, op in find_custom_ops(module, registered).items()}
    return {**own, **{n: f for n, f in found.items() if n not in own}, **ops}


def _op_alias(loaded: LoadedSource, name: str) -> str | None:
    """The ``ns::name`` of the op held by the module's global ``name`` (``cube`` for ``ns::cube``)."""
    value = loaded.module.__dict__.get(name)
    ops = {k: f.op for k, f in loaded.functions.items() if isinstance(f, CustomOpFunction)}
    return next((k for k, op in ops.items() if op is value), None)


def choose_function(loaded: LoadedSource, name: str | None = None) -> Checkable:
    """The Function called ``name`` (an op: ``ns::name`` or the global that holds it); without a
    name, FUNCTION or the first one defined."""
    name = name or loaded.default_function
    if name is not None and type(name) is not str:
        raise UserCodeError(
            ErrorKind.UNKNOWN_FUNCTION,
            f"FUNCTION must be the name of a Function, a string such as {next(iter(loaded.functions))!r}; "
            f"it is a {type(name).__name__}.",
            loaded.filename,
        )
    if name is None:
        name = next(iter(loaded.functions))
        if len(loaded.functions) > 1:
            others = ", ".join(loaded.functions)
            loaded.notes.append(f"Several Functions are defined ({others}); checking {name}.")
    if name not in loaded.functions:
        name = _op_alias(loaded, name) or name
    if name not in loaded.functions:
        raise UserCodeError(
            ErrorKind.UNKNOWN_FUNCTION,
            f"No Function named {name!r}; this source defines {', '.join(loaded.functions)}.",
            loaded.filename,
        )
    return loaded.functions[name]


def uses_setup_context(fn: Checkable) -> bool:
    """PyTorch >= 2.0 style: ``forward(x, ...)`` without ctx, plus ``setup_context(ctx, inputs, output)``."""
    return getattr(fn, "setup_context", None) is not torch.autograd.Function.setup_context


def forward_parameters(fn: Checkable) -> list[inspect.Parameter]:
    """forward's parameters that ``apply`` fills: all of them, less ctx in the classic style."""
    try:
        params = list(inspect.signature(fn.forward).parameters.values())
    except (TypeError, ValueError):
        return []
    return params if uses_setup_context(fn) else params[1:]


def argument_names(fn: Checkable, count: int) -> list[str]:
    """Names of the arguments of ``apply``, for labels such as ``weight[2,0]``: the callable's own
    own ``argument_names_for`` when it has one (a module checked with its parameters: ``layer.weight``)."""
    given = getattr(fn, "argument_names_for", None)
    if callable(given):
        return list(given(count))
    params = forward_parameters(fn)
    names = []
    for j in range(count):
        if j < len(params) and params[j].kind in (params[j].POSITIONAL_ONLY, params[j].POSITIONAL_OR_KEYWORD):
            names.append(params[j].name)
        else:
            names.append(f"in{j}")
    return names


def required_arguments(fn: Checkable) -> list[str]:
    """forward's positional parameters without defaults (after ctx, in the classic style)."""
    return [
        p.name
        for p in forward_parameters(fn)
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]


def method_line(loaded: LoadedSource, fn: Checkable, method: str, *, last_return: bool = False) -> int | None:
    """Line of ``fn.method``'s def (or its last return) in the user's source, found by parsing."""
    try:
        tree = ast.parse(loaded.source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == fn.__name__:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == method:
                    if last_return:
                        returns = [n.lineno for n in ast.walk(item) if isinstance(n, ast.Return)]
                        if returns:
                            return max(returns)
                    return item.lineno
    return None


def _syntax_error(exc: SyntaxError, filename: str) -> UserCodeError:
    text = (exc.text or "").rstrip("\n")
    if len(text) > MAX_QUOTED_LINE:
        text = text[: MAX_QUOTED_LINE - 1] + "…"
    if not exc.lineno:  # e.g. NUL bytes: the compiler names no line
        return UserCodeError(ErrorKind.SYNTAX, f"Syntax error: {exc.msg}.", filename)
    frames = [Frame(filename, exc.lineno, "<module>", text.strip())]
    col = f", column {exc.offset}" if exc.offset else ""
    message = f"Syntax error: {exc.msg} (line {exc.lineno}{col})"
    if text.strip():
        message += f": {text.strip()}"
    return UserCodeError(ErrorKind.SYNTAX, message, filename, exc.lineno, frames)


# --- targets: a Function where it already lives, inputs from a file ---------------------------


class TargetError(GradvizError):
    """A target or inputs file gradviz cannot use: one sentence, no traceback of gradviz's."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def load_target(target: str | Target, *, inputs_path: str | Path | None = None) -> LoadedSource:
    """``pkg.mod:Name`` (imported, the current folder first on ``sys.path`` as ``python -m`` puts
    it) or ``file.py[:Name]`` (run as ``gradviz check file.py`` runs it). With ``inputs_path``,
    ``example_inputs`` gives that file's arguments instead of the module's own."""
    target = parse_target(target) if isinstance(target, str) else target
    if target.module:
        loaded = _load_module_target(target.module, target.attribute)
    else:
        loaded = load_file(target.path or "")
        if target.attribute:
            _pick_attribute(loaded, target.attribute, str(target))
    if inputs_path is not None:
        args = load_inputs_file(inputs_path)
        loaded.example_inputs = lambda device, dtype: args  # prepare_inputs copies them each time
        loaded.inputs_path = str(inputs_path)
    return loaded


def _load_module_target(name: str, attribute: str | None) -> LoadedSource:
    registered = Registrations()
    module = import_target_module(name)
    file = getattr(module, "__file__", None)
    filename = str(Path(file).resolve()) if file else f"<module {name}>"
    try:
        source = read_source(filename)
    except GradvizError:  # a compiled or huge module: only line numbers are lost
        source = ""
    functions = find_functions(module, registered)
    example_inputs = module.__dict__.get("example_inputs")
    loaded = LoadedSource(filename, source, module, functions, example_inputs if callable(example_inputs) else None)
    if attribute:
        _pick_attribute(loaded, attribute, f"{name}:{attribute}")
    elif not functions:
        raise TargetError(
            ErrorKind.NO_FUNCTION,
            f"Module {name} defines or imports no torch.autograd.Function subclass or custom op: name one with "
            f"{name}:Name.",
        )
    return loaded


def import_target_module(name: str) -> types.ModuleType:
    """Import ``name`` with the current folder first on ``sys.path``; a clear error if it is not there.

    A module that is found but fails while importing is the user's code failing: its line is named.
    """
    cwd = os.getcwd()
    if sys.path[:1] != [cwd]:
        sys.path.insert(0, cwd)
    filename = str(locate_module(name) or f"<module {name}>")
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
            raise TargetError(
                ErrorKind.IMPORT,
                f"No module named {exc.name!r} (searched {cwd} first, then sys.path): check the spelling, run "
                f"gradviz from the folder that holds {exc.name.split('.')[0]}, or install that package.",
            ) from None
        raise from_exception(ErrorKind.IMPORT, exc, filename, f"Importing {name}") from None
    except (Exception, SystemExit) as exc:
        raise from_exception(ErrorKind.IMPORT, exc, filename, f"Importing {name}") from None


def _pick_attribute(loaded: LoadedSource, attribute: str, target: str) -> None:
    """Make ``attribute`` (dotted for nested names) the one to check: a Function or a callable on one;
    an operator's ``ns::name`` is looked up among the operators found."""
    if "::" in attribute:
        if attribute not in loaded.functions:
            offered = ", ".join(loaded.functions) or "none"
            raise TargetError(
                ErrorKind.UNKNOWN_FUNCTION, f"{target}: {loaded.filename} registers no operator {attribute} (found: {offered})."
            )
        loaded.functions = {attribute: loaded.functions[attribute], **loaded.functions}
        loaded.default_function = attribute
        return
    obj: object = loaded.module
    for part in attribute.split("."):
        if not hasattr(obj, part):
            offered = ", ".join(loaded.functions) or "none"
            raise TargetError(
                ErrorKind.UNKNOWN_FUNCTION,
                f"{target}: {loaded.filename} has no attribute {part!r} (Functions there: {offered}).",
            )
        obj = getattr(obj, part)
    try:
        fn = as_checkable(obj, attribute)
    except TypeError:
        raise TargetError(ErrorKind.NO_FUNCTION, f"{target} {describe_not_checkable(obj)}") from None
    if isinstance(fn, CustomOpFunction):
        attribute = fn.__name__  # an op is called by its ns::name wherever it is reached from
    loaded.functions = {attribute: fn, **{k: v for k, v in loaded.functions.items() if k != attribute}}
    loaded.default_function = attribute


def load_inputs_file(path: str | Path) -> tuple:
    """The positional arguments saved with ``torch.save``, loaded with ``weights_only=True`` (so the
    file cannot run code) onto the CPU; one tensor counts as one argument."""
    try:
        path = check_inputs_path(path)
    except SettingsError as exc:
        raise TargetError(ErrorKind.EXAMPLE_INPUTS, exc.message) from None
    try:
        value = torch.load(path, weights_only=True, map_location="cpu")
    except Exception as exc:
        refused = _UNSAFE_GLOBAL.search(str(exc))
        if refused:
            raise _bad_inputs(
                path,
                f"it holds a {refused.group(1)}, which loading with weights_only=True refuses (it could run code). "
                "Save only tensors, numbers, strings, None and tuples, lists or dicts of them: torch.save((x, w), path).",
            ) from None
        if not zipfile.is_zipfile(path):
            why = "its bytes are not the zip archive torch.save writes"
        else:
            lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
            why = f"{type(exc).__name__}: {lines[-1] if lines else 'damaged'}"
        raise _bad_inputs(path, f"it is not a file written by torch.save ({why}).") from None
    if isinstance(value, torch.Tensor):
        return (value,)
    if isinstance(value, tuple | list):
        return tuple(value)
    hint = " gradviz passes the inputs to apply by position: save a tuple (x, w)." if isinstance(value, dict) else ""
    kind = type(value).__name__
    article = "an" if kind[:1].lower() in "aeiou" else "a"
    raise _bad_inputs(path, f"it holds {article} {kind}, not a tensor or a tuple of arguments.{hint}")


_UNSAFE_GLOBAL = re.compile(r"Unsupported global: GLOBAL (\S+)")


def _bad_inputs(path: Path, why: str) -> TargetError:
    return TargetError(ErrorKind.EXAMPLE_INPUTS, CANNOT_USE_INPUTS.format(path=path, why=why))

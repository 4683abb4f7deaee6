"""How a process other than this one reaches the checked function: by import, or by its source.

A Function that lives in a module of a package is imported by name, its package's folder put on
``sys.path``. One defined in a notebook, a script's ``__main__`` or a test file (importing that
would need pytest and whatever else the tests use) is written out as source: its own code, preceded by what it uses from its module (imports,
plain constants, and the functions and classes of that module it calls, recursively). Globals
that cannot be written as source (a tensor, an open file) are refused with their name.
"""

from __future__ import annotations

import ast
import dis
import inspect
import sys
import textwrap
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gradviz.api.literals import NotWritable, literal
from gradviz.core.callables import function_class
from gradviz.core.custom_ops import global_name, is_custom_op, op_name

NOT_IMPORTABLE = ("__main__", "__mp_main__", "builtins")
LAMBDA_NAME = "checked_function"  # what a lambda is called in the written source
# (folder to put on sys.path, module to import from it) -> the line that does it, or None
PathLine = Callable[[str | None, str], str | None]


@dataclass
class Reach:
    """``module`` + ``root`` when importable, else ``source`` defining ``name``."""

    name: str  # Square, or Outer.Inner, or a function's name
    is_function_class: bool
    module: str | None = None
    root: str | None = None  # the folder to put first on sys.path for the import
    source: str | None = None

    @property
    def call(self) -> str:
        """The expression to call with the inputs: ``Square.apply`` or ``scaled``."""
        return f"{self.name}.apply" if self.is_function_class else self.name


def reach(fn: Any, place: PathLine | None = None) -> Reach:
    """How to reach ``fn`` (a Function class, its apply, or a callable); NotWritable when neither
    an import nor the source can. ``place`` writes the lines of the source that make a module
    importable (default ``path_line``: its folder's absolute path, for a process on this machine)."""
    if is_custom_op(fn):
        return custom_op_reach(fn)
    cls = function_class(fn)
    obj = cls or fn
    home = importable_home(obj)
    name = getattr(obj, "__qualname__", "") or getattr(obj, "__name__", "")
    if home is not None and not _in_test_file(obj):
        module, root = home
        return Reach(name, cls is not None, module=module, root=root)
    if home is not None:  # a test file: its source needs torch only, importing it needs pytest and more
        try:
            return Reach(name, cls is not None, source=standalone_source(obj, name, place))
        except NotWritable:
            module, root = home
            return Reach(name, cls is not None, module=module, root=root)
    if getattr(obj, "__name__", None) == "<lambda>":
        name = LAMBDA_NAME
    elif "<locals>" in name:
        name = obj.__name__
    return Reach(name, cls is not None, source=standalone_source(obj, name, place))


def _in_test_file(obj: Any) -> bool:
    """Defined in a file pytest collects (test_*.py, *_test.py) or a conftest.py."""
    file = getattr(sys.modules.get(getattr(obj, "__module__", "") or ""), "__file__", None) or ""
    stem = Path(file).stem
    return stem.startswith("test_") or stem.endswith("_test") or stem == "conftest"


def importable_home(obj: Any) -> tuple[str, str | None] | None:
    """``(module, folder to put on sys.path)`` when ``import module; module.<qualname>`` is ``obj``."""
    module_name = getattr(obj, "__module__", "")
    qualname = getattr(obj, "__qualname__", "")
    module = sys.modules.get(module_name or "")
    if module is None or module_name in NOT_IMPORTABLE or module_name.startswith("usercode_"):
        return None
    if not _dotted(qualname) or not _dotted(module_name) or _resolve(module, qualname) is not obj:
        return None  # "<locals>", or names that are not Python names: never written into an import line
    return module_name, package_root(module)


def _dotted(name: Any) -> bool:
    """``a.b.c`` of plain identifiers (an exact str: a subclass could say anything)."""
    return type(name) is str and all(part.isidentifier() for part in name.split("."))


def package_root(module: types.ModuleType) -> str | None:
    """The folder ``import module`` needs on sys.path (``/r`` for ``pkg.ops`` in ``/r/pkg/ops.py``)."""
    file = getattr(module, "__file__", None)
    if not file:
        return None
    path = Path(file).resolve()
    depth = module.__name__.count(".") + (2 if path.stem == "__init__" else 1)
    return str(path.parents[depth - 1])


def _resolve(module: types.ModuleType, qualname: str) -> Any:
    obj: Any = module
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    return obj


# --- source for what cannot be imported ---------------------------------------------------------


def standalone_source(obj: Any, name: str, place: PathLine | None = None) -> str:
    """A module's worth of code that defines ``name`` as ``obj``."""
    imports: list[str] = ["import torch"]
    definitions: dict[str, str] = {}
    _define(obj, name, imports, definitions, visiting=set(), place=place or path_line)
    return "\n".join(dict.fromkeys(imports)) + "\n\n\n" + "\n\n\n".join(definitions.values()) + "\n"


def path_line(root: str | None, module: str = "") -> str | None:
    """The line that lets a script import from ``root``; None for installed packages (found anyway)."""
    if root is None or any(
        Path(root).is_relative_to(Path(p).resolve()) for p in {sys.prefix, sys.base_prefix}
    ):
        return None
    return f"sys.path.insert(0, {root!r})"


def _define(
    obj: Any, name: str, imports: list[str], definitions: dict[str, str], visiting: set[str], place: PathLine
) -> None:
    visiting.add(name)
    code = own_source(obj, name)
    scope = _globals_of(obj)
    for used in sorted(global_names(obj)):
        if used in definitions or used in visiting or used == name or used not in scope:
            continue  # a builtin, or already written
        if not used.isidentifier():
            continue  # pytest's assert rewriting (@py_builtins): the source has the plain assert
        value = scope[used]
        line = import_line(used, value, place)
        if line is not None:
            imports.append(line)
        elif (
            isinstance(value, type | types.FunctionType)
            and getattr(value, "__module__", None) == obj.__module__
        ):
            _define(value, used, imports, definitions, visiting, place)
        else:
            try:
                definitions[used] = f"{used} = {literal(value)}"
            except NotWritable:
                raise NotWritable(
                    f"{name} uses the global {used!r} (a {type(value).__name__}), which cannot be written as source: "
                    f"define {name} in a module (a .py file) and import it from there"
                ) from None
    if isinstance(obj, types.FunctionType) and obj.__closure__:
        for free, cell in zip(obj.__code__.co_freevars, obj.__closure__):
            try:
                definitions[free] = f"{free} = {literal(cell.cell_contents)}"
            except (NotWritable, ValueError):  # ValueError: an empty cell
                raise NotWritable(
                    f"{name} uses the local variable {free!r} of the function that made it, which cannot be "
                    "written as source: define it at module level"
                ) from None
    definitions[name] = code


def own_source(obj: Any, name: str) -> str:
    """The source of a class or function; a lambda as ``name = lambda ...``."""
    try:
        text = textwrap.dedent(inspect.getsource(obj))
    except (OSError, TypeError):
        raise NotWritable(
            f"the source of {name} is not available (a {type(obj).__name__} without a source file): "
            "define it in a module (a .py file) and import it from there"
        ) from None
    if getattr(obj, "__name__", None) != "<lambda>":
        return text.rstrip() + "\n"
    return f"{name} = {_lambda_text(obj, text)}\n"


def _lambda_text(fn: types.FunctionType, text: str) -> str:
    """The one lambda on the source line(s) whose parameters are ``fn``'s."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        tree = None
    params = list(fn.__code__.co_varnames[: fn.__code__.co_argcount])
    found = [
        node
        for node in (ast.walk(tree) if tree else ())
        if isinstance(node, ast.Lambda) and [a.arg for a in node.args.args] == params
    ]
    segment = ast.get_source_segment(text, found[0]) if len(found) == 1 else None
    if segment is None:
        raise NotWritable(
            "a lambda whose source cannot be singled out (give it a name: def checked(x): ...) "
            "cannot be written as source"
        )
    return segment


def _globals_of(obj: Any) -> dict[str, Any]:
    """The namespace ``obj``'s code reads globals from (a class: its methods')."""
    if isinstance(obj, types.FunctionType):
        return obj.__globals__
    for value in vars(obj).values() if isinstance(obj, type) else ():
        func = getattr(value, "__func__", value)
        if isinstance(func, types.FunctionType):
            return func.__globals__
    module = sys.modules.get(getattr(obj, "__module__", ""))
    return vars(module) if module else {}


def global_names(obj: Any) -> set[str]:
    """Names ``obj`` reads from its module: loads of globals in its code (and its methods'),
    and the names in a class's bases, decorators and class-level statements."""
    names: set[str] = set()
    codes = [obj.__code__] if isinstance(obj, types.FunctionType) else []
    if isinstance(obj, type):
        for value in vars(obj).values():
            func = getattr(value, "__func__", value)  # staticmethod, classmethod
            if isinstance(func, types.FunctionType):
                codes.append(func.__code__)
            if isinstance(value, property):
                codes += [f.__code__ for f in (value.fget, value.fset, value.fdel) if f is not None]
        names |= _class_level_names(obj)
    while codes:
        code = codes.pop()
        names |= {i.argval for i in dis.get_instructions(code) if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
        codes += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return names


def _class_level_names(cls: type) -> set[str]:
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):
        return set()
    node = tree.body[0]
    if not isinstance(node, ast.ClassDef):
        return set()
    parts: list[ast.AST | None] = [*node.bases, *node.keywords, *node.decorator_list]
    for item in node.body:
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
            parts += [*item.decorator_list, *item.args.defaults, *item.args.kw_defaults]
        else:
            parts.append(item)
    return {n.id for part in parts if part is not None for n in ast.walk(part) if isinstance(n, ast.Name)}


def import_line(name: str, value: Any, place: PathLine | None = None) -> str | None:
    """``import numpy as np`` / ``from torch.autograd.function import once_differentiable``, or None."""
    if isinstance(value, types.ModuleType):
        if not _dotted(value.__name__):
            return None
        return f"import {value.__name__}" if value.__name__ == name else f"import {value.__name__} as {name}"
    home = (
        importable_home(value)
        if isinstance(value, type | types.FunctionType | types.BuiltinFunctionType)
        else None
    )
    if home is None:
        return None
    module, root = home
    qualname = value.__qualname__
    if "." in qualname:
        return None
    line = f"from {module} import {qualname}" + ("" if qualname == name else f" as {name}")
    where = (place or path_line)(root, module)
    return f"import sys\n{where}\n{line}" if where else line


def custom_op_reach(fn: Any) -> Reach:
    """A custom op is imported from its module, never written out as source: importing the module
    runs its registrations (register_fake, register_autograd) too."""
    home = global_name(fn)
    module = sys.modules.get(home[0]) if home else None
    if home is None or module is None or home[0] in NOT_IMPORTABLE or home[0].startswith("usercode_"):
        raise NotWritable(
            f"the custom op {op_name(fn)} cannot be imported by another process (it is not a global of an "
            "importable module): define it in a module (a .py file) and import it from there"
        )
    return Reach(home[1], False, module=home[0], root=package_root(module))

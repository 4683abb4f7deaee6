"""Custom operators (``torch.library.custom_op`` + ``register_autograd``), known in one place.

PyTorch's custom-operator guide recommends an op over a bare ``autograd.Function``. The user may
hand gradviz the ``CustomOpDef`` the decorator returns, or the op as the dispatcher knows it
(``torch.ops.ns.name``, an OpOverloadPacket, or its ``.default`` OpOverload). Whichever it is,
the op is called ``ns::name`` (its qualified name, never the Python class or the mangled pybind11
name of ``torch.ops``), its inputs are named by its schema, and its Python function (when it was
defined with ``custom_op``) is where its source lives. The autograd graph shows the op's backward
as a ``GeneratedBackwardFor_ns_name_default`` node that PyTorch builds: ``backward_node_op``
maps it back to the op.
"""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch._library.custom_ops import OPDEFS, CustomOpDef

__all__ = [
    "Registrations",
    "backward_node_op",
    "find_custom_ops",
    "is_custom_op",
    "is_user_op",
    "op_argument_names",
    "op_definition",
    "op_name",
    "op_overload",
    "op_python_function",
    "op_python_name",
]

_OP_TYPES = (CustomOpDef, torch._ops.OpOverloadPacket, torch._ops.OpOverload)


def is_custom_op(obj: Any) -> bool:
    """A ``CustomOpDef``, ``torch.ops.ns.name`` or ``torch.ops.ns.name.overload``."""
    return isinstance(obj, _OP_TYPES)


def op_overload(obj: Any) -> torch._ops.OpOverload:
    """The overload a call of ``obj`` dispatches to: the CustomOpDef's own, a packet's ``default``."""
    if isinstance(obj, CustomOpDef):
        return obj._opoverload
    if isinstance(obj, torch._ops.OpOverloadPacket):
        names = obj.overloads()
        return getattr(obj, "default" if "default" in names else names[0])
    return obj


def op_name(obj: Any) -> str:
    """``ns::name``, or ``ns::name.overload`` for an overload other than the default."""
    if isinstance(obj, CustomOpDef):
        return obj._qualname
    overload = op_overload(obj)
    name = overload._schema.name
    if isinstance(obj, torch._ops.OpOverload) and overload._overloadname != "default":
        name += f".{overload._overloadname}"
    return name


def op_argument_names(obj: Any) -> list[str]:
    """The schema's argument names, in order (``x``, ``weight``, ``bias``)."""
    return [a.name for a in op_overload(obj)._schema.arguments]


# PyTorch's own operators: not the user's registrations (opcheck tests only the user's)
BUILTIN_NAMESPACES = frozenset({"aten", "prim", "prims", "quantized", "_quantized", "rngprims", "higher_order"})


def is_user_op(obj: Any) -> bool:
    """An op the user registered (``custom_op``, or ``torch.library.Library``), not one of PyTorch's."""
    return op_definition(obj) is not None or op_name(obj).split("::")[0] not in BUILTIN_NAMESPACES


def op_definition(obj: Any) -> CustomOpDef | None:
    """The ``CustomOpDef`` behind the op, when it was defined with ``torch.library.custom_op``."""
    if isinstance(obj, CustomOpDef):
        return obj
    return OPDEFS.get(op_overload(obj)._schema.name)


def op_python_function(obj: Any) -> Callable | None:
    """The user's Python function the op was made from (its source, its file), or None."""
    definition = op_definition(obj)
    return definition._init_fn if definition is not None else None


def op_python_name(obj: Any) -> str:
    """What the user calls the op in Python: the name ``custom_op`` returned (``cube``), else
    ``torch.ops.ns.name`` (an op registered with ``torch.library.Library``)."""
    init = op_python_function(obj)
    if init is not None and getattr(init, "__name__", "") not in ("", "<lambda>"):
        return str(init.__name__)
    namespace, _, name = op_name(obj).partition("::")
    return f"torch.ops.{namespace}.{name.split('.')[0]}"


def find_custom_ops(module: types.ModuleType, registered: Registrations | None = None) -> dict[str, Any]:
    """The user's ops, by ``ns::name``: the module's own first, then imported ones (as Functions
    are found). They are the module's globals that are ops (``CustomOpDef``, ``torch.ops.ns.name``),
    and with ``registered`` every operator registered while the module ran, however it was
    defined (``torch.library.Library(ns, "DEF")`` + ``define`` + ``impl``, a C++ extension)."""
    found: dict[str, Any] = {}
    for obj in vars(module).values():
        if isinstance(obj, CustomOpDef) or (is_custom_op(obj) and is_user_op(obj)):
            found.setdefault(op_name(obj), obj)
    files = {getattr(module, "__file__", None) or ""}
    new = registered.new_ops(module) if registered is not None else {}
    for name, overload in new.items():
        found.setdefault(name, op_definition(overload) or overload)

    def own(name: str) -> bool:
        definition = op_definition(found[name])
        if definition is not None:
            return getattr(definition._init_fn, "__module__", None) == module.__name__
        return registered is not None and registered.where(name) in files

    return {**{n: op for n, op in found.items() if own(n)}, **{n: op for n, op in found.items() if not own(n)}}


_REGISTERED_AT = re.compile(r"registered at (.+):\d+\s*$")
_INSTALLED = ("site-packages", "dist-packages")  # a library's folder: its ops are not the user's


class Registrations:
    """The dispatcher's operators and the imported modules at one moment (before user code runs),
    to tell afterwards which operators that code registered."""

    def __init__(self) -> None:
        self.ops = frozenset(torch._C._dispatch_get_all_op_names())
        self.modules = frozenset(sys.modules)

    def new_ops(self, own: types.ModuleType) -> dict[str, torch._ops.OpOverload]:
        """Every operator registered since, by qualified name (``ns::name``, ``ns::name.overload``),
        less PyTorch's own and those of libraries ``own`` imported from site-packages (torchvision's
        ops are torchvision's, not the user's; ``own``'s package is the user's wherever it is)."""
        own_file = getattr(own, "__file__", None)
        libraries = self._imported_libraries() - {own.__name__.split(".")[0]}
        found = {}
        for qualified in sorted(set(torch._C._dispatch_get_all_op_names()) - self.ops):
            namespace = qualified.split("::", 1)[0]
            where = self.where(qualified)
            theirs = namespace in libraries or (_installed(where) and where != own_file)
            if namespace in BUILTIN_NAMESPACES or theirs:
                continue
            overload = _overload(qualified)
            if overload is not None:
                found[op_name(overload)] = overload
        return found

    @staticmethod
    def where(qualified: str) -> str | None:
        """The file the operator's schema was registered from (the ``Library`` call, or C++ source)."""
        name, _, overload = qualified.partition(".")
        try:
            debug = torch._C._dispatch_find_schema_or_throw(name, "" if overload == "default" else overload).debug()
        except RuntimeError:
            return None
        match = _REGISTERED_AT.search(debug)
        return match.group(1) if match else None

    def _imported_libraries(self) -> set[str]:
        """Top-level packages imported since, from site-packages: their namespaces are theirs."""
        names = set()
        for name in set(sys.modules) - self.modules:
            if "." not in name and _installed(getattr(sys.modules.get(name), "__file__", None)):
                names.add(name)
        return names


_TORCH = Path(torch.__file__).parent


def _installed(path: str | None) -> bool:
    """A file of PyTorch's or of an installed library's."""
    if path is None:
        return False
    parts = Path(path).parts
    return any(part in _INSTALLED for part in parts) or parts[: len(_TORCH.parts)] == _TORCH.parts


def _overload(qualified: str) -> torch._ops.OpOverload | None:
    """``torch.ops.ns.name.overload`` for ``ns::name.overload`` (``.default`` without one)."""
    namespace, _, rest = qualified.partition("::")
    name, _, overload = rest.partition(".")
    try:
        return getattr(getattr(getattr(torch.ops, namespace), name), overload or "default")
    except (AttributeError, RuntimeError):
        return None


def global_name(op: Any) -> tuple[str, str] | None:
    """``(module, name)`` such that ``from module import name`` gives the op's CustomOpDef: the
    global of the Python function's module that holds it; None when there is none."""
    definition = op_definition(op)
    if definition is None:
        return None
    module_name = getattr(definition._init_fn, "__module__", None) or ""
    module = sys.modules.get(module_name)
    if module is None:
        return None
    preferred = getattr(definition._init_fn, "__name__", "")
    names = [n for n, v in vars(module).items() if v is definition]
    if not names:
        return None
    return module_name, preferred if preferred in names else names[0]


def backward_node_op(cls: type) -> CustomOpDef | None:
    """The op whose ``register_autograd`` made this generated Function class (the graph's node)."""
    name = getattr(cls, "__name__", "")
    if not name.startswith("GeneratedBackwardFor_") or cls.__module__ != "torch._library.autograd":
        return None
    for definition in list(OPDEFS.values()):
        overload = definition._opoverload
        if name == f"GeneratedBackwardFor_{overload._namespace}_{overload._opname}_{overload._overloadname}":
            return definition
    return None

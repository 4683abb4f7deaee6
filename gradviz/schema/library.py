"""The built-in Function library under resources/functions.

Entries are described by parsing each file (docstring, CATEGORY, BUG), never by running it,
so listing the library is instant and safe; running one goes through the normal loader.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

CATEGORIES = ("Seed examples", "Buggy twins", "Conv-BN")


def resources_dir() -> Path:
    """``resources/`` of a source checkout, or ``gradviz/resources`` of an installed copy."""
    try:
        installed = Path(str(resources.files("gradviz.resources")))
        if (installed / "functions").is_dir():
            return installed
    except ModuleNotFoundError:
        pass
    return Path(__file__).resolve().parents[2] / "resources"


def functions_dir() -> Path:
    return resources_dir() / "functions"


@dataclass(frozen=True)
class LibraryEntry:
    name: str  # file stem, e.g. "linear"
    path: Path
    category: str
    summary: str  # first sentence of the docstring
    docstring: str
    bug: str | None


def describe(path: Path) -> LibraryEntry:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    constants: dict[str, str] = {}  # the module's string constants (CATEGORY, BUG)
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    constants[target.id] = node.value.value
    doc = ast.get_docstring(tree) or ""
    summary = doc.split(". ")[0].strip().rstrip(".") + "." if doc else path.stem
    return LibraryEntry(
        path.stem,
        path,
        constants.get("CATEGORY", "Seed examples"),
        " ".join(summary.split()),
        doc,
        constants.get("BUG"),
    )


def builtin_functions() -> list[LibraryEntry]:
    """Every built-in example, grouped by category in CATEGORIES order, then by name."""
    entries = [describe(p) for p in sorted(functions_dir().glob("*.py"))]
    order = {c: k for k, c in enumerate(CATEGORIES)}
    return sorted(entries, key=lambda e: (order.get(e.category, len(order)), e.name))


def find_builtin(name: str) -> Path | None:
    """The built-in example called ``name`` (``linear`` or ``linear.py``); None for anything else,
    a name with a folder in it (``../../elsewhere``) included: only the library's own files."""
    stem = name.removesuffix(".py") if isinstance(name, str) else ""
    if not stem.isidentifier():
        return None
    path = functions_dir() / f"{stem}.py"
    return path if path.is_file() else None


def function_names(source: str) -> list[str]:
    """Classes in ``source`` that look like autograd Functions, then functions decorated
    ``@torch.library.custom_op("ns::name", ...)`` (as ``ns::name``), found without running the code.

    Opening a file must never execute it; the worker's loader gives the exact list when it runs.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    names, ops = [], []
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            bases = [ast.unparse(b) for b in node.bases]
            if any(b.split(".")[-1] in ("Function", "InplaceFunction") for b in bases):
                names.append(node.name)
        elif isinstance(node, ast.FunctionDef):  # @torch.library.custom_op("ns::name", ...): listed as ns::name
            ops += [
                d.args[0].value
                for d in node.decorator_list
                if isinstance(d, ast.Call) and ast.unparse(d.func).split(".")[-1] == "custom_op" and d.args
                and isinstance(d.args[0], ast.Constant) and isinstance(d.args[0].value, str)
            ]  # fmt: skip
    return names + ops  # the worker's order: Functions, then custom ops

"""What to check, named the way Python names things: ``package.module:Name`` or ``file.py[:Name]``.

Torch-free, so the CLI and the window parse a target without importing anything the user
wrote; the worker imports it (``gradviz.core.loader.load_target``). Entry-point notation
(``module:attribute``, the attribute dotted for nested names) is what ``pyproject.toml`` and
``python -m`` users already know.
"""

from __future__ import annotations

import importlib.machinery
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

CANNOT_USE_INPUTS = "Cannot use {path} as inputs: {why}"  # an inputs file refused, here or where it is loaded
_MODULE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
# a name in the module (dotted for nested ones), or an operator's qualified name (ns::name[.overload])
_ATTRIBUTE = re.compile(r"^([A-Za-z_]\w*(\.[A-Za-z_]\w*)*|[A-Za-z_]\w*::[A-Za-z_]\w*(\.\w+)?)$")


@dataclass(frozen=True)
class Target:
    """A module to import or a source file to run, and optionally the name to check in it."""

    module: str | None = None
    path: str | None = None
    attribute: str | None = None

    def __str__(self) -> str:
        where = self.module or self.path or ""
        return f"{where}:{self.attribute}" if self.attribute else where


def path_exists(path: str | os.PathLike[str]) -> bool:
    """``Path.exists`` that never raises: a name the OS refuses (over 255 bytes: ENAMETOOLONG, a
    NUL, a folder it may not search) names nothing here, and whoever opens it reports why."""
    try:
        os.stat(path)
    except (OSError, ValueError):
        return False
    return True


def is_module_target(text: str) -> bool:
    """``pkg.mod:Name`` (and not a path that happens to contain a colon)."""
    module, colon, attribute = text.partition(":")
    return bool(colon) and bool(_MODULE.match(module)) and bool(_ATTRIBUTE.match(attribute))


def names_a_module(text: str) -> bool:
    """``pkg.mod:Name`` that names no file here. A path that exists is that path, and ``one.py:Cube``
    with ``one.py`` in this folder is the file's Cube, not a module ``py`` of a package ``one``."""
    module = text.partition(":")[0]
    return is_module_target(text) and not path_exists(text) and not (module.endswith(".py") and path_exists(module))


def parse_target(text: str) -> Target:
    """``pkg.mod:Name`` -> module target; ``path/f.py:Name`` or ``path/f.py`` -> file target
    (decided by ``names_a_module``, so an existing file wins over a module of the same spelling)."""
    if names_a_module(text):
        module, _, attribute = text.partition(":")
        return Target(module=module, attribute=attribute)
    at = text.rfind(".py:")  # not the last colon: an operator's name has two (file.py:ns::name)
    if at >= 0 and _ATTRIBUTE.match(text[at + 4 :]):
        return Target(path=text[: at + 3], attribute=text[at + 4 :])
    return Target(path=text)


def locate_module(name: str, first: str | os.PathLike[str] | None = None) -> Path | None:
    """The source file ``import name`` would run, found without running anything.

    ``first`` is searched before ``sys.path`` (the current folder, as ``python -m`` does). Used
    to quote the user's lines when a run of a module target hangs or crashes.
    """
    import sys

    search = [str(first)] if first is not None else []
    search += [p or os.getcwd() for p in sys.path]
    spec = None
    for part in name.split("."):
        full = part if spec is None else f"{spec.name}.{part}"
        try:
            spec = importlib.machinery.PathFinder.find_spec(full, search)
        except (OSError, ValueError, ImportError):  # a part too long for the file system: not found
            return None
        if spec is None:
            return None
        search = list(spec.submodule_search_locations or [])
    origin = spec.origin if spec else None
    return Path(origin) if origin and origin.endswith(".py") else None


def check_inputs_path(path: str | os.PathLike[str]) -> Path:
    """An inputs file that exists and is a regular file, or SettingsError saying what it is instead.

    Checked before anything starts (the CLI), and again where the file is loaded (the worker).
    """
    from gradviz.schema.errors import SettingsError

    path = Path(path)
    try:
        info = os.stat(path)
    except OSError as exc:
        raise SettingsError(CANNOT_USE_INPUTS.format(path=path, why=f"{exc.strerror or exc}.")) from None
    if not stat.S_ISREG(info.st_mode):
        kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
        why = f"it is {kind}; give a file written by torch.save."
        raise SettingsError(CANNOT_USE_INPUTS.format(path=path, why=why))
    return path

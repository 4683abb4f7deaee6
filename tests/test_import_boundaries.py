"""The layers hold by layout, not discipline: each imports with what it must not use made unimportable.

schema and protocol (and the app) import every module with torch blocked; core and
worker with Qt blocked, and the core still checks a Function there (napari's headless job does
the same with Qt uninstalled). lint-imports checks the same rules statically in ``make test``.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.paths import ROOT

WALK = """
import sys
for name in {blocked!r}:
    sys.modules[name] = None  # any import of these now raises ImportError
import importlib, pkgutil
for package_name in {packages!r}:
    package = importlib.import_module(package_name)
    for info in pkgutil.walk_packages(package.__path__, package_name + "."):
        importlib.import_module(info.name)
{then}
print("ok")
"""

CHECK_LINEAR = """
from gradviz.core.check import check_source
from gradviz.core.loader import load_file
from gradviz.schema.library import find_builtin
assert check_source(load_file(find_builtin("linear"))).passed
"""

QT = ("PySide6", "PyQt5", "PyQt6", "pyqtgraph", "gradviz.app")
TORCH = ("torch", "gradviz.core", "gradviz.worker")


@pytest.mark.parametrize(
    ("packages", "blocked", "then"),
    [
        (("gradviz.schema", "gradviz.protocol"), TORCH + QT, ""),
        (("gradviz.app",), TORCH, ""),
        (("gradviz.core", "gradviz.worker"), QT, CHECK_LINEAR),
    ],
    ids=["schema+protocol without torch or Qt", "app without torch", "core+worker without Qt"],
)
def test_every_module_imports_with_the_forbidden_ones_blocked(packages, blocked, then):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "QT_QPA_PLATFORM": "offscreen"}
    code = WALK.format(blocked=blocked, packages=packages, then=then)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("ok")


def test_a_forbidden_import_is_caught(tmp_path):
    """The blocking itself works: a module that imports torch fails to import."""
    (tmp_path / "leaky.py").write_text("import torch\n")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    code = "import sys\nsys.modules['torch'] = None\nimport leaky\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode != 0 and "import of torch halted" in out.stderr

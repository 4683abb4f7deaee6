"""gradviz.core must import and run with Qt made unimportable (napari's contract)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import sys
for name in ("PySide6", "PyQt5", "PyQt6", "pyqtgraph", "gradviz.app"):
    sys.modules[name] = None  # any import of these now raises ImportError
import pkgutil, importlib, gradviz.core, gradviz.cli
for info in pkgutil.iter_modules(gradviz.core.__path__):
    importlib.import_module(f"gradviz.core.{info.name}")
from gradviz.core.check import check_source
from gradviz.core.loader import load_file
from gradviz.schema.library import find_builtin
assert check_source(load_file(find_builtin("linear"))).passed
print("ok")
"""


def test_core_runs_with_qt_blocked():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"

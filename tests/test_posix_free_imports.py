"""The library imports on Windows: nothing on its import path needs a POSIX-only module.

``fcntl``, ``termios`` and ``resource`` do not exist on Windows. Here they are made unimportable
(a meta-path finder that refuses them, as Windows' missing modules would), then every library
entry point and every module of ``gradviz.schema`` and ``gradviz.protocol`` is imported and
``gradviz.check`` (the in-process check) and ``assert_gradients`` run. The CLI and the worker's
client import too, so ``gradviz check`` reaches its one-line "needs Linux or macOS" error; only
the worker process itself, POSIX by design, may need them.
"""

from __future__ import annotations

import os
import subprocess
import sys

from tests.paths import ROOT

POSIX_ONLY = ("fcntl", "termios", "resource")

SCRIPT = """
import importlib, importlib.abc, pkgutil, sys
BLOCKED = set(sys.argv[1:])

class NotOnWindows(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NotOnWindows())
for name in BLOCKED:
    sys.modules.pop(name, None)
LIBRARY = ("gradviz", "gradviz.api", "gradviz.testing", "gradviz.pytest_plugin", "gradviz.notebook")
for name in LIBRARY + ("gradviz.cli.main", "gradviz.worker.client"):  # the CLI gets as far as its clear error
    importlib.import_module(name)
for package_name in ("gradviz.schema", "gradviz.protocol"):
    package = importlib.import_module(package_name)
    for info in pkgutil.walk_packages(package.__path__, package_name + "."):
        importlib.import_module(info.name)

import torch
import gradviz
from gradviz.testing import assert_gradients

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g

x = torch.linspace(0.5, 1.5, 5, dtype=torch.float64, requires_grad=True)
report = gradviz.check(Square.apply, (x,))
assert report.passed, report
assert_gradients(Square.apply, (x,))
print("checked", sorted(BLOCKED & set(sys.modules)))
"""


def test_the_library_imports_and_checks_without_posix_only_modules(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, *POSIX_ONLY], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "checked []"

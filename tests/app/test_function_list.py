"""The Function list follows the text a few times a second, off the GUI thread, and agrees with
``function_names`` (the ``ast`` rule) on every file it can parse."""

from __future__ import annotations

import threading

import pytest
from PySide6.QtCore import QElapsedTimer

from gradviz.app import function_list
from gradviz.app.function_list import REPARSE_DELAY_MS, FunctionListUpdater, scan_function_names
from gradviz.schema.library import builtin_functions, function_names
from tests.paths import CORPUS

SOURCES = [e.path for e in builtin_functions()] + sorted(
    p for p in CORPUS.glob("*.py") if p.name not in ("not_utf8.py", "syntax_error.py")  # files ast parses
)

EDGE = '''
import torch
from torch import autograd
from torch.autograd import Function as F

class Plain(torch.autograd.Function): pass
class Dotted(autograd.Function):
    pass
class Inplace(torch.autograd.function.InplaceFunction, metaclass=type):
    pass
class Multi(
    object,
    torch.autograd.Function,
):
    pass
class NotOne(torch.nn.Module):
    pass
class Aliased(F):  # ast sees the alias F, not Function
    pass
if True:
    class Nested(torch.autograd.Function):  # not at the top level
        pass
def f():
    class Inner(torch.autograd.Function):
        pass
'''


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.stem)
def test_the_scan_agrees_with_the_ast_rule(path):
    text = path.read_text(encoding="utf-8")
    assert scan_function_names(text) == function_names(text)


def test_the_scan_agrees_on_the_spellings_of_a_base():
    assert scan_function_names(EDGE) == function_names(EDGE) == ["Plain", "Dotted", "Inplace", "Multi"]


def test_half_typed_code_still_lists_its_functions():
    """While a line is half typed the module does not parse; the headers still do."""
    text = EDGE + "\nclass Half(torch.autograd.Function):\n    def forward(ctx, x\n"
    assert function_names(text) == []
    assert scan_function_names(text)[-1] == "Half"


def test_the_list_follows_typing_a_few_times_a_second_off_the_gui_thread(qtbot, monkeypatch):
    scans: list[str] = []

    def counted(text: str, **options) -> list[str]:
        scans.append(threading.current_thread().name)
        return scan_function_names(text, **options)

    monkeypatch.setattr(function_list, "scan_function_names", counted)
    text = ["import torch\n"]
    updater = FunctionListUpdater(lambda: "".join(text))
    found: list[list[str]] = []
    updater.found.connect(found.append)
    clock = QElapsedTimer()
    clock.start()
    for k in range(60):  # 60 keys, one every 20 ms
        text.append(f"# key {k}\n")
        updater.text_changed()
        qtbot.wait(20)
    text.append("class Typed(torch.autograd.Function):\n    pass\n")
    updater.text_changed()
    qtbot.waitUntil(lambda: found and found[-1] == ["Typed"], timeout=5_000)
    elapsed_ms = clock.elapsed()
    assert len(scans) <= elapsed_ms / REPARSE_DELAY_MS + 2  # at most one scan per delay, not one per key
    assert scans and threading.main_thread().name not in scans

"""A corpus file that defines a custom op may be run many times in one test process.

The Jacobian tests run each corpus file afresh (``oracle.load_module``, gradviz's ``load_file``)
while other test modules hold what their own import of the file defined. Running
``@torch.library.custom_op("ns::name")`` again makes PyTorch destroy the first definition
(``get_library_allowing_overwrite``) and register a new one: the ``CustomOpDef`` the first import
holds keeps a handle to the dispatcher entry just freed. Calling it then works or fails by how the
heap was reused ("schema ... not registered yet", ``std::bad_alloc``, a crash), so a test fails
or not by the order the tests ran in (``tests/core/test_forward_ad.py`` on
``gvtest_fwd::sin_no_forward`` after ``test_real_world.py`` in the same pytest process). A corpus
file defines each op once per process (as ``vmap_functions.py`` does) and takes the registered
one on a second run.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from torch._library.custom_ops import OPDEFS, CustomOpDef

from gradviz.core.loader import load_file
from tests.real_world import oracle

WITH_OPS = [p for p in oracle.corpus_files() if "custom_op(" in p.read_text(encoding="utf-8")]


def _ops(module) -> dict[str, CustomOpDef]:
    return {op._qualname: op for op in vars(module).values() if isinstance(op, CustomOpDef)}


def test_the_corpus_has_files_that_define_ops():
    assert {p.name for p in WITH_OPS} >= {"jvp_functions.py", "vmap_functions.py"}


@pytest.mark.parametrize("path", WITH_OPS, ids=lambda p: p.stem)
def test_running_a_file_again_leaves_the_ops_an_earlier_run_holds_registered(path: Path):
    held = _ops(oracle.load_module(path))
    assert held, f"{path.name} defines no custom op at top level"
    again = oracle.load_module(path)  # as the Jacobian tests run it
    loaded = load_file(path)  # as gradviz's own corpus tests run it
    for name, op in held.items():
        assert OPDEFS[name] is op, f"running {path.name} again registered {name} anew"
        assert _ops(again)[name] is op and _ops(loaded.module)[name] is op

"""An input whose type is a subclass of a plain type (str, int, float, tuple,
list, dict, a tensor) with a hostile ``__repr__`` must not put code into reproducer.py.

Each payload would create a marker file when the script runs; the script is generated for real
(``Report.save``), run in a subprocess with only torch on the path, and the marker must not exist.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import torch

import gradviz
from gradviz.api.literals import literal


def scaled(x, mode, factor, scale, shape, options, order):
    """Uses every argument, so each is needed to rebuild the call."""
    assert mode == "sum" and shape == (2, 3) and options == {"a": 1} and order == [1, 2]
    return x * float(factor) * scale


def hostile_types(marker: Path) -> dict[str, type]:
    """Subclasses whose repr (and the name of one of them) is code that creates ``marker``."""
    payload = f"__import__('pathlib').Path({str(marker)!r}).write_text('pwned')"

    def evil_repr(self) -> str:
        return payload

    def evil_str(self) -> str:
        return payload

    body = {"__repr__": evil_repr, "__str__": evil_str}
    return {
        # a class name holding a newline and code: it must not break out of a comment
        "str": type(f"Evil\n{payload}\n#", (str,), body),
        "int": type("EvilInt", (int,), body),
        "float": type("EvilFloat", (float,), body),
        "tuple": type("EvilTuple", (tuple,), body),
        "dict": type("EvilDict", (dict,), body),
        "list": type("EvilList", (list,), body),
    }


def test_hostile_reprs_are_not_written_into_the_reproducer(tmp_path):
    marker = tmp_path / "payload_ran"
    evil = hostile_types(marker)
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    inputs = (
        x,
        evil["str"]("sum"),
        evil["int"](3),
        evil["float"](1.5),
        evil["tuple"]((2, 3)),
        evil["dict"]({"a": 1}),
        evil["list"]([1, 2]),
    )
    assert repr(inputs[1]).startswith("__import__")  # the attack is real: repr() is the payload
    report = gradviz.check(scaled, inputs, raise_exception=False)
    assert report.passed
    written = report.save(tmp_path / "report")
    script = tmp_path / "report" / "reproducer.py"
    assert script in written
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # torch only, as a bug report's reader
    run = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert not marker.exists(), "the reproducer ran the payload"
    assert run.returncode == 0 and "gradcheck passed" in run.stdout, run.stdout + run.stderr
    text = script.read_text()
    assert "__import__('pathlib')" not in text
    assert "(a subclass of str) is written as a plain str" in text


def test_a_tensor_subclass_writes_its_plain_values(tmp_path):
    marker = tmp_path / "payload_ran"
    payload = f"__import__('pathlib').Path({str(marker)!r}).write_text('pwned')"

    class EvilTensor(torch.Tensor):
        def tolist(self):
            return [hostile_types(marker)["str"]("1")]

        def __repr__(self) -> str:
            return payload

    t = torch.arange(4.0).as_subclass(EvilTensor)
    notes: list[str] = []
    text = literal(t, notes)
    assert text == "torch.tensor([0.0, 1.0, 2.0, 3.0], dtype=torch.float32)"
    assert notes and "EvilTensor" in notes[0]
    namespace = {"torch": torch}
    exec(compile(f"value = {text}", "<literal>", "exec"), namespace)  # what the script would run
    assert torch.equal(namespace["value"], torch.arange(4.0)) and not marker.exists()


def test_plain_values_read_back_exactly():
    for value in (3, -0.1, float("inf"), float("nan"), complex(1, float("-inf")), "a'\"\n", b"\x00", (1,), [], {1: (2, 3)}):
        back = eval(literal(value), {"complex": complex, "float": float})
        assert repr(back) == repr(value)


def test_hostile_folder_names_are_not_written_as_code(tmp_path):
    """The script finds the user's package through a path relative to itself
    (or, for ``reproducer()``'s text, the folder it was in): folder names are written as plain
    string constants, never as code."""
    marker = tmp_path / "payload_ran"
    hostile = tmp_path / "x');__import__('os').system('touch payload_ran');('\nimport os #"
    package = hostile / "src" / "hostile_pkg_7"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "ops.py").write_text("def doubled(x):\n    return 2.0 * x\n")
    sys.path.insert(0, str(hostile / "src"))
    try:
        from hostile_pkg_7.ops import doubled

        report = gradviz.check(doubled, torch.randn(3, dtype=torch.float64, requires_grad=True))
        report.save(tmp_path / "artifacts" / "t")
        text = report.reproducer()
    finally:
        sys.path.remove(str(hostile / "src"))
        for name in ("hostile_pkg_7", "hostile_pkg_7.ops"):
            sys.modules.pop(name, None)
    script = tmp_path / "artifacts" / "t" / "reproducer.py"
    for source in (script.read_text(), text):
        calls = [
            node
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "put_on_path"
        ]
        assert len(calls) == 1 and all(
            isinstance(arg, ast.Constant | ast.Tuple) for arg in [*calls[0].args, *(k.value for k in calls[0].keywords)]
        ), source
    assert str(hostile) not in script.read_text()  # saved: a path relative to the script only
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert not marker.exists(), "the reproducer ran the payload"
    assert run.returncode == 0 and "gradcheck passed" in run.stdout, run.stdout + run.stderr

"""The README's "From Python" and "In pytest" snippets run as written."""

from __future__ import annotations

import re
import runpy

from tests.paths import ROOT
from tests.real_world.oracle import gradcheck_passes


def snippet(section: str) -> str:
    """The first python block under a README heading."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```python\n(.*?)```", body, re.S).group(1)


def test_from_python_runs_and_says_what_gradcheck_says(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "from_python.py").write_text(snippet("From Python"))
    scope = runpy.run_path(str(tmp_path / "from_python.py"), run_name="from_python")
    printed = capsys.readouterr().out.splitlines()
    expected = gradcheck_passes(scope["Square"].apply, scope["x"], quiet=True)
    assert printed[0] == str(expected) == "False"
    assert printed[1].startswith("Cell(") and "label='out0[" in printed[1]
    assert "a constant factor is wrong" in printed[2]
    assert (tmp_path / "square-report" / "reproducer.py").is_file()  # Square written out: a script's class


def test_in_pytest_runs_and_passes():
    scope = {"__name__": "readme_test"}
    exec(compile(snippet("In pytest"), "README.md", "exec"), scope)
    scope["test_cube_backward"]()


def test_audit_your_model_runs_and_each_node_is_gradchecks_verdict(capsys):
    """The audit section's example: its Function passes at randn, the model's second call fails,
    and every node's verdict is gradcheck's at the inputs the model gave it."""
    scope = {"__name__": "readme_audit"}
    exec(compile(snippet("Audit your model"), "README.md", "exec"), scope)
    printed = capsys.readouterr().out.splitlines()
    torch, cap = scope["torch"], scope["LeakyCap"]
    apply, seen = cap.apply, []

    def recording(x):  # the oracle's own record of each call's input
        seen.append(x.detach().clone().requires_grad_(x.requires_grad))
        return apply(x)

    torch.manual_seed(0)  # as the snippet draws them: x first, then the model's parameters
    x = torch.randn(4, 8, dtype=torch.float64)
    model = scope["Net"]()
    cap.apply = recording
    try:
        model(x)
    finally:
        cap.apply = apply
    oracle = [torch.autograd.gradcheck(apply, (inp,), raise_exception=False) for inp in seen]
    assert oracle == [node.passed for node in scope["report"].nodes] == [True, False]
    at_randn = torch.autograd.gradcheck(apply, (x.clone().requires_grad_(),), raise_exception=False)
    assert printed[:2] == [str(at_randn), "False"] == ["True", "False"]
    assert printed[2].startswith("out LeakyCap call 2 of 2 out0[")
    assert f"prints `True`, `False` and `{printed[2]}`" in (ROOT / "README.md").read_text(encoding="utf-8")

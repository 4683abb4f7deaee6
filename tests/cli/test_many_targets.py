"""``gradviz check a.py b.py pkg.mod:F`` and ``--all``: several targets, one worker, through the real CLI.

Each target's verdict must be the one a separate ``gradviz check TARGET`` gives and the one
``torch.autograd.gradcheck`` gives (``tests/real_world/oracle.py``); the exit status is the worst of
them; a broken target is that target's error, named, and the others still run. That one worker
checked them all is proved twice: the CLI's own count (its stderr line names the worker pids) and
the user's code itself, which writes its parent's pid (a run process is forked from the worker on
Linux) to a file on every load.

Every command of this module starts at once (each pays for a torch import), then each test reads
its own outcome.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from tests.cli.runner import check_document
from tests.paths import ROOT
from tests.real_world.oracle import chosen_function, example_args, gradcheck_verdict, load_module

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the pid proof needs runs forked from the worker")

PIDS_LINE = 'open({pids!r}, "a").write(f"{{__name__}} {{os.getppid()}}\\n")\n'
HEAD = "import os\nimport torch\n"
CUBE = """
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x * x


class HalfCube(Cube):  # not found by reading the file (its base is Cube): the worker's list has it
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 1.5 * x * x
"""
SQUARE = """
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 2 * x
"""
INPUTS = """
def example_inputs(device, dtype):
    return (torch.rand(2, 3, device=device, dtype=dtype, requires_grad=True),)
"""
BROKEN = 'raise RuntimeError("broken on purpose")\n'

# file, then the Functions each target checks (None: the file's first)
MIXED = ["one.py:Cube", "two.py", "shop.ops:HalfCube"]
COMMANDS = {
    "mixed": ["check", *MIXED, "--json"],
    "all": ["check", "one.py", "broken.py", "--all", "--save", "saved"],
    "function twice": ["check", "one.py", "two.py", "--function", "Cube"],
    "save twins": ["check", "one.py", "sub/one.py", "--save", "saved2"],
    **{f"alone {t}": ["check", t, "--json"] for t in MIXED},
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Make the project, start every command at once, collect them."""
    root = tmp_path_factory.mktemp("many")
    pids = root / "ppids.txt"
    line = PIDS_LINE.format(pids=str(pids))
    (root / "shop").mkdir()
    (root / "sub").mkdir()
    (root / "shop" / "__init__.py").write_text("")
    for path, body in {
        "one.py": CUBE,
        "two.py": SQUARE,
        "shop/ops.py": CUBE,
        "sub/one.py": CUBE,
        "broken.py": "",
    }.items():
        text = HEAD + line + (BROKEN if path == "broken.py" else textwrap.dedent(body) + INPUTS)
        (root / path).write_text(text, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for display in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        env.pop(display, None)
    started = {
        name: subprocess.Popen(
            [sys.executable, "-m", "gradviz", *args], cwd=root, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True,
        )
        for name, args in COMMANDS.items()
    }  # fmt: skip
    done = {}
    for name, process in started.items():
        stdout, stderr = process.communicate(timeout=600)
        done[name] = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    return root, done


def documents(out: subprocess.CompletedProcess) -> list[dict]:
    """One JSON document a line, each valid against the shipped schema (check or error)."""
    found = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    for data in found:
        check_document("check", data)
    return found


def worker_pids(out: subprocess.CompletedProcess) -> list[int]:
    """The pids the CLI says its targets were checked by (its last stderr line)."""
    match = re.search(r"checked by (\d+) worker process(?:es)? \(pid ([\d, ]+)\)", out.stderr)
    assert match, out.stderr
    pids = [int(p) for p in match.group(2).split(",")]
    assert int(match.group(1)) == len(pids)
    return pids


def parents_seen(root: Path) -> Counter[int]:
    """How many times the user's code was loaded below each parent pid."""
    loads = Counter(int(line.split()[1]) for line in (root / "ppids.txt").read_text().splitlines())
    del loads[os.getppid()]  # the oracle's loads, in this test process
    return loads


def oracle(root: Path, target: str) -> bool:
    """gradcheck's verdict on the Function a target names, with the inputs gradviz builds (seed 0)."""
    path, _, name = target.partition(":")
    module = load_module(root / (path if path.endswith(".py") else path.replace(".", "/") + ".py"))
    fn = getattr(module, name) if name else chosen_function(module)
    return gradcheck_verdict(fn, example_args(module, seed=0)).passed


def test_several_targets_give_the_verdicts_of_separate_calls_and_of_gradcheck(runs):
    root, done = runs
    together = documents(done["mixed"])
    assert [d["target"] for d in together] == MIXED
    for target, document in zip(MIXED, together, strict=True):
        alone = documents(done[f"alone {target}"])
        assert len(alone) == 1 and "target" not in alone[0]  # one target: today's document, unchanged
        assert document["passed"] == alone[0]["passed"] == oracle(root, target), target
        assert document["function"] == alone[0]["function"]
        assert document["blocks"][0]["failing"] == alone[0]["blocks"][0]["failing"]
    assert [d["passed"] for d in together] == [True, True, False]


def test_the_exit_status_is_the_worst_of_the_targets(runs):
    _, done = runs
    assert [done[f"alone {t}"].returncode for t in MIXED] == [0, 0, 1]
    assert done["mixed"].returncode == 1  # a failing cell is worse than a pass
    assert done["all"].returncode == 2  # an error is worse than a failing cell


def test_one_worker_checks_every_target(runs):
    root, done = runs
    (mixed_pid,) = worker_pids(done["mixed"])
    (all_pid,) = worker_pids(done["all"])
    assert "3 targets" in done["mixed"].stderr and "3 targets" in done["all"].stderr
    assert all("checked by" not in done[f"alone {t}"].stderr for t in MIXED)  # one target: today's output
    loads = parents_seen(root)
    # every target's code ran below the worker the CLI names: three loads each, one worker each
    assert loads[mixed_pid] >= 3 and loads[all_pid] >= 3
    assert len(loads) == 2 + len(MIXED)  # the two calls with several targets, and one per call alone


def test_a_broken_target_is_named_and_the_others_still_run(runs):
    _, done = runs
    out = done["all"]
    assert "gradviz: error: broken.py: Running the file raised RuntimeError: broken on purpose" in out.stderr
    assert "==> one.py:Cube <==" in out.stdout and "==> one.py:HalfCube <==" in out.stdout
    summary = [line.split() for line in out.stdout.strip().splitlines()[-3:]]
    assert summary == [["pass", "one.py:Cube"], ["FAIL", "one.py:HalfCube"], ["error", "broken.py"]]


def test_all_checks_every_function_of_a_file_and_saves_each_apart(runs):
    root, done = runs
    out = done["all"]
    # Cube is found by reading the file; HalfCube (a subclass of Cube) only by the worker's list
    assert out.stdout.count("==> ") == 2
    for name in ("Cube", "HalfCube"):
        assert (root / "saved" / "one" / name / "analytic_o0_i0.npy").is_file()
    assert oracle(root, "one.py:Cube") and not oracle(root, "one.py:HalfCube")


def test_options_that_name_one_thing_are_refused_with_several_targets(runs):
    _, done = runs
    for name, says in {
        "function twice": "--function Cube names one Function, but there are several targets",
        "save twins": "one.py and sub/one.py would both save into one/",
    }.items():
        out = done[name]
        assert out.returncode == 2 and says in out.stderr, out.stderr
        assert out.stdout == "" and "checked by" not in out.stderr  # nothing ran

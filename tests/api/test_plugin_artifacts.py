"""``pytest --gradviz-artifacts DIR``, each
in a real pytest run (a subprocess): ids that sanitise alike get folders of their own, a test's
folder from an earlier session holds nothing stale (and is gone once the test passes), JUnit XML
names each failure's folder, and a DIR that is a file or read-only fails only the artifacts of the
failing tests (named in their report), never the session (no INTERNALERROR, exit 3)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from gradviz import pytest_plugin
from tests.api.test_pytest_plugin import plugin_option
from tests.paths import ROOT

SUITE = '''
import os

import pytest
import torch

from gradviz.testing import assert_gradients


class Halved(torch.autograd.Function):
    """x * y whose backward is half the truth."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        factor = float(os.environ.get("FACTOR", "0.5"))  # 1.0: the backward is right
        return factor * grad * y, factor * grad * x


def args(scale):
    x = torch.linspace(1.0, 2.0, 3, dtype=torch.float64).mul(scale).requires_grad_()
    y = torch.linspace(-1.0, 1.0, 3, dtype=torch.float64).requires_grad_(os.environ.get("BOTH") == "1")
    return x, y


@pytest.mark.parametrize("scale", [1.0, 2.0], ids=["a/b", "a_b"])
def test_bad(scale):
    assert_gradients(Halved, args(scale))


def test_good():
    assert_gradients(lambda x: x * 2.0, torch.ones(2, dtype=torch.float64, requires_grad=True))
'''


def run_suite(folder: Path, artifacts: str, *options: str, **env: str) -> subprocess.CompletedProcess:
    (folder / "test_ops.py").write_text(textwrap.dedent(SUITE))
    pytest_options = ["-p", "no:cacheprovider", *plugin_option(), "--gradviz-artifacts", artifacts, *options]
    return subprocess.run(
        [sys.executable, "-m", "pytest", *pytest_options, "test_ops.py"],
        cwd=folder,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


IDS = ("test_ops.py::test_bad[a/b]", "test_ops.py::test_bad[a_b]")


def folder_of(artifacts: Path, nodeid: str) -> Path:
    return pytest_plugin.artifact_folder(artifacts, nodeid)


@pytest.fixture(scope="module")
def one_run(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """One session with --junitxml, read by the tests that only look at its output."""
    folder = tmp_path_factory.mktemp("one_run")
    return folder, run_suite(folder, "artifacts", "--junitxml", "junit.xml")


@pytest.mark.slow  # one_run: a whole pytest session in a subprocess, ~11 s
def test_ids_that_sanitise_alike_get_folders_of_their_own(one_run):
    tmp_path, out = one_run
    assert out.returncode == 1 and "2 failed, 1 passed" in out.stdout, out.stdout + out.stderr
    folders = [folder_of(tmp_path / "artifacts", nodeid) for nodeid in IDS]
    assert folders[0] != folders[1]
    assert sorted(p.name for p in (tmp_path / "artifacts").iterdir()) == sorted(f.name for f in folders)
    for nodeid, folder in zip(IDS, folders):
        assert nodeid in (folder / pytest_plugin.MARKER).read_text()
        assert (folder / "reproducer.py").is_file() and str(folder.name) in out.stdout
    # each holds its own report: the inputs differ by the scale of x
    assert (folders[0] / "reproducer.py").read_text() != (folders[1] / "reproducer.py").read_text()


@pytest.mark.slow
def test_an_earlier_sessions_files_are_not_mixed_in(tmp_path):
    first = run_suite(tmp_path, "artifacts", BOTH="1")  # two inputs: blocks o0_i0 and o0_i1
    assert first.returncode == 1, first.stdout + first.stderr
    folder = folder_of(tmp_path / "artifacts", IDS[0])
    assert (folder / "figure_o0_i1.svg").is_file()
    (folder / "notes.txt").write_text("put here by hand")
    # a folder of the same name that the plugin did not make is the user's: left alone
    theirs = folder_of(tmp_path / "artifacts", IDS[1])
    for stale in theirs.iterdir():
        stale.unlink()
    (theirs / "report.json").write_text("theirs")
    second = run_suite(tmp_path, "artifacts", BOTH="0")  # one input now: o0_i0 only
    assert second.returncode == 1, second.stdout + second.stderr
    assert (folder / "figure_o0_i0.svg").is_file()
    assert not (folder / "figure_o0_i1.svg").exists() and not (folder / "notes.txt").exists()
    assert (theirs / "report.json").read_text() == "theirs"
    fresh = [p for p in (tmp_path / "artifacts").iterdir() if p.name.startswith(theirs.name + "-")]
    assert len(fresh) == 1 and (fresh[0] / "figure_o0_i0.svg").is_file() and fresh[0].name in second.stdout


@pytest.mark.slow
def test_junit_xml_names_each_failures_folder(one_run):
    tmp_path, out = one_run
    assert out.returncode == 1 and "2 failed, 1 passed" in out.stdout, out.stdout + out.stderr
    cases = {case.get("name"): case for case in ET.parse(tmp_path / "junit.xml").iter("testcase")}
    assert sorted(cases) == ["test_bad[a/b]", "test_bad[a_b]", "test_good"]
    for nodeid in IDS:
        properties = cases[nodeid.split("::")[1]].findall("properties/property")
        assert [(p.get("name"), p.get("value")) for p in properties] == [
            (pytest_plugin.PROPERTY, str(folder_of(tmp_path / "artifacts", nodeid).resolve()))
        ]
        folder = Path(properties[0].get("value"))
        assert (folder / "report.json").is_file() and nodeid in (folder / pytest_plugin.MARKER).read_text()
    assert cases["test_good"].find("properties") is None


@pytest.mark.slow
def test_a_test_that_passes_now_leaves_no_folder_and_nothing_else_goes(tmp_path):
    artifacts = tmp_path / "artifacts"  # the user's own folder, with their files in it
    artifacts.mkdir()
    (artifacts / "notes.txt").write_text("the user's")
    first = run_suite(tmp_path, "artifacts")
    assert first.returncode == 1, first.stdout + first.stderr
    ours = [folder_of(artifacts, nodeid) for nodeid in IDS]
    assert all((folder / "reproducer.py").is_file() for folder in ours)
    # a folder named like one of ours whose marker names another id: not this test's, kept
    (ours[1] / pytest_plugin.MARKER).write_text("gradviz --gradviz-artifacts of test_other.py::test_x\n")
    second = run_suite(tmp_path, "artifacts", FACTOR="1.0")  # the backward is fixed: all pass
    assert second.returncode == 0 and "3 passed" in second.stdout, second.stdout + second.stderr
    assert not ours[0].exists()  # its failure is gone, so are its artifacts
    assert (ours[1] / "reproducer.py").is_file()
    assert sorted(p.name for p in artifacts.iterdir()) == sorted(["notes.txt", ours[1].name])
    assert (artifacts / "notes.txt").read_text() == "the user's"


def test_folder_names_are_distinct_short_and_safe_on_windows():
    long = "x" * 300
    ids = [
        "test_long.py::test_long[x/y]",
        "test_long.py::test_long[x y]",
        f"test_long.py::test_long[{long}a]",
        f"test_long.py::test_long[{long}b]",
        "nul.py::test_a",
        "tests/com1.py::test_b",
        "test_é.py::test_ünïcode[\ud800]",
        "test_a.py::test_b[x:y*z?<>|\"]",
    ]
    names = [pytest_plugin.artifact_folder(Path("DIR"), nodeid).name for nodeid in ids]
    assert len(set(names)) == len(ids)
    for name in names:
        assert all(c.isascii() and (c.isalnum() or c in "._-") for c in name), name
        assert len(name) <= pytest_plugin.NAME_CHARS + 11 and not name.endswith((".", " ")), name
        assert name.split(".")[0].upper() not in pytest_plugin.RESERVED, name
    assert names[0].startswith("test_long.py__test_long_x_y-") and names[1].startswith("test_long.py__test_long_x_y-")
    assert names[4].startswith("_nul.py__test_a-")


def assert_session_went_on(out: subprocess.CompletedProcess, where: str) -> None:
    text = out.stdout + out.stderr
    assert "INTERNALERROR" not in text and out.returncode == 1, text
    assert "2 failed, 1 passed" in out.stdout, text
    assert text.count(f"gradviz could not write this failure's artifacts under {where}") == 2, text


def test_artifacts_pointing_at_a_file_fail_no_session(tmp_path):
    (tmp_path / "artifacts").write_text("a file in the way")
    out = run_suite(tmp_path, "artifacts")
    assert_session_went_on(out, "artifacts")
    assert "that path is a file, not a folder" in out.stdout
    assert (tmp_path / "artifacts").read_text() == "a file in the way"


def test_artifacts_inside_a_file_fail_no_session(tmp_path):
    (tmp_path / "blocker").write_text("a file in the way")
    out = run_suite(tmp_path, "blocker/artifacts")
    assert_session_went_on(out, "blocker/artifacts")
    assert "Not a directory" in out.stdout


@pytest.fixture
def read_only_folder(tmp_path):
    """A folder nobody may write to: chmod for a user, a read-only tmpfs for root (who ignores
    permissions); skipped where neither is possible."""
    folder = tmp_path / "readonly"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)
        return
    mount = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,ro", "tmpfs", str(folder)], capture_output=True)
    if mount.returncode != 0:
        pytest.skip(f"cannot mount a read-only tmpfs here: {mount.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def test_a_read_only_artifacts_folder_fails_no_session(tmp_path, read_only_folder):
    out = run_suite(tmp_path, str(read_only_folder))
    assert_session_went_on(out, str(read_only_folder))
    assert "Read-only file system" in out.stdout or "Permission denied" in out.stdout

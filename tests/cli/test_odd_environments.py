"""``gradviz`` in environments that are not the developer's: no writable temporary folder, a
stream that cannot encode the table's characters, a closed stderr, a ``sitecustomize.py`` that
prints, user code that sets ``umask(0o777)``. Each is one line and exit 2, or a verdict; never a
traceback, and never the verdict of a check lost to the output's characters.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys

import pytest

from gradviz.protocol.launch import make_run_root, remove_run_root
from tests.cli.runner import check_document
from tests.paths import ROOT
from tests.sources import SQUARE

linux_root = pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="a read-only /tmp in a mount namespace of its own needs Linux, root and unshare",
)

UMASK_SOURCE = "import os\n\nos.umask(0o777)  # the user's own choice, in the worker's run\n" + SQUARE


def run(args: list[str], *, env: dict[str, str] | None = None, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gradviz", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        timeout=300,
        **kwargs,
    )


# /tmp and /var/tmp bound onto themselves read-only: what they hold (a checkout or a venv under
# /tmp, as CI's may be) stays readable, nothing can be made there
READ_ONLY_TMP = (
    "mount --bind /tmp /tmp && mount -o remount,bind,ro /tmp "
    "&& mount --bind /var/tmp /var/tmp && mount -o remount,bind,ro /var/tmp"
)


def read_only_tmp(command: list[str]) -> list[str]:
    """``command`` with /tmp and /var/tmp read-only and the current folder /tmp: no temporary
    folder tempfile could use (as on a read-only root with TMPDIR unset)."""
    script = f'{READ_ONLY_TMP} && cd /tmp && exec "$@"'
    return ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", *command]


@linux_root
def test_no_writable_temp_folder_is_one_line_and_exit_2(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("TMPDIR", "TEMP", "TMP")}
    env["PYTHONPATH"] = str(ROOT)
    probe = subprocess.run(read_only_tmp(["true"]), capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"no mount namespace here: {probe.stderr.decode(errors='replace')}")
    for json_flag in ([], ["--json"]):
        out = subprocess.run(
            read_only_tmp([sys.executable, "-m", "gradviz", "check", "linear", *json_flag]),
            capture_output=True, text=True, env=env, timeout=300,
        )
        assert out.returncode == 2, out.stderr
        assert "Traceback" not in out.stderr
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and "TMPDIR" in lines[0] and "writable" in lines[0], out.stderr
        if json_flag:
            document = json.loads(out.stdout)
            check_document("check", document)
            assert document["error"]["kind"] == "io" and "TMPDIR" in document["error"]["message"]


def test_the_run_folder_is_usable_under_a_umask_of_0o777():
    old = os.umask(0o777)
    try:
        root = make_run_root()
    finally:
        os.umask(old)
    try:
        assert stat.S_IMODE(root.stat().st_mode) == 0o700
    finally:
        remove_run_root(root)


def test_save_is_written_with_the_clients_umask_when_user_code_sets_0o777(tmp_path):
    path = tmp_path / "sets_umask.py"
    path.write_text(UMASK_SOURCE)
    saved = tmp_path / "saved" / "here"
    out = run(["check", str(path), "--save", str(saved)], preexec_fn=lambda: os.umask(0o022))
    assert out.returncode == 0, out.stderr
    assert stat.S_IMODE(saved.stat().st_mode) == 0o755
    files = sorted(saved.iterdir())
    assert [f.name for f in files] == ["analytic_o0_i0.npy", "numerical_o0_i0.npy"]
    assert {stat.S_IMODE(f.stat().st_mode) for f in files} == {0o644}


@pytest.mark.parametrize("argv", [["--eps", "abc"], ["--epz", "1"]], ids=["bad-value", "misspelt-flag"])
def test_a_usage_error_under_json_prints_the_error_document(argv):
    out = run(["check", "linear", "--json", *argv])
    assert out.returncode == 2
    assert "usage:" in out.stderr
    document = json.loads(out.stdout)
    check_document("check", document)
    assert document["error"]["kind"] == "settings"


def test_json_with_stderr_closed_is_the_document_alone():
    done = subprocess.run(  # fd 2 closed before gradviz's interpreter starts, as `2>&-` does
        [sys.executable, "-c", "import os, sys; os.close(2); os.execv(sys.executable, sys.argv[1:])",
         sys.executable, "-m", "gradviz", "check", "linear", "--json", "--eps", "-1"],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300,
    )
    assert done.returncode == 2
    document = json.loads(done.stdout)  # one document, nothing before it
    check_document("check", document)
    assert "eps" in document["error"]["message"]


TWICE_SOURCE = """
import torch


class Twice(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 4 * x * g  # twice the derivative: the hint says "Analytic \u2248 2 \u00d7 numerical"


def example_inputs(device, dtype):
    return (torch.rand(3, device=device, dtype=dtype, requires_grad=True) + 0.5,)
"""


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_a_narrow_output_encoding_degrades_the_characters_not_the_verdict(encoding, tmp_path):
    path = tmp_path / "twice.py"
    path.write_text(TWICE_SOURCE)
    out = run(["check", str(path)], env={"PYTHONIOENCODING": encoding}, encoding=encoding)
    assert out.returncode == 1, out.stderr
    assert "FAILED" in out.stdout and "Analytic ~ 2" in out.stdout
    assert "Cannot write" not in out.stderr and "Traceback" not in out.stderr
    swept = run(["sweep", "buggy_abs_product_sign"], env={"PYTHONIOENCODING": encoding}, encoding=encoding)
    assert swept.returncode == 0, swept.stderr
    assert "BACKWARD WRONG" in swept.stdout


def test_a_sitecustomize_that_prints_does_not_break_the_worker(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text('print("hello from sitecustomize")\n')
    path = tmp_path / "square.py"
    path.write_text(SQUARE)
    out = run(["check", str(path), "--json"], env={"PYTHONPATH": f"{ROOT}{os.pathsep}{site}"})
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert json.loads(lines[-1])["passed"] is True
    assert "hello from sitecustomize" in out.stdout + out.stderr
    assert "protocol" not in out.stderr.lower()


@linux_root
def test_the_window_starts_without_a_temp_folder_and_says_so(tmp_path):
    pytest.importorskip("PySide6")
    home = tmp_path / "home"
    home.mkdir()
    script = f'mount --bind {home} /mnt && {READ_ONLY_TMP} && cd /tmp && exec "$@"'
    env = {k: v for k, v in os.environ.items() if k not in ("TMPDIR", "TEMP", "TMP")}
    env.update(PYTHONPATH=str(ROOT), HOME="/mnt", QT_QPA_PLATFORM="offscreen")
    command = [sys.executable, "-m", "gradviz", "app", "--example", "linear", "--screenshot", "/mnt/shot.png"]
    out = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", *command],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert "No writable temporary folder" in out.stderr and "TMPDIR" in out.stderr
    assert (home / "shot.png").stat().st_size > 0  # the window ran and drew itself

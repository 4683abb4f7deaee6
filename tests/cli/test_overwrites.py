"""The command line and the API: ``gradviz check --save DIR`` and
``Report.save(dir)`` never replace files silently. Without ``--overwrite`` / ``overwrite=True``
they refuse, naming the files, and write nothing; with it they replace them."""

from __future__ import annotations

import json

import numpy as np
import pytest

import gradviz
from gradviz.api.files import ExistingFiles
from gradviz.schema.report import ExistingArrays, save_blocks
from tests.api import functions as f
from tests.cli.runner import gradviz as run_cli
from tests.sources import SQUARE

BUGGY = SQUARE.replace("return 2 * x * g", "return x * g")


def test_save_refuses_to_replace_arrays_without_overwrite(write_source, tmp_path):
    folder = tmp_path / "arrays"
    folder.mkdir()
    mine = {"analytic_o0_i0.npy": b"my own analytic", "numerical_o0_i0.npy": b"my own numerical"}
    for name, data in mine.items():
        (folder / name).write_bytes(data)
    source = str(write_source(BUGGY))
    out = run_cli("check", source, "--save", str(folder))
    assert out.returncode == 2, out.stdout + out.stderr
    assert out.stderr.strip().splitlines() == [
        f"gradviz: error: --save {folder} already holds analytic_o0_i0.npy, numerical_o0_i0.npy; nothing was "
        "written. Pass --overwrite to replace them, or save into another folder."
    ]
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == mine  # nothing lost
    out = run_cli("check", source, "--save", str(folder), "--overwrite")
    assert out.returncode == 1, out.stdout + out.stderr  # the buggy backward: FAILED, arrays replaced
    assert np.load(folder / "analytic_o0_i0.npy").shape == (3, 3)


def test_the_workers_save_refuses_too_and_creates_each_file_exclusively(tmp_path):
    """The CLI's check runs before the worker does; a file made meanwhile is refused where it is written."""
    result = gradviz.check(f.WrongSign, f.inputs(), raise_exception=False).result
    (tmp_path / "numerical_o0_i1.npy").write_bytes(b"made meanwhile")
    with pytest.raises(ExistingArrays, match=r"already holds numerical_o0_i1\.npy; nothing was written"):
        save_blocks(result, tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["numerical_o0_i1.npy"]
    written = save_blocks(result, tmp_path, overwrite=True)
    assert len(written) == 4 and np.load(tmp_path / "numerical_o0_i1.npy").shape == (12, 12)


def test_report_save_refuses_a_folder_holding_its_files(tmp_path):
    report = gradviz.check(f.WrongSign, f.inputs(), raise_exception=False)
    for name in ("report.json", "message.txt", "reproducer.py"):
        (tmp_path / name).write_text(f"the user's own {name}")
    (tmp_path / "notes.md").write_text("unrelated, kept")
    with pytest.raises(FileExistsError) as caught:
        report.save(tmp_path)
    assert isinstance(caught.value, ExistingFiles)
    assert {p.name for p in caught.value.paths} == {"report.json", "message.txt", "reproducer.py"}
    message = str(caught.value)
    assert "report.json, message.txt, reproducer.py" in message and "overwrite=True" in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["message.txt", "notes.md", "report.json", "reproducer.py"]
    assert (tmp_path / "report.json").read_text() == "the user's own report.json"
    written = report.save(tmp_path, overwrite=True)
    assert json.loads((tmp_path / "report.json").read_text())["passed"] is False
    assert tmp_path / "reproducer.py" in written and (tmp_path / "notes.md").read_text() == "unrelated, kept"


def test_an_overwrite_leaves_no_reproducer_of_the_other_kind(tmp_path):
    report = gradviz.check(f.WrongSign, f.inputs(), raise_exception=False)
    (tmp_path / "reproducer.txt").write_text("No reproducer script: from an earlier save")
    with pytest.raises(ExistingFiles, match=r"reproducer\.txt"):
        report.save(tmp_path)
    report.save(tmp_path, overwrite=True)
    assert (tmp_path / "reproducer.py").is_file() and not (tmp_path / "reproducer.txt").exists()


def test_a_fresh_folder_is_written_as_before(tmp_path):
    report = gradviz.check(f.WrongSign, f.inputs(), raise_exception=False)
    written = report.save(tmp_path / "new")
    assert {p.name for p in written} >= {"report.json", "report.npz", "message.txt", "reproducer.py"}

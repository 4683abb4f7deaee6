"""The one writer of result arrays: block keys, .npy / .npz / CSV, exclusive or replaced whole."""

from __future__ import annotations

import os
from types import SimpleNamespace

import numpy as np
import pytest

from gradviz.schema.array_files import block_key, npz_bytes, write_csv, write_file, write_npy, write_npz


def test_block_key_names_output_then_input():
    assert block_key(SimpleNamespace(output=2, input=13)) == "o2_i13"


def test_npy_round_trips_and_refuses_pickles(tmp_path):
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    path = write_npy(tmp_path / "a.npy", a)
    np.testing.assert_array_equal(np.load(path, allow_pickle=False), a)
    with pytest.raises(ValueError):
        write_npy(tmp_path / "b.npy", np.array([object()], dtype=object))


def test_exclusive_never_replaces_a_file(tmp_path):
    path = tmp_path / "a.npy"
    path.write_bytes(b"the user's")
    with pytest.raises(FileExistsError):
        write_npy(path, np.zeros(2), exclusive=True)
    assert path.read_bytes() == b"the user's"


def test_a_failed_write_leaves_the_old_file_whole_and_no_temporary_file(tmp_path):
    path = write_npy(tmp_path / "a.npy", np.ones(3))
    before = path.read_bytes()
    with pytest.raises(ValueError):  # np.save refuses an object array midway
        write_npy(path, np.array([object()], dtype=object))
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["a.npy"]


def test_npz_holds_the_named_arrays(tmp_path):
    arrays = {"analytic_o0_i0": np.eye(2), "failing_o0_i0": np.zeros((2, 2), bool)}
    path = write_npz(tmp_path / "j.npz", arrays)
    with np.load(path, allow_pickle=False) as back:
        assert sorted(back.files) == sorted(arrays)
        np.testing.assert_array_equal(back["analytic_o0_i0"], np.eye(2))
    assert path.read_bytes()[:2] == npz_bytes(arrays)[:2] == b"PK"


def test_csv_is_utf8_with_its_header(tmp_path):
    table = np.column_stack([np.arange(2), [[0.5, 1.0], [2.0, 3.0]]])
    path = write_csv(tmp_path / "a.csv", table, fmt=["%d", "%.17g", "%.17g"], header="out0 element \\ θ element,0,1")
    text = path.read_bytes().decode("utf-8")
    assert text.splitlines() == ["out0 element \\ θ element,0,1", "0,0.5,1", "1,2,3"]


def test_write_file_is_the_same_rule_for_other_files(tmp_path):
    path = write_file(tmp_path / "report.json", b"{}")
    with pytest.raises(FileExistsError):
        write_file(path, b"[]", exclusive=True)
    write_file(path, b"[]")
    assert path.read_bytes() == b"[]"

"""Sessions that would hurt the window are one SessionError, found before anything applies:
real FIFOs, /dev/zero, directories, a 100 MB file, JSON nested too deep, numbers that overflow."""

from __future__ import annotations

import json
import os
import time

import pytest

from gradviz.schema.library import builtin_functions, find_builtin
from gradviz.schema.session import MAX_SESSION_BYTES, SessionError, load_session

GOOD = {"format": "gradviz-session", "version": 1, "code": "x = 1\n"}


def _session(tmp_path, text: str):
    path = tmp_path / "s.gradviz"
    path.write_text(text, encoding="utf-8")
    return path


def _refused(path, expected: str, within_s: float = 2.0) -> None:
    start = time.monotonic()
    with pytest.raises(SessionError) as info:
        load_session(path)
    assert expected in info.value.message
    assert time.monotonic() - start < within_s  # refused at once, not after reading it


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.gradviz"
    os.mkfifo(fifo)  # nobody ever writes to it: a read would block forever
    _refused(fifo, "FIFO")


def test_dev_zero_and_a_directory_are_refused(tmp_path):
    _refused("/dev/zero", "device")
    _refused(tmp_path, "directory")


def test_a_100_mb_session_is_refused_before_a_byte_is_read(tmp_path):
    big = tmp_path / "big.gradviz"
    with open(big, "wb") as f:
        f.truncate(100 * 2**20)  # sparse: 100 MB by its size, nothing on disk
    assert big.stat().st_size > MAX_SESSION_BYTES
    _refused(big, "100.0 MiB")


@pytest.mark.parametrize(
    ("json_text", "expected"),
    [
        ('{"format": "gradviz-session", "version": 1, "code": "x", "z": ' + "[" * 100_000 + "]" * 100_000 + "}",
         "nested too deeply"),
        (json.dumps(GOOD)[:-1] + ', "run": {"eps": Infinity}}', "Infinity"),
        (json.dumps(GOOD)[:-1] + ', "run": {"atol": -Infinity}}', "-Infinity"),
        (json.dumps(GOOD)[:-1] + ', "run": {"rtol": NaN}}', "NaN"),
        (json.dumps(GOOD)[:-1] + ', "run": {"eps": 1e999}}', "1e999, which overflows"),
        (json.dumps(GOOD)[:-1] + ', "run": {"seed": 18446744073709551616}}', "overflows (past 64 bits)"),
        (json.dumps(GOOD)[:-1] + ', "memory": {"layers": ' + "9" * 5000 + "}}", "5000 digits"),
        (json.dumps({**GOOD, "memory": {"shape": [1, 2, 3]}}), "four whole numbers"),
        (json.dumps({**GOOD, "memory": {"colour": 1}}), 'unknown memory option "colour"'),
        (json.dumps({**GOOD, "path": "a\u0000b"}), '"path" is not a file path'),
    ],
    ids=["deep", "inf", "-inf", "nan", "1e999", "2**64", "5000-digit int", "short shape", "unknown memory",
         "NUL path"],
)
def test_strict_json(tmp_path, json_text, expected):
    _refused(_session(tmp_path, json_text), expected)


def test_the_widest_legal_values_still_load(tmp_path):
    session = load_session(_session(tmp_path, json.dumps({**GOOD, "run": {"seed": 2**64 - 1, "eps": 1e308}})))
    assert session.run == {"seed": 2**64 - 1, "eps": 1e308}


def test_find_builtin_names_only_the_library():
    assert all(find_builtin(entry.name) == entry.path for entry in builtin_functions())
    assert find_builtin("linear.py") == find_builtin("linear")
    for name in ("../functions/linear", "/etc/passwd", "..", "", "linear/../linear"):
        assert find_builtin(name) is None

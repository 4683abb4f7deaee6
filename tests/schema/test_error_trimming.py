"""Errors from runaway stacks stay small: repeats collapsed, the middle left out, texts capped."""

from __future__ import annotations

import sys

from gradviz.schema.errors import (
    HEAD_FRAMES,
    REPEATS_KEPT,
    TAIL_FRAMES,
    ErrorKind,
    from_exception,
    trim_frames,
)


def test_a_frame_repeated_a_million_times_is_kept_three_times_and_counted():
    keys = [("f.py", 3, "forward")] + [("f.py", 7, "deep")] * 10**6
    kept, note = trim_frames(iter(keys))
    assert kept == [("f.py", 3, "forward")] + [("f.py", 7, "deep")] * REPEATS_KEPT
    assert note == f"line 7, in deep, repeated {10**6 - REPEATS_KEPT:,} more times: endless recursion?"


def test_a_deep_stack_of_different_frames_keeps_its_ends():
    keys = [("f.py", k, "f") for k in range(1, 1001)]
    kept, note = trim_frames(keys)
    assert kept == keys[:HEAD_FRAMES] + keys[-TAIL_FRAMES:]
    assert note == f"{1000 - HEAD_FRAMES - TAIL_FRAMES:,} more frames not shown"


def test_recursion_error_from_user_code_names_the_line_and_stays_small():
    def deep(n):
        return deep(n + 1)

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)
    try:
        deep(0)
    except RecursionError as exc:
        error = from_exception(ErrorKind.FORWARD, exc, __file__, "Deep.forward")
    finally:
        sys.setrecursionlimit(limit)
    assert error.lineno == deep.__code__.co_firstlineno + 1
    assert "endless recursion?" in error.message and len(error.frames) <= HEAD_FRAMES + TAIL_FRAMES


def test_an_exception_whose_str_fails_or_is_huge_still_gives_one_clear_message():
    class Bad(Exception):
        def __str__(self):
            raise RuntimeError("no")

    assert "<str() of it raised RuntimeError>" in from_exception("forward", Bad(), __file__, "F.forward").message
    huge = from_exception("forward", ValueError("y" * 10**6), __file__, "F.forward").message
    assert len(huge) < 2500 and "(1,000,012 characters in all)" in huge

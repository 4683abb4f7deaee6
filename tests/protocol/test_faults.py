"""Reading the user's line out of a real faulthandler dump, and the errors built from it."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from gradviz.protocol import faults
from gradviz.schema.requests import CodeSource

HUNG = """
import faulthandler, os, signal, sys, time
faulthandler.register(signal.SIGUSR1, open(sys.argv[1], "w"), all_threads=True)

def backward():
    print("ready", flush=True)
    while True:
        time.sleep(0.01)

backward()
"""


def test_a_real_dump_of_a_hung_process_names_the_users_line(tmp_path):
    script, dump = tmp_path / "user.py", tmp_path / "dump.txt"
    script.write_text(HUNG, encoding="utf-8")
    process = subprocess.Popen([sys.executable, str(script), str(dump)], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().strip() == "ready"
        process.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + 10
        # the stack is written innermost first: it is whole once the outermost frame is there
        while "<module>" not in dump.read_text() and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        process.kill()
        process.wait()
    text = dump.read_text()
    source = faults.UserSource(str(script))
    frames = faults.user_frames_from_dump(text, source)
    assert [f["name"] for f in frames] == ["<module>", "backward"]
    inner = frames[-1]
    assert inner["line"] == HUNG.splitlines()[inner["lineno"] - 1].strip()  # quoted from the file
    assert inner["line"] in ('print("ready", flush=True)', "while True:", "time.sleep(0.01)")
    error = faults.timeout_error(3, text, source)
    assert error["kind"] == "timeout" and error["lineno"] == frames[-1]["lineno"]
    assert error["message"].endswith(f"It was at line {frames[-1]['lineno']}, in backward.")


def test_editor_text_is_quoted_from_the_request_not_a_file():
    code = CodeSource(source="a = 1\nwhile True: pass\n", filename="<editor>")
    source = faults.UserSource.of_code(code)
    dump = 'Current thread 0x1 (most recent call first):\n  File "<editor>", line 2 in <module>\n'
    (frame,) = faults.user_frames_from_dump(dump, source)
    assert frame["line"] == "while True: pass" and frame["lineno"] == 2


def test_crash_descriptions_say_how_the_process_ended():
    source = faults.UserSource("f.py", "x\n")
    assert "SIGSEGV (a segmentation fault" in faults.crash_error(-signal.SIGSEGV, "", source)["message"]
    assert "os._exit(3)" in faults.crash_error(3, faults.OS_EXIT_MARK.format(code=3), source)["message"]
    assert "exited with code 5" in faults.crash_error(5, "", source)["message"]
    assert faults.crash_error(5, "", source)["lineno"] is None


ENTERED = """
import sys
import tracer

def leaf(n):
    return n

def deep(n):
    return list(map(deep, [n + 1])) if n < 30 else leaf(n)

sys.settrace(tracer.dump_on_entering)
deep(0)
"""
TRACER = """
import faulthandler, os

def dump_on_entering(frame, event, arg):
    if event == "call" and frame.f_code.co_name == os.environ["ENTERING"] and frame.f_locals.get("n") == 30:
        with open(os.environ["DUMP"], "w") as dump:
            faulthandler.dump_traceback(dump)
    return None
"""


def dump_while_entering(tmp_path, name: str) -> tuple[str, faults.UserSource]:
    """A real faulthandler dump taken as ``name`` is entered at depth 30, from a tracer in another file."""
    script, dump = tmp_path / "user.py", tmp_path / "dump.txt"
    script.write_text(ENTERED, encoding="utf-8")
    (tmp_path / "tracer.py").write_text(TRACER, encoding="utf-8")
    env = {"ENTERING": name, "DUMP": str(dump), "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, str(script)], check=True, env=env, cwd=tmp_path, timeout=60)
    return dump.read_text(), faults.UserSource(str(script))


def test_a_recursion_that_died_entering_its_next_call_names_the_line_that_recursed(tmp_path):
    """Endless recursion through C code overflows the stack entering a call or running the line
    that makes it, by chance: both name the line that recursed."""
    text, source = dump_while_entering(tmp_path, "deep")
    frames = faults.user_frames_from_dump(text, source)
    assert frames[-1]["line"] == "def deep(n):"  # the dump's innermost frame had only been entered
    error = faults.crash_error(-signal.SIGSEGV, text, source)
    recursing = ENTERED.splitlines().index("    return list(map(deep, [n + 1])) if n < 30 else leaf(n)") + 1
    assert error["lineno"] == recursing
    assert f"It was at line {recursing}, in deep (repeated" in error["message"]


def test_a_function_entered_from_another_is_named_at_its_own_line(tmp_path):
    text, source = dump_while_entering(tmp_path, "leaf")
    error = faults.crash_error(-signal.SIGSEGV, text, source)
    assert error["lineno"] == ENTERED.splitlines().index("def leaf(n):") + 1
    assert error["traceback"][-1]["name"] == "leaf"

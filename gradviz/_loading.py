"""``python -m gradviz`` while it loads: runpy imports this package before ``gradviz.__main__``
can catch a Ctrl+C, so one arriving then would print runpy's traceback. From this package's
first line until ``__main__`` takes over (``restore_interrupt``), Ctrl+C exits 130 with one line."""

from __future__ import annotations

import os
import signal
import sys

INTERRUPTED = 130  # gradviz.cli.contract.ExitCode.INTERRUPTED, not imported: this runs first


def _interrupted(signum: int, frame: object) -> None:
    try:
        os.write(2, b"gradviz: interrupted\n")
    except OSError:
        pass
    os._exit(INTERRUPTED)


def run_with_dash_m() -> bool:
    """Whether this process is ``python [options] -m gradviz ...`` (not a program importing gradviz)."""
    argv = sys.orig_argv
    return "-m" in argv and argv[argv.index("-m") + 1 :][:1] == ["gradviz"]


def exit_quietly_on_interrupt() -> None:
    """SIGINT ends the process at once, quietly; only where Python's own handler is in place."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupted)


def restore_interrupt() -> None:
    """Python's own handler back (Ctrl+C raises KeyboardInterrupt), where ours was set."""
    if signal.getsignal(signal.SIGINT) is _interrupted:
        signal.signal(signal.SIGINT, signal.default_int_handler)


__all__ = ["exit_quietly_on_interrupt", "restore_interrupt", "run_with_dash_m"]

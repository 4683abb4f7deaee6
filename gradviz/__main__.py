"""``python -m gradviz`` and the ``gradviz`` command (``entry``).

Importing the command line takes tens of milliseconds; a Ctrl+C (or a broken pipe) in that time
ends the command as one inside ``main`` would, with its exit status and no traceback.
"""

import sys

from gradviz._loading import restore_interrupt

INTERRUPTED = 130  # gradviz.cli.contract.ExitCode.INTERRUPTED, not imported: this runs first


def entry() -> int:
    """The command's exit status; Ctrl+C while gradviz itself is still loading exits 130."""
    restore_interrupt()  # from here a Ctrl+C is a KeyboardInterrupt, caught below or by the command
    try:
        from gradviz.cli.main import main

        return main()
    except KeyboardInterrupt as exc:
        _say(f"gradviz: {str(exc) or 'interrupted'}")
        return int(getattr(exc, "exit_code", INTERRUPTED))


def _say(line: str) -> None:
    stream = sys.stderr
    if stream is None:
        return
    try:
        print(line, file=stream)
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    raise SystemExit(entry())

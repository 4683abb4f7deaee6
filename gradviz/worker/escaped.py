"""An exception that escaped the core's own error handling, as the structured error a run answers.

Shared by the run (``run._answer``: whatever a handler raised) and the handlers (the graph
beside a check: its failure becomes a line, never a failed check); it sits below both so
neither imports the other for it.
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path
from typing import Any

from gradviz.protocol.faults import ENDED
from gradviz.schema.errors import ErrorKind, from_exception, out_of_memory
from gradviz.schema.requests import CodeSource

# The method gradviz called, named by the outermost frame in the user's file.
_PHASES = {"<module>": ErrorKind.IMPORT, "example_inputs": ErrorKind.EXAMPLE_INPUTS, "backward": ErrorKind.BACKWARD}


def escaped_error(exc: BaseException, code: CodeSource | None) -> dict[str, Any]:
    """An exception the core did not turn into a GradvizError, as a structured error.

    Raised in the user's file (SystemExit or KeyboardInterrupt anywhere, any exception in a
    place the core does not wrap) it names the line like any user-code error; otherwise it is
    a gradviz bug, or the machine running out of memory, and says so plainly. ``code``: where
    the request's code came from (None for a job that runs none, the memory study).
    """
    filename = user_filename(code)
    tb, outermost = exc.__traceback__, None
    while tb is not None:
        if outermost is None and tb.tb_frame.f_code.co_filename == filename:
            outermost = tb.tb_frame.f_code
        tb = tb.tb_next
    if outermost is not None:
        kind = _PHASES.get(outermost.co_name, ErrorKind.FORWARD)
        context = {ErrorKind.IMPORT: "Running the file", ErrorKind.EXAMPLE_INPUTS: "example_inputs(device, dtype)"}.get(
            kind, outermost.co_qualname
        )
        return from_exception(kind, exc, filename, context).to_dict()
    memory = out_of_memory(exc)
    if memory:
        return {"kind": ErrorKind.OUT_OF_MEMORY.value, "message": f"Out of memory: {memory}"}
    print("".join(traceback.format_exception(exc)), file=sys.stderr)
    if isinstance(exc, KeyboardInterrupt):
        return {"kind": ErrorKind.CANCELLED.value, "message": "Interrupted (KeyboardInterrupt)."}
    if isinstance(exc, SystemExit):
        message = f"Something called sys.exit({exc.code!r}) during the run ({ENDED}); gradviz stopped it there."
        return {"kind": ErrorKind.CRASHED.value, "message": message}
    return {"kind": ErrorKind.INTERNAL.value, "message": f"Internal error in gradviz: {type(exc).__name__}: {exc}"}


def user_filename(code: CodeSource | None) -> str:
    """The file name user code runs under: what the loader gives the code it compiles (a module
    target's file once it is imported, as the loader names it)."""
    if code is None:
        return "<editor>"
    if code.path:
        return str(Path(code.path).resolve())
    if code.filename:
        return code.filename
    if code.target:
        from gradviz.schema.targets import parse_target

        target = parse_target(code.target)
        if not target.module:
            return str(Path(target.path or "").resolve())
        file = getattr(sys.modules.get(target.module), "__file__", None)
        return str(Path(file).resolve()) if file else f"<module {target.module}>"
    return "<editor>"

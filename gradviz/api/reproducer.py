"""A script that needs only PyTorch: the Function, the exact inputs, ``torch.autograd.gradcheck``.

For a bug report, or to see gradviz's verdict confirmed by PyTorch itself. The Function is
called on clones of the inputs, as gradviz calls it, so an in-place Function (``mark_dirty``)
does not modify gradcheck's leaves. Exit status: 0 when gradcheck passes, 1 when it fails.
"""

from __future__ import annotations

import keyword
from typing import TYPE_CHECKING, Any

from gradviz import __version__
from gradviz.api.literals import TENSOR_HELPER, NotWritable, literal, needs_helper
from gradviz.api.locate import path_line, reach
from gradviz.schema.report import verdict_line

if TYPE_CHECKING:
    from gradviz.api.report import Report

HEAD = '''"""Reproduce gradviz's check of {name} with torch.autograd.gradcheck alone.

gradviz {version} said: {verdict}
Run with the Python that has your code's dependencies: exit 0 when gradcheck passes, 1 when it fails.
"""

import sys'''

TAIL = '''def fn(*args):
    """{call} on clones of the inputs, as gradviz calls it: an in-place Function leaves gradcheck's leaves alone."""
    return {call}(*(a.clone() if isinstance(a, torch.Tensor) else a for a in args))


try:
    torch.autograd.gradcheck(fn, inputs, {options})
except Exception as exc:  # a mismatch, or an error in the Function's code: gradcheck's "fail"
    print(f"gradcheck FAILED: {{type(exc).__name__}}: {{exc}}")
    sys.exit(1)
print("gradcheck passed")
sys.exit(0)
'''


def reproducer_script(report: Report) -> str:
    """The script's text; NotWritable (a ValueError) naming what cannot be written."""
    fn, args = report._need_inputs("reproducer()")
    where = reach(fn)
    notes: list[str] = []
    try:
        arguments = []
        for k, value in enumerate(args):
            own: list[str] = []
            arguments.append(literal(value, own))
            notes += [f"# input {k}: {note}: its own methods are not trusted to write a script." for note in own]
        options = ", ".join(f"{_keyword(k)}={literal(v)}" for k, v in report.gradcheck_options.items())
    except NotWritable as exc:
        raise NotWritable(f"the inputs cannot be written into a script: {exc}") from None
    helper = needs_helper(args)
    if where.module is not None:
        line = path_line(where.root)
        imports = [
            "import base64" if helper else "",
            "import torch",
            line or "",
            f"from {where.module} import {where.name.split('.')[0]}",
        ]
        code = "\n".join(i for i in imports if i)
    else:
        assert where.source is not None  # reach() gives a module or the source
        code = ("import base64\n" if helper else "") + where.source.strip()
    inputs = "inputs = (\n" + "".join(f"    {a},\n" for a in arguments) + ")"
    sections = [
        HEAD.format(name=report.function, version=__version__, verdict=verdict_line(report.result)),
        code,
        TENSOR_HELPER.strip() if helper else "",
        "# The inputs exactly as gradviz checked them.\n" + "".join(n + "\n" for n in notes) + inputs,
        TAIL.format(call=where.call, options=options),
    ]
    return "\n\n\n".join(s for s in sections if s)


def _keyword(name: Any) -> str:
    """A gradcheck keyword as written: a plain identifier, or NotWritable."""
    if type(name) is not str or not name.isidentifier() or keyword.iskeyword(name):
        raise NotWritable(f"the gradcheck option {_safe(name)} is not a keyword name")
    return name


def _safe(name: Any) -> str:
    return literal(name) if isinstance(name, str) else "of an unexpected type"

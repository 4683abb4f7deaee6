"""A script that needs only PyTorch: the Function, the exact inputs, ``torch.autograd.gradcheck``.

For a bug report, or to see gradviz's verdict confirmed by PyTorch itself. The Function is
called on clones of the inputs, as gradviz calls it, so an in-place Function (``mark_dirty``)
does not modify gradcheck's leaves. Exit status: 0 when gradcheck passes, 1 when it fails.

A script saved by ``Report.save`` or the pytest plugin holds no absolute path of the machine that
wrote it: a module it imports from the user's project is found from the script's own folder
(``put_on_path``), so it runs from any folder, and still runs after the project and the script
are copied elsewhere together.
"""

from __future__ import annotations

import keyword
import os
from pathlib import Path
from typing import Any

from gradviz._version import __version__
from gradviz.api.checked import CheckedReport
from gradviz.api.literals import TENSOR_HELPER, NotWritable, literal, needs_helper
from gradviz.api.locate import path_line, reach
from gradviz.api.reproducer_module import built_module
from gradviz.schema.report import verdict_line

HEAD = '''"""Reproduce gradviz's check of {name} with torch.autograd.gradcheck alone.

gradviz {version} said: {verdict}
Run from any folder with the Python that has your code's dependencies: exit 0 when gradcheck
passes, 1 when it fails.
"""

import sys'''

FINDER = '''def put_on_path(module, hint=(), made_at=None):
    """Put first on sys.path the folder that holds ``module`` of your project: where it was,
    seen from this script, when gradviz wrote it (``hint``); else this script's folder or one
    above it; else the current folder; else (a script gradviz did not save itself) the folder
    it was in when written. An installed module needs none of them."""
    import importlib.util
    from pathlib import Path

    here = Path(__file__).resolve().parent
    parts = module.split(".")
    last = [Path(made_at)] if made_at else []
    for folder in [here.joinpath(*hint)] * bool(hint) + [here, *here.parents, Path.cwd(), *last]:
        module_file = folder.joinpath(*parts[:-1], parts[-1] + ".py")
        if module_file.is_file() or folder.joinpath(*parts, "__init__.py").is_file():
            sys.path.insert(0, str(folder))
            return
    if importlib.util.find_spec(parts[0]) is None:
        print(f"{'/'.join(parts)}.py is neither beside this script nor in the current folder: run it from "
              "your project's folder, or put the folder that holds it on PYTHONPATH.", file=sys.stderr)'''

CALL = '''def fn(*args):
    """{call} on clones of the inputs, as gradviz calls it: an in-place Function leaves gradcheck's leaves alone."""
    return {call}(*(a.clone() if isinstance(a, torch.Tensor) else a for a in args))'''

GRADCHECK = '''try:
    torch.autograd.gradcheck(fn, inputs, {options})
except Exception as exc:  # a mismatch, or an error in the Function's code: gradcheck's "fail"
    print(f"gradcheck FAILED: {{type(exc).__name__}}: {{exc}}")
    sys.exit(1)
print("gradcheck passed")
{finish}
'''


OPCHECK = '''# gradviz also ran torch.library.opcheck's tests on the op: {counts}
opcheck = torch.library.opcheck(
    {call}, tuple(a.detach().clone().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a for a in inputs),
    test_utils={tests}, raise_exception=False,
)
failed = {{test: found for test, found in opcheck.items() if found != "SUCCESS"}}
for test, found in failed.items():
    print(f"opcheck {label}: {{test}}: {{found}}")
sys.exit({exit})'''
OPCHECK_COUNTS = "a failing one fails its check (opcheck=\"fail\")."
OPCHECK_WARNS = "a failing one breaks torch.compile or export, not the gradient: a warning, as in gradviz."


def opcheck_section(report: CheckedReport, call: str) -> str:
    """The opcheck call, after gradcheck passes, for a custom op gradviz ran opcheck's tests on
    ('' for anything else): its failures fail the script where they fail gradviz's verdict
    (``opcheck="fail"``), else they are printed as warnings."""
    from gradviz.core.opcheck_checks import OPCHECK_TESTS

    ran = {c.name for c in report.result.checks}
    tests = [test for test, name in OPCHECK_TESTS.items() if name in ran]
    if not tests:
        return ""
    counts = report.result.settings.opcheck == "fail"
    return OPCHECK.format(
        call=call,
        tests=literal(tuple(tests)),
        counts=OPCHECK_COUNTS if counts else OPCHECK_WARNS,
        label="FAILED" if counts else "WARNED",
        exit="1 if failed else 0" if counts else "0",
    )


def reproducer_script(report: CheckedReport, folder: Path | None = None) -> str:
    """The script's text; NotWritable (a ValueError) naming what cannot be written. Saved in
    ``folder`` (``Report.save``, the pytest plugin), it holds no absolute path: it finds the
    user's modules from where it is."""
    places: list[str] = []

    def place(root: str | None, module: str) -> str | None:
        """``put_on_path('pkg.ops', ('..', 'src'))`` for a module of the user's project; None
        for an installed one. Only a script whose folder is unknown (``Report.reproducer()``'s
        text) carries the module's folder as it is on this machine, as a last resort."""
        if root is None or path_line(root) is None:
            return None
        if folder is None:
            places.append(f"put_on_path({literal(module)}, made_at={literal(root)})")
        else:
            places.append(f"put_on_path({literal(module)}, {literal(relative_parts(root, folder))})")
        return places[-1]

    fn, args = report._need_inputs("reproducer()")
    built = built_module(fn)  # a module checked with its parameters: its class, rebuilt with its state
    where = built.reach(place) if built else reach(fn, place)
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
    helper = needs_helper(args) or bool(built and built.needs_helper())
    if where.module is not None:
        line = place(where.root, where.module)
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
        FINDER if places else "",
        code,
        TENSOR_HELPER.strip() if helper else "",
        built.build_lines(where) if built else "",
        "# The inputs exactly as gradviz checked them.\n" + "".join(n + "\n" for n in notes) + inputs,
        built.call() if built else CALL.format(call=where.call),
        GRADCHECK.format(options=options, finish=opcheck_section(report, where.call) or "sys.exit(0)"),
    ]
    return "\n\n\n".join(s for s in sections if s)


def relative_parts(root: str, folder: Path) -> tuple[str, ...]:
    """``root`` seen from ``folder`` (``('..', '..', 'src')``), or () when the two share no
    folder below the file system's root (another drive; /tmp and /home): such a path would
    spell out this machine's layout, so the script searches instead."""
    root_path, here = Path(root).resolve(), Path(folder).resolve()
    try:
        common = Path(os.path.commonpath([root_path, here]))
    except ValueError:  # another drive (Windows)
        return ()
    if common == Path(common.anchor):
        return ()
    return Path(os.path.relpath(root_path, here)).parts


def _keyword(name: Any) -> str:
    """A gradcheck keyword as written: a plain identifier, or NotWritable."""
    if type(name) is not str or not name.isidentifier() or keyword.iskeyword(name):
        raise NotWritable(f"the gradcheck option {_safe(name)} is not a keyword name")
    return name


def _safe(name: Any) -> str:
    return literal(name) if isinstance(name, str) else "of an unexpected type"

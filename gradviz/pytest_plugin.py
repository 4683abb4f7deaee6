"""pytest plugin (registered through the ``pytest11`` entry point): ``--gradviz-artifacts DIR``.

Every test that fails with a ``gradviz.GradientMismatch`` (from ``assert_gradients`` or
``gradviz.check``) gets a folder under DIR named after the test, with the report (JSON and an
.npz of every array), its figures and a reproducer script. Loading this plugin costs nothing:
torch is imported only when a test has failed with gradviz's exception, which imported it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

OPTION = "--gradviz-artifacts"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gradviz")
    group.addoption(
        OPTION,
        dest="gradviz_artifacts",
        metavar="DIR",
        default=None,
        help="write the report, figures and a reproducer script of every failing gradient check "
        "under DIR, in a folder named after the test",
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    outcome = yield
    report = outcome.get_result()
    directory = item.config.getoption("gradviz_artifacts", None)
    if directory and call.excinfo is not None:
        mismatch = find_mismatch(call.excinfo.value)
        if mismatch is not None:
            folder = write_artifacts(mismatch.report, Path(directory), item.nodeid)
            report.sections.append(("gradviz artifacts", f"report, figures and reproducer.py in {folder}"))


def find_mismatch(exc: BaseException | None) -> Any:
    """The GradientMismatch that failed the test, also when another exception wraps it."""
    api = sys.modules.get("gradviz.api.report")
    if api is None:  # gradviz's API never ran: no mismatch can have been raised
        return None
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, api.GradientMismatch):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def write_artifacts(report: Any, directory: Path, nodeid: str) -> Path:
    from gradviz.api.files import file_stem

    folder = directory / file_stem(nodeid)
    report.save(folder)
    return folder

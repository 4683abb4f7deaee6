"""pytest plugin (registered through the ``pytest11`` entry point): ``--gradviz-artifacts DIR``.

Every test that fails with a ``gradviz.GradientMismatch`` (from ``assert_gradients`` or
``gradviz.check``) gets a folder under DIR named after the test (plus a hash of its id, so two
ids never share one), with the report (JSON and an .npz of every array), its figures and a
reproducer script. A folder that cannot be written fails nothing but that test's artifacts. Loading this plugin costs nothing:
torch is imported only when a test has failed with gradviz's exception, which imported it.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

OPTION = "--gradviz-artifacts"
MARKER = ".gradviz-artifacts"  # in each folder the plugin made: the only folders it ever clears


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
            report.sections.append(("gradviz artifacts", save_or_explain(mismatch.report, Path(directory), item.nodeid)))


def save_or_explain(report: Any, directory: Path, nodeid: str) -> str:
    """Where the artifacts went, or why they could not be written: a folder that is a file, is
    read-only or is full costs this test its artifacts, never the session (no INTERNALERROR)."""
    try:
        folder = write_artifacts(report, directory, nodeid)
    except Exception as exc:
        return f"gradviz could not write this failure's artifacts under {directory}: {_reason(exc, directory)}"
    return f"report, figures and reproducer.py in {folder}"


def _reason(exc: BaseException, directory: Path) -> str:
    if directory.exists() and not directory.is_dir():
        return "that path is a file, not a folder."
    if isinstance(exc, OSError):
        where = f" ({exc.filename})" if exc.filename and str(exc.filename) != str(directory) else ""
        return f"{exc.strerror or exc}{where}."
    return f"{type(exc).__name__}: {exc}"


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


def artifact_folder(directory: Path, nodeid: str) -> Path:
    """``DIR/<test name>-<hash of the node id>``: the sanitised name is for people, the hash keeps
    ids that sanitise alike (``test_bad[a/b]``, ``test_bad[a_b]``) in folders of their own."""
    from gradviz.api.files import file_stem

    digest = hashlib.sha256(nodeid.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return directory / f"{file_stem(nodeid)[:150]}-{digest}"  # well under 255 bytes: ASCII only


def write_artifacts(report: Any, directory: Path, nodeid: str) -> Path:
    """Save ``report`` into a folder of this test's own, holding nothing from an earlier run.

    The folder of this test from an earlier session (it holds the plugin's MARKER) is cleared
    and written afresh; a folder of that name the plugin did not make is left alone, and the
    artifacts go to a fresh ``<name>-XXXXXXXX`` beside it instead.
    """
    directory.mkdir(parents=True, exist_ok=True)
    folder = artifact_folder(directory, nodeid)
    try:
        folder.mkdir()
    except FileExistsError:
        if folder.is_dir() and not folder.is_symlink() and (folder / MARKER).is_file():
            shutil.rmtree(folder)  # this test's own artifacts from before: replaced, not mixed
            folder.mkdir()
        else:
            folder = Path(tempfile.mkdtemp(prefix=folder.name + "-", dir=directory))
    (folder / MARKER).write_text(f"gradviz --gradviz-artifacts of {nodeid}\n", encoding="utf-8")
    report.save(folder)
    return folder

"""pytest plugin (registered through the ``pytest11`` entry point): ``--gradviz-artifacts DIR``.

A test that fails with a ``gradviz.GradientMismatch`` (from ``assert_gradients`` or
``gradviz.check``) gets a folder of its own under DIR (``artifact_folder``) with the report (JSON
and an .npz of every array), its figures and a reproducer script; the folder's path is a
``gradviz_artifacts`` property of the test, so ``--junitxml`` points at it. One folder per test
id: the mismatch that failed the test (the first phase to fail with one) is written; a test that
runs several checks stops at the first failing ``assert_gradients``, so that is the one saved.

Before a test runs, its folder from an earlier session is cleared, so what is there is this
session's: a test that passes now leaves none. Only a folder the plugin made for this very id
(its MARKER names the id) is ever removed; DIR itself and anything else in it are the user's.
A folder that cannot be written fails nothing but that test's artifacts. Loading this plugin
costs nothing: torch is imported only when a test has failed with gradviz's exception.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

OPTION = "--gradviz-artifacts"
PROPERTY = "gradviz_artifacts"  # the test's user_properties entry: a <property> in JUnit XML
MARKER = ".gradviz-artifacts"  # in each folder the plugin made: the only folders it ever clears
NAME_CHARS = 60  # of the readable part: the folder's files still fit Windows' 260-character paths
# Device names Windows refuses as a file name's stem, whatever follows the dot.
RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(10)), *(f"LPT{i}" for i in range(10))}
WRITTEN = pytest.StashKey[Path]()  # the folder written for this test, once


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gradviz")
    group.addoption(
        OPTION,
        dest="gradviz_artifacts",
        metavar="DIR",
        default=None,
        help="write the report, figures and a reproducer script of every failing gradient check "
        "under DIR, in a folder of each test's own (cleared before the test runs; its path is the "
        "test's gradviz_artifacts property in --junitxml)",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Clear this test's folder of an earlier session (or run: a plugin that reruns failures)
    before the test runs (see ``clear_own``)."""
    directory = item.config.getoption("gradviz_artifacts", None)
    if directory:
        clear_own(artifact_folder(Path(directory), item.nodeid), item.nodeid)
        if WRITTEN in item.stash:
            del item.stash[WRITTEN]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    outcome = yield
    report = outcome.get_result()
    directory = item.config.getoption("gradviz_artifacts", None)
    if not directory or call.excinfo is None or WRITTEN in item.stash:
        return
    mismatch = find_mismatch(call.excinfo.value)
    if mismatch is None:
        return
    folder, text = save_or_explain(mismatch.report, Path(directory), item.nodeid)
    report.sections.append(("gradviz artifacts", text))
    if folder is not None:
        item.stash[WRITTEN] = folder
        entry = (PROPERTY, str(folder.resolve()))
        item.user_properties.append(entry)  # the teardown report carries it into JUnit XML
        report.user_properties.append(entry)  # this phase's report has its own copy of the list


def save_or_explain(report: Any, directory: Path, nodeid: str) -> tuple[Path | None, str]:
    """The folder written and where the artifacts went, or None and why they could not be
    written: a folder that is a file, is read-only or is full costs this test its artifacts,
    never the session (no INTERNALERROR)."""
    try:
        folder = write_artifacts(report, directory, nodeid)
    except Exception as exc:
        return None, f"gradviz could not write this failure's artifacts under {directory}: {_reason(exc, directory)}"
    return folder, f"report, figures and reproducer.py in {folder}"


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
    """``DIR/<readable name>-<hash of the node id>``: the name is for people, the hash for the
    file system. Every node id holds "::", which no Windows name may, so every name is changed
    by sanitising and gets the hash: ids that sanitise alike (``test_bad[a/b]``, ``test_bad[a b]``)
    or share their first NAME_CHARS characters never share a folder. ASCII letters, digits, ``._-``
    only, no Windows device name, no trailing dot or space."""
    digest = hashlib.sha256(nodeid.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return directory / f"{readable_name(nodeid)}-{digest}"


def readable_name(nodeid: str) -> str:
    """``tests/test_ops.py::test_cube[float64]`` -> ``tests_test_ops.py__test_cube_float64``, cut
    to NAME_CHARS; a Windows device name (``nul.py``...) gets a leading underscore."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", nodeid.replace("::", "__")).strip("_.")[:NAME_CHARS]
    name = name.rstrip("_.") or "test"
    return f"_{name}" if name.split(".")[0].upper() in RESERVED else name


def marker_text(nodeid: str) -> bytes:
    return f"gradviz --gradviz-artifacts of {nodeid}\n".encode("utf-8", "surrogatepass")


def is_own(folder: Path, nodeid: str) -> bool:
    """A real folder (not a link) whose MARKER says the plugin made it for ``nodeid``."""
    marker = folder / MARKER
    try:
        return folder.is_dir() and not folder.is_symlink() and marker.read_bytes() == marker_text(nodeid)
    except OSError:
        return False


def clear_own(folder: Path, nodeid: str) -> bool:
    """Remove ``folder`` when it is the plugin's own for ``nodeid`` (an earlier session's
    artifacts); anything else is left alone. Whether it is gone; a folder that cannot be removed
    (read-only) is left for ``write_artifacts`` to explain if the test fails."""
    if not is_own(folder, nodeid):
        return False
    try:
        shutil.rmtree(folder)
    except OSError:
        return False
    return True


def write_artifacts(report: Any, directory: Path, nodeid: str) -> Path:
    """Save ``report`` into a folder of this test's own, holding nothing from an earlier run.

    This test's folder from an earlier session (MARKER names this id) is cleared and written
    afresh; a folder of that name the plugin did not make for this id is left alone, and the
    artifacts go to a fresh ``<name>-XXXXXXXX`` beside it instead.
    """
    directory.mkdir(parents=True, exist_ok=True)
    folder = artifact_folder(directory, nodeid)
    clear_own(folder, nodeid)
    try:
        folder.mkdir()
    except FileExistsError:
        folder = Path(tempfile.mkdtemp(prefix=folder.name + "-", dir=directory))
    (folder / MARKER).write_bytes(marker_text(nodeid))
    report.save(folder)
    return folder

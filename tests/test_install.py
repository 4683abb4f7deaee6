"""What a user gets from ``pip install gradviz-debugger`` (the README's Install section): the
distribution's name, metadata and version, and what installing its wheel does.

The core install is the library (torch, NumPy, filelock); the window's packages come with the
``[app]`` extra, and starting the window without them is one line naming what to install. The
slow test builds the wheel once and installs it into one fresh venv that already has torch, with
no Qt: pip must leave torch alone, and the library, its pytest plugin, the CLI (through the
worker) and the notebook view must work there with ``fcntl`` refused to gradviz's modules.
"""

from __future__ import annotations

import ast
import email.parser
import importlib.metadata
import json
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import textwrap
import time
import tomllib
import zipfile
from pathlib import Path
from urllib.parse import urlparse

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from gradviz._version import DISTRIBUTION, __version__
from gradviz.cli.window import APP_MODULES, missing_app_module
from tests.install_venv import (
    TORCH_TESTED,
    build_sdist,
    build_warnings,
    build_wheel,
    clean_env,
    plan,
    run,
    venv_claiming,
    venv_with_torch,
)
from tests.paths import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
OLDER_TORCH = "2.12.0"  # an installed torch that an exact pin of ours would replace
APP_DISTRIBUTIONS = {"pyside6-essentials", "shiboken6", "pyqtgraph", "pygments", "platformdirs"}
# the other project called gradviz on the package index, as a dist-info claiming the same package
OTHER_GRADVIZ = ("gradviz", "0.1.2")


def install_commands(markdown: str) -> list[str]:
    """The commands of the first ``sh`` block under ``## Install``, their comments left off."""
    section = markdown.split("\n## Install\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line.partition("#")[0].strip() for line in block.splitlines() if line.strip()]


README_INSTALL = install_commands((ROOT / "README.md").read_text(encoding="utf-8"))


def hide_modules(*names: str) -> str:
    """Python code that makes ``names`` look uninstalled to everything in the process: the
    finder answers first, as ``import`` and ``importlib.util.find_spec`` do for a missing package."""
    return textwrap.dedent(
        f"""
        import sys

        class _NotInstalled:
            def find_spec(self, name, path=None, target=None):
                if name.partition(".")[0] in {set(names)!r}:
                    raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
                return None

        sys.meta_path.insert(0, _NotInstalled())
        """
    )


def refuse_to_gradviz(*names: str) -> str:
    """Python code after which gradviz's own modules cannot import ``names`` (Windows has no
    ``fcntl``). ``subprocess`` has imported ``fcntl`` already on Linux, so a meta-path finder would
    never be asked: the refusal sits in ``__import__`` and looks at who imports. The worker is a
    fresh interpreter started by gradviz, so this never reaches it (it is Linux-only code)."""
    return textwrap.dedent(
        f"""
        import builtins

        _import = builtins.__import__

        def _refusing_import(name, globals=None, locals=None, fromlist=(), level=0):
            importer = (globals or {{}}).get("__name__") or ""
            if level == 0 and name.partition(".")[0] in {set(names)!r} and importer.partition(".")[0] == "gradviz":
                raise ModuleNotFoundError(f"No module named {{name!r}} (refused to {{importer}}, as on Windows)", name=name)
            return _import(name, globals, locals, fromlist, level)

        builtins.__import__ = _refusing_import
        """
    )


def _names(requirements: list[str]) -> set[str]:
    return {canonicalize_name(Requirement(r).name) for r in requirements}


def test_the_readme_installs_this_distribution_whose_version_has_one_home():
    """The README's Install lines name the distribution pyproject.toml builds (not ``gradviz``,
    another project), its ``[app]`` extra exists, and the version is read from gradviz/_version.py."""
    project = PYPROJECT["project"]
    assert project["name"] == DISTRIBUTION and canonicalize_name(DISTRIBUTION) != "gradviz"
    assert "version" not in project and project["dynamic"] == ["version"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "gradviz._version.__version__"}
    requirements = [Requirement(shlex.split(command)[2]) for command in README_INSTALL]
    assert [shlex.split(command)[:2] for command in README_INSTALL] == [["pip", "install"]] * 2
    assert {canonicalize_name(r.name) for r in requirements} == {DISTRIBUTION}
    assert [r.extras for r in requirements] == [set(), {"app"}] and "app" in project["optional-dependencies"]
    # the index's page says the same
    assert install_commands((ROOT / project["readme"]["file"]).read_text(encoding="utf-8")) == README_INSTALL


def test_gradviz_version_starts_with_the_distribution_name():
    """From the checkout too (the slow tests below run the installed command, next to the other gradviz)."""
    env = {**clean_env(), "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "gradviz", "--version"], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0 and out.stdout.splitlines()[0] == f"{DISTRIBUTION} {__version__}", out


def test_every_package_is_listed_for_the_wheel():
    """A package missing from pyproject's list is silently left out of a non-editable install."""
    listed = set(PYPROJECT["tool"]["setuptools"]["packages"])
    on_disk = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "gradviz").rglob("__init__.py")}
    assert on_disk <= listed, sorted(on_disk - listed)


def test_the_library_imports_only_the_core_dependencies():
    """Every third-party module imported outside ``gradviz/app`` (at the top or inside a function)
    is a core dependency: what ``pip install gradviz-debugger`` brings. The pytest plugin may import pytest,
    which loads it."""
    core = _names(PYPROJECT["project"]["dependencies"])
    providers = importlib.metadata.packages_distributions()
    stray: dict[str, set[str]] = {}
    for path in (ROOT / "gradviz").rglob("*.py"):
        if "app" in path.relative_to(ROOT / "gradviz").parts[:1]:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.partition(".")[0]
                if top in sys.stdlib_module_names or top == "gradviz":
                    continue
                if top == "pytest" and path.name == "pytest_plugin.py":
                    continue
                if not {canonicalize_name(d) for d in providers.get(top, [top])} & core:
                    stray.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    assert not stray, f"imported by the library but not a core dependency: {stray}"


def test_the_app_check_names_the_app_extra():
    """``gradviz`` checks for the very packages ``gradviz-debugger[app]`` installs, all present here."""
    app = _names(PYPROJECT["project"]["optional-dependencies"]["app"])
    providers = importlib.metadata.packages_distributions()
    checked = {canonicalize_name(d) for module in APP_MODULES for d in providers[module]}
    assert checked == app
    assert not app & _names(PYPROJECT["project"]["dependencies"])
    assert missing_app_module() is None


GRADVIZ = "from gradviz.cli.main import main; sys.exit(main([]))"
GRADVIZ_APP = "from gradviz.cli.main import main; sys.exit(main(['app', '--example', 'linear']))"
PYTHON_M = "import runpy; sys.argv = ['gradviz']; runpy.run_module('gradviz', run_name='__main__')"


@pytest.mark.parametrize(
    ("start", "hidden"),
    [
        (GRADVIZ, ("PySide6", "pyqtgraph")),
        (GRADVIZ_APP, ("PySide6", "pyqtgraph")),
        (PYTHON_M, ("PySide6", "pyqtgraph")),
        (GRADVIZ, ("pygments",)),
    ],
    ids=["gradviz", "gradviz app", "python -m gradviz", "gradviz without Pygments"],
)
def test_the_window_without_its_packages_says_what_to_install(tmp_path, start, hidden):
    """With a display (offscreen) the window would start: without Qt it is one line, exit 2."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "QT_QPA_PLATFORM": "offscreen"}
    code = hide_modules(*hidden) + f"import sys\n{start}\n"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
    )
    assert out.returncode == 2, out.stderr
    assert out.stdout == ""
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr, out.stderr
    assert f"needs {hidden[0]}" in out.stderr and README_INSTALL[1] in out.stderr  # the README's own line


# --- the wheel in a fresh venv next to torch, as a library user installs it -------------------------

USER_FILE = '''
import torch


class Square(torch.autograd.Function):
    """x ** 2 with a right backward."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad


class HalfSquare(Square):
    """x ** 2 whose backward forgot the factor 2."""

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return x * grad


def example_inputs(device="cpu", dtype=torch.float64):
    return (torch.linspace(-1.0, 2.0, 4, device=device, dtype=dtype, requires_grad=True),)
'''

USER_TESTS = '''
from gradviz.testing import assert_gradients

from ops import HalfSquare, Square, example_inputs


def test_square():
    assert_gradients(Square, example_inputs())


def test_half_square():
    assert_gradients(HalfSquare, example_inputs())
'''

# Runs in the fresh venv, in one process: everything gradviz's library side offers a user, with
# fcntl refused to gradviz's modules. Prints one JSON line of what it saw.
DRIVER = '''
import contextlib, importlib.metadata, importlib.resources, importlib.util, io, json, sys
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))
import gradviz
from ops import HalfSquare, Square, example_inputs

seen = {"gradviz_file": gradviz.__file__}
import torch

seen["torch"] = torch.__version__
good = gradviz.check(Square, example_inputs())
bad = gradviz.check(HalfSquare, example_inputs(), raise_exception=False)
seen["check"] = [good.passed, bad.passed, len(bad.failing_cells)]
html = bad._repr_html_()
seen["html"] = [len(html), "<svg" in html, "HalfSquare" in html]

import pytest

seen["pytest_exit"] = int(pytest.main(["-q", "-p", "no:cacheprovider", "--gradviz-artifacts", "artifacts", "test_ops.py"]))
seen["artifacts"] = sorted(str(p.relative_to("artifacts")) for p in Path("artifacts").rglob("*") if p.is_file())

from gradviz.cli.main import main

stdout = io.StringIO()
with contextlib.redirect_stdout(stdout):
    seen["cli_exit"] = main(["check", "ops.py", "--function", "HalfSquare", "--json"])
seen["cli_json"] = stdout.getvalue()

shipped = importlib.resources.files("gradviz")
seen["linear_example"] = shipped.joinpath("resources", "functions", "linear.py").is_file()
seen["schemas"] = sorted(str(p) for p in Path(str(shipped)).rglob("*.json") if '"$schema"' in p.read_text())
seen["fcntl_importers"] = sorted(m for m in sys.modules if m.startswith("gradviz") and getattr(sys.modules[m], "fcntl", None))
seen["qt"] = [importlib.util.find_spec(name) is not None for name in ("PySide6", "pyqtgraph")]
print("SEEN " + json.dumps(seen))
'''


@pytest.fixture(scope="module")
def fresh_install(tmp_path_factory):
    """One wheel, one venv with torch, the wheel installed, the driver run: what each step saw."""
    steps = {"start": time.monotonic()}
    base = tmp_path_factory.mktemp("wheel")
    wheel = build_wheel(ROOT, base)
    steps["wheel"] = time.monotonic()
    venv = venv_with_torch(base / "venv", "pytest")
    steps["venv with torch"] = time.monotonic()
    torch_before = venv.torch_version()
    would_install = plan(venv, wheel)
    # a user's older torch, within the range: claimed by a dist-info alone (pip plans by metadata)
    next_to_older = plan(venv_claiming(base / "older", {"torch": OLDER_TORCH}), wheel)

    had = venv.distributions()
    # the README's requirement, pointed at this wheel: pip refuses a wheel of another name
    readme_requirement = shlex.split(README_INSTALL[0])[2]
    run([*venv.pip, "install", "-q", f"{readme_requirement} @ {wheel.as_uri()}"], timeout=600)
    steps["plan and install"] = time.monotonic()
    gradviz_command = str(venv.root / "bin" / "gradviz")
    version = subprocess.run([gradviz_command, "--version"], capture_output=True, text=True, env=clean_env(), timeout=120)
    other = venv.site / f"{OTHER_GRADVIZ[0]}-{OTHER_GRADVIZ[1]}.dist-info"  # as if the other were installed too
    other.mkdir()
    (other / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {OTHER_GRADVIZ[0]}\nVersion: {OTHER_GRADVIZ[1]}\n")
    (other / "top_level.txt").write_text("gradviz\n")
    (other / "RECORD").write_text("")
    both = subprocess.run([gradviz_command, "--version"], capture_output=True, text=True, env=clean_env(), timeout=120)
    shutil.rmtree(other)

    work = base / "user"
    work.mkdir()
    (work / "ops.py").write_text(USER_FILE)
    (work / "test_ops.py").write_text(USER_TESTS)
    (work / "driver.py").write_text(refuse_to_gradviz("fcntl") + DRIVER)
    driver = subprocess.run([venv.python, "driver.py"], capture_output=True, text=True, cwd=work, env=clean_env(), timeout=600)
    lines = [line for line in driver.stdout.splitlines() if line.startswith("SEEN ")]
    steps["library"] = time.monotonic()
    window = [
        subprocess.run(command, capture_output=True, text=True, cwd=work, env=clean_env(), timeout=120)
        for command in ([str(venv.root / "bin" / "gradviz")], [venv.python, "-m", "gradviz", "app"])
    ]
    steps["window"] = time.monotonic()
    times = list(steps.values())
    return {
        "venv": venv.root,
        "torch_before": torch_before,
        "torch_after": venv.torch_version(),
        "would_install": would_install,
        "next_to_older": next_to_older,
        "added": {canonicalize_name(name) for name in venv.distributions() - had},
        "driver": driver,
        "seen": json.loads(lines[-1][5:]) if lines else None,
        "window": window,
        "wheel": wheel,
        "build_log": (base / "build.log").read_text(),
        "version": version,
        "version_with_the_other": both,
        "seconds": {name: round(b - a, 1) for name, a, b in zip(list(steps)[1:], times, times[1:])},
    }


@pytest.mark.slow
def test_the_wheel_leaves_torch_alone_and_works_without_qt(fresh_install):
    got = fresh_install
    print(f"\nwheel test: {sum(got['seconds'].values()):.0f} s {got['seconds']}; the wheel added {sorted(got['added'])}")
    # pip plans to install neither torch nor anything of the window's
    assert "torch" not in got["would_install"], got["would_install"]
    assert not APP_DISTRIBUTIONS & set(got["would_install"]), got["would_install"]
    assert DISTRIBUTION in got["would_install"] and "gradviz" not in got["would_install"]
    assert "torch" not in got["next_to_older"] and DISTRIBUTION in got["next_to_older"], got["next_to_older"]
    assert got["torch_after"] == got["torch_before"] and got["torch_before"].startswith(TORCH_TESTED)
    assert not APP_DISTRIBUTIONS & got["added"], got["added"]  # (pytest brings Pygments along)

    driver = got["driver"]
    seen = got["seen"]
    # fcntl is POSIX-only: a library import of it would kill the driver importing gradviz.check,
    # and this names the module that imports it.
    assert "No module named 'fcntl'" not in driver.stderr, driver.stderr[-4000:]
    assert seen is not None, driver.stdout[-4000:] + driver.stderr[-4000:]
    assert seen["gradviz_file"].startswith(str(got["venv"]))  # the wheel, not the checkout
    assert seen["torch"] == got["torch_before"]
    assert seen["check"][:2] == [True, False] and seen["check"][2] > 0
    assert seen["html"][0] > 0 and seen["html"][1:] == [True, True]
    assert seen["pytest_exit"] == 1  # one test passes, one fails
    reports = [name for name in seen["artifacts"] if name.endswith("report.json")]
    assert len(reports) == 1 and "half_square" in reports[0], seen["artifacts"]
    assert any(name.endswith("reproducer.py") for name in seen["artifacts"]), seen["artifacts"]
    assert seen["cli_exit"] == 1  # the CLI ran the check in its worker: some cell fails
    assert json.loads(seen["cli_json"])  # one JSON object on stdout
    assert seen["linear_example"] is True  # resources/ ships inside the wheel
    assert seen["qt"] == [False, False]
    assert seen["fcntl_importers"] == []

    # the window, started without Qt: one line saying what to install
    for started in got["window"]:
        assert started.returncode == 2 and started.stdout == "", started.stderr
        assert started.stderr.count("\n") == 1 and README_INSTALL[1] in started.stderr, started.stderr


@pytest.mark.slow
def test_gradviz_version_names_the_distribution_and_the_other_gradviz(fresh_install):
    """The installed command tells which gradviz this is, and names the other project's when both
    claim the ``gradviz`` package."""
    version, both = fresh_install["version"], fresh_install["version_with_the_other"]
    assert version.returncode == 0 and version.stdout == f"{DISTRIBUTION} {__version__}\n", version
    assert both.returncode == 0 and both.stdout.startswith(version.stdout), both
    name, number = OTHER_GRADVIZ
    assert f"also installed: {name} {number}" in both.stdout and f"pip uninstall {name} {DISTRIBUTION}" in both.stdout


def wheel_metadata(wheel: Path):
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return email.parser.Parser().parsestr(archive.read(name).decode("utf-8"))


def relative_links(markdown: str) -> list[str]:
    """The links and images of ``markdown`` (as a Markdown renderer reads it) that name no host."""
    from markdown_it import MarkdownIt

    found = []
    for token in MarkdownIt("commonmark").parse(markdown):
        for child in [token, *(token.children or [])]:
            for key in ("href", "src"):
                target = child.attrGet(key) if child.attrs else None
                if target is not None and not urlparse(str(target)).netloc:
                    found.append(str(target))
    return found + (["<img>"] if "<img" in markdown else [])


@pytest.mark.slow
def test_the_wheel_metadata_is_honest_and_built_without_warnings(fresh_install):
    """Name and version from their one place, POSIX for the CLI and window, no invented URL, a
    description the index can show (no links into the repository), and no warning while building."""
    meta = wheel_metadata(fresh_install["wheel"])
    assert meta["Name"] == DISTRIBUTION and meta["Version"] == __version__
    classifiers = meta.get_all("Classifier")
    assert "Operating System :: POSIX" in classifiers and "Operating System :: OS Independent" not in classifiers
    declared = [f"{label}, {url}" for label, url in PYPROJECT["project"].get("urls", {}).items()]
    assert (meta.get_all("Project-URL") or []) == declared
    assert not [url for url in declared if any(word in url.lower() for word in ("example.", "todo", "placeholder"))]
    description = meta.get_payload()
    assert meta["Description-Content-Type"] == "text/markdown"
    assert description.strip() == (ROOT / "PYPI.md").read_text(encoding="utf-8").strip()
    assert relative_links(description) == []
    assert build_warnings(fresh_install["build_log"]) == []


@pytest.mark.slow
def test_the_sdist_ships_no_tests_and_builds_the_same_wheel(tmp_path, fresh_install):
    """The source distribution leaves the test suite out (it needs this checkout to run) and
    builds a wheel with the very files of the one built from the checkout."""
    sdist = build_sdist(ROOT, tmp_path)
    assert build_warnings((tmp_path / "sdist.log").read_text()) == []
    with tarfile.open(sdist) as archive:
        names = [name.partition("/")[2] for name in archive.getnames()]
    assert not [name for name in names if name.split("/")[0] in ("tests", "bench", "scripts")], names
    assert {"pyproject.toml", "PYPI.md", "LICENSE", "gradviz/_version.py"} <= set(names)
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path / "from-sdist"), str(sdist)], timeout=600)
    (rebuilt,) = (tmp_path / "from-sdist").glob("*.whl")
    assert rebuilt.name == fresh_install["wheel"].name

    def files(wheel: Path) -> set[str]:
        return set(zipfile.ZipFile(wheel).namelist())

    assert files(rebuilt) == files(fresh_install["wheel"])


@pytest.mark.slow
def test_the_cli_json_matches_the_shipped_schema(fresh_install):
    """``gradviz check --json`` from the installed wheel, against the JSON Schema the wheel ships
    (the wheel must ship them)."""
    seen = fresh_install["seen"]
    assert seen is not None, fresh_install["driver"].stderr[-4000:]
    document = json.loads(seen["cli_json"])
    schemas = {Path(p).name: Path(p) for p in seen["schemas"]}
    assert schemas, "the wheel ships no JSON Schema (a *.json with \"$schema\" under gradviz/)"
    name = "error.schema.json" if "error" in document else "check.schema.json"
    assert name in schemas, f"which schema describes `gradviz check --json`? {sorted(schemas)}"
    import jsonschema

    schema = json.loads(schemas[name].read_text(encoding="utf-8"))
    jsonschema.validate(document, schema, cls=jsonschema.validators.validator_for(schema))
    assert "error" not in document, document["error"]  # the check itself ran

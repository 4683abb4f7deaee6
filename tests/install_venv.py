"""A gradviz wheel and a fresh venv that already has torch (and pytest), as a user's CI job has them.

Used by ``tests/test_install.py``, and on its own to measure what installing gradviz adds to such
a venv (the install size; run it on any checkout to compare)::

    python -m tests.install_venv [SOURCE_DIR]
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from gradviz._version import DISTRIBUTION
from tests.paths import ROOT

CONSTRAINTS = ROOT / "constraints.txt"  # the versions this project tests: torch from local disk where it lies
TORCH_TESTED = next(
    line.split("==")[1].strip() for line in CONSTRAINTS.read_text().splitlines() if line.startswith("torch==")
)
# what a build must not see or ship: a stale build/ would ship modules that are gone
NOT_SOURCE = shutil.ignore_patterns(
    ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".ruff_cache", "test-artifacts"
)


def run(command: list, **kwargs) -> subprocess.CompletedProcess:
    """``command``'s result; its output in the failure when it fails."""
    out = subprocess.run(command, capture_output=True, text=True, env=kwargs.pop("env", clean_env()), **kwargs)
    if out.returncode != 0:
        raise AssertionError(f"{command} exited {out.returncode}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    return out


def clean_env() -> dict[str, str]:
    """Our environment without what would show the venv this checkout (a ``PYTHONPATH`` to it
    makes pip see gradviz as installed already) or a display (nothing may start a window)."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "DISPLAY", "WAYLAND_DISPLAY")}


def build_env() -> dict[str, str]:
    """The environment a user's build has: with bytecode allowed (``PYTHONDONTWRITEBYTECODE``
    makes setuptools print a warning of its own that says nothing of this project)."""
    return {k: v for k, v in clean_env().items() if k != "PYTHONDONTWRITEBYTECODE"}


def build_wheel(source: Path, dest: Path) -> Path:
    """``pip wheel`` (with build isolation, as a user's build) of a copy of ``source``: the
    checkout gets no build/ nor egg-info from it. What the build printed is in
    ``dest / "build.log"`` (verbose: setuptools' warnings show only then)."""
    copy = dest / "source"
    shutil.copytree(source, copy, ignore=NOT_SOURCE)
    command = [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "-w", str(dest / "dist"), str(copy)]
    out = run(command, cwd=dest, timeout=600, env=build_env())
    (dest / "build.log").write_text(out.stdout + out.stderr)
    shutil.rmtree(copy)
    (wheel,) = (dest / "dist").glob(f"{DISTRIBUTION.replace('-', '_')}-*.whl")
    return wheel


def build_sdist(source: Path, dest: Path) -> Path:
    """The source distribution of a copy of ``source``, made by the build backend's own PEP 517
    hook (what ``python -m build --sdist`` calls) with this interpreter's setuptools; its output in
    ``dest / "sdist.log"``."""
    copy = dest / "sdist-source"
    shutil.copytree(source, copy, ignore=NOT_SOURCE)
    hook = "import sys, setuptools.build_meta as backend; backend.build_sdist(sys.argv[1])"
    out = run([sys.executable, "-c", hook, str(dest / "sdist")], cwd=copy, timeout=600, env=build_env())
    (dest / "sdist.log").write_text(out.stdout + out.stderr)
    shutil.rmtree(copy)
    (sdist,) = (dest / "sdist").glob(f"{DISTRIBUTION.replace('-', '_')}-*.tar.gz")
    return sdist


def build_warnings(log: str) -> list[str]:
    """The lines of a build's output that warn: setuptools' ``_Warning:`` and
    ``...DeprecationWarning:``, distutils' ``warning:``, pip's ``WARNING:``."""
    return [line.strip() for line in log.splitlines() if "warning:" in line.lower()]


@dataclass
class Venv:
    root: Path

    @property
    def python(self) -> str:
        return str(self.root / "bin" / "python")

    @property
    def pip(self) -> list[str]:
        return [self.python, "-m", "pip", "--disable-pip-version-check"]

    @property
    def site(self) -> Path:
        return Path(run([self.python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())

    def torch_version(self) -> str:
        """torch's version as installed (its dist-info: what pip reads and replaces)."""
        (torch,) = importlib.metadata.distributions(name="torch", path=[str(self.site)])
        return torch.version

    def distributions(self) -> set[str]:
        return {d.metadata["Name"].lower().replace("_", "-") for d in importlib.metadata.distributions(path=[str(self.site)])}


def venv_with_torch(dest: Path, *also: str) -> Venv:
    """A fresh venv with pip, torch and ``also`` (pytest, for a user's test job) as this
    interpreter has them (constraints.txt's versions), and what they require.

    They are installed by linking the files each distribution's RECORD lists, dist-info included,
    into the venv's site-packages: the layout pip would unpack, in seconds instead of a minute of
    unpacking torch's wheel and resolving its requirements. pip in the venv sees them installed.
    """
    run([sys.executable, "-m", "venv", "--without-pip", str(dest)], timeout=120)
    venv = Venv(dest)
    site = venv.site
    for dist in _with_requirements(("pip", "torch", *also)):
        for file in dist.files or []:
            source = Path(dist.locate_file(file)).resolve()
            if ".." in file.parts or not source.is_file():
                continue  # console scripts live outside site-packages: none is needed here
            target = site / file
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(source, target)
            except OSError:  # another file system
                shutil.copy2(source, target)
    return venv


def _with_requirements(names: tuple[str, ...]) -> list[importlib.metadata.Distribution]:
    """The installed distributions ``names`` and everything they require here, each once."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    found: dict[str, importlib.metadata.Distribution] = {}
    todo = list(names)
    while todo:
        name = canonicalize_name(todo.pop())
        if name in found:
            continue
        found[name] = dist = importlib.metadata.distribution(name)
        for line in dist.requires or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return list(found.values())


def venv_claiming(dest: Path, installed: dict[str, str]) -> Venv:
    """A venv without pip whose site-packages only claims ``installed`` (name -> version): a
    dist-info and no code, enough for pip to plan around (a torch 2.12 in seconds, not 800 MB)."""
    run([sys.executable, "-m", "venv", "--without-pip", str(dest)], timeout=120)
    venv = Venv(dest)
    for name, version in installed.items():
        info = venv.site / f"{name}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        (info / "INSTALLER").write_text("pip\n")
        (info / "RECORD").write_text("")
    return venv


def plan(venv: Venv, wheel: Path) -> dict[str, str]:
    """What ``pip install WHEEL`` would install into ``venv`` (name -> version), installing nothing."""
    pip = venv.pip if (venv.root / "bin" / "pip").exists() else [sys.executable, "-m", "pip", "--python", venv.python]
    report = json.loads(run([*pip, "install", "-q", "--dry-run", "--report", "-", str(wheel)], timeout=600).stdout)
    return {i["metadata"]["name"].lower().replace("_", "-"): i["metadata"]["version"] for i in report["install"]}


def site_bytes(site: Path) -> int:
    return sum(p.stat().st_size for p in site.rglob("*") if p.is_file() and not p.is_symlink())


def main(argv: list[str]) -> int:
    source = Path(argv[0]).resolve() if argv else ROOT
    with tempfile.TemporaryDirectory(prefix="gradviz-install-size-") as tmp:
        started = time.monotonic()
        wheel = build_wheel(source, Path(tmp))
        venv = venv_with_torch(Path(tmp) / "venv")
        before, had = site_bytes(venv.site), venv.distributions()
        run([*venv.pip, "install", "-q", str(wheel)], timeout=600)
        grown = site_bytes(venv.site) - before
        print(f"{source}: installing {wheel.name} next to torch {venv.torch_version()} added {grown / 1e6:.1f} MB")
        print("  new distributions: " + ", ".join(sorted(venv.distributions() - had)))
        print(f"  ({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

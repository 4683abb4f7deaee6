"""Data-loss attacks on saves and recovery, each done for real and
answered with "" when gradviz withstood it, else a short reason. No Qt: the file-level halves of
the attacks (the window's halves are tests/app/test_saves_*.py).

Run as a script it also measures restoring a 51 MB recovery text (listing it, then saving it to
a file from its recovery file), in a fresh process so the peak memory is its own:

    .venv/bin/python bench/attacks_saves.py [--measure]
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from gradviz.app.recovery import RecoveryStore  # noqa: E402
from gradviz.schema.atomic_write import write_atomically  # noqa: E402
from gradviz.schema.file_stamp import change_since, stamp_of  # noqa: E402

OLD = "print('the original')\n" * 20
NEW = "x = 1  # the new, longer text\n" * 4000


@contextlib.contextmanager
def _folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="gradviz-attack-saves-") as name:
        yield Path(name)


def _left_behind(folder: Path, n: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for k in range(n):
        record = {"text": f"# text {k}\n", "title": f"t{k}.py", "path": None, "saved_at": 1000.0 + k}
        (folder / f"recovery-wgone{k:05d}.json").write_text(json.dumps(record))


def recovery_keeps_what_is_not_declined() -> str:
    """2000 left-behind texts; one declined; the others stay, all listed."""
    with _folder() as folder:
        _left_behind(folder, 2000)
        found, problems = RecoveryStore(folder).orphans()
        if len(found) != 2000 or problems:
            return f"listed {len(found)} of 2000 ({len(problems)} problems)"
        RecoveryStore.discard(found[0])
        left = len(list(folder.glob("recovery-*.json")))
        return "" if left == 1999 else f"{left} of 1999 texts left after declining one"


def save_onto_a_full_disk() -> str:
    """A save that runs out of space leaves the old file whole (a real tmpfs as root;
    else a file-size limit, the same failure mid-write)."""
    with _folder() as folder:
        disk = folder / "disk"
        disk.mkdir()
        mounted = os.geteuid() == 0 and subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)], capture_output=True
        ).returncode == 0  # fmt: skip
        try:
            target = disk / "mine.py"
            target.write_text(OLD)
            limit = resource.getrlimit(resource.RLIMIT_FSIZE)
            handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            if not mounted:
                resource.setrlimit(resource.RLIMIT_FSIZE, (16_384, limit[1]))
            try:
                write_atomically(target, NEW)
                return "a save larger than the free space succeeded?"
            except OSError as exc:
                if exc.errno not in (errno.ENOSPC, errno.EFBIG):
                    return f"failed with {exc!r}, not a full disk"
            finally:
                if not mounted:
                    resource.setrlimit(resource.RLIMIT_FSIZE, limit)
                signal.signal(signal.SIGXFSZ, handler)
            if target.read_text() != OLD:
                return "the original was changed"
            extra = sorted(p.name for p in disk.iterdir() if p.name != "mine.py")
            return f"left behind: {extra}" if extra else ""
        finally:
            if mounted:
                subprocess.run(["umount", "-l", str(disk)], capture_output=True)


def save_after_the_file_became_a_link() -> str:
    """The file was changed, then replaced by a link: the change is seen, and a write
    replaces the link, never its target."""
    with _folder() as folder:
        mine, victim = folder / "mine.py", folder / "victim.txt"
        mine.write_text(OLD)
        stamp = stamp_of(mine, OLD.encode())
        mine.write_text(OLD + "# another program\n")
        if change_since(stamp) != "another program changed it":
            return "a change by another program was not seen"
        victim.write_text("precious\n")
        mine.unlink()
        mine.symlink_to(victim)
        if "symbolic link" not in (change_since(stamp) or ""):
            return "the link was not seen"
        write_atomically(mine, NEW)
        return "" if victim.read_text() == "precious\n" else "the link's target was written"


def restore_a_51_mb_text() -> str:
    """A 51 MB recovery text lists from its header and saves to a file in chunks."""
    seconds, peak_mb = measure_big_restore()
    if seconds > 5 or peak_mb > 150:
        return f"took {seconds:.1f} s and {peak_mb:.0f} MB more memory"
    return ""


def measure_big_restore(size: int = 51_000_000) -> tuple[float, float]:
    """(seconds, MB of peak memory added) to list a ``size``-byte recovery text and save it to a
    file, in a fresh process."""
    code = (
        "import resource, sys, time\n"
        "from pathlib import Path\n"
        "from gradviz.app.recovery import RecoveryStore\n"
        "from gradviz.schema.atomic_write import atomic_writer\n"
        "folder = Path(sys.argv[1])\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "start = time.perf_counter()\n"
        "[found], _ = RecoveryStore(folder / 'rec').orphans()\n"
        "with atomic_writer(folder / 'restored.py') as out:\n"
        "    found.copy_to(out)\n"
        "seconds = time.perf_counter() - start\n"
        "print(seconds, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024)\n"
    )
    with _folder() as folder:
        line = "value_%d = compute(alpha, beta) + 1  # a line of code\n"
        text = "".join(line % i for i in range(size // 40))[:size]
        store = RecoveryStore(folder / "rec", key="wbig")
        store.write(text, "big.py", None)
        store._release_lock(delete=False)  # as a killed window leaves it
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        out = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True, env=env)
        if out.returncode != 0:
            raise RuntimeError(out.stderr[-500:])
        if (folder / "restored.py").read_text() != text:
            raise RuntimeError("the restored text differs")
        seconds, peak = out.stdout.split()
        return float(seconds), float(peak)


def attack_cases() -> list[tuple[str, Callable[[], str]]]:
    return [
        ("recovery: 2000 left behind, one declined", recovery_keeps_what_is_not_declined),
        ("save: onto a full disk", save_onto_a_full_disk),
        ("save: file changed, then replaced by a link", save_after_the_file_became_a_link),
        ("recovery: a 51 MB text restored to a file", restore_a_51_mb_text),
    ]


if __name__ == "__main__":
    if "--measure" in sys.argv:
        started = time.perf_counter()
        seconds, peak = measure_big_restore()
        print(f"51 MB recovery text: listed and saved to a file in {seconds:.2f} s, peak memory +{peak:.0f} MB")
    for name, attack in attack_cases():
        print(f"{name}: {attack() or 'withstood'}")

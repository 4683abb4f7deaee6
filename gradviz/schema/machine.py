"""How much memory this process may still take: the machine's RAM is only one of the limits.

``prlimit --as`` (RLIMIT_AS) bounds the address space, and a container's cgroup (v2's
``memory.max``, v1's ``memory.limit_in_bytes``) bounds what the group holds; either can be far
below the RAM ``sysconf`` reports. A size guard that reads RAM alone lets gradviz allocate a
Jacobian the kernel will refuse, and the MemoryError then looks like the user's. So the guards
ask ``memory_headroom``: the least of the room under each limit that applies. Standard library
only; where a limit cannot be read, it does not count.
"""

from __future__ import annotations

import os
from pathlib import Path

UNLIMITED = 2**60  # a limit at or above this (cgroup v1 writes 2^63 - 4096) bounds nothing
_CGROUP_ROOT = Path("/sys/fs/cgroup")


def memory_headroom() -> int | None:
    """Bytes this process may still allocate under RLIMIT_AS and its cgroup's limit; None when
    neither bounds it."""
    rooms = [room for room in (address_space_room(), cgroup_room()) if room is not None]
    return max(0, min(rooms)) if rooms else None


def address_space_room() -> int | None:
    """RLIMIT_AS (soft) minus the address space mapped now (VmSize); None without a limit."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    except (ImportError, OSError, ValueError):
        return None
    if soft == resource.RLIM_INFINITY or soft < 0 or soft >= UNLIMITED:
        return None
    return soft - _vm_size()


def _vm_size() -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def cgroup_room() -> int | None:
    """The least of (limit - usage) over this process's memory cgroup and its ancestors; None
    without one."""
    rooms = []
    for folder, limit_name, usage_name in _cgroup_folders():
        limit, usage = _read_int(folder / limit_name), _read_int(folder / usage_name)
        if limit is not None and limit < UNLIMITED and usage is not None:
            rooms.append(limit - usage)
    return min(rooms) if rooms else None


def _cgroup_folders() -> list[tuple[Path, str, str]]:
    """Each memory cgroup folder that applies to us (ours, then its ancestors up to the mount),
    with the names of its limit and usage files."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":  # v2: one unified hierarchy
            mount, names = _CGROUP_ROOT, ("memory.max", "memory.current")
        elif "memory" in parts[1].split(","):  # v1: the memory controller's own hierarchy
            mount, names = _CGROUP_ROOT / "memory", ("memory.limit_in_bytes", "memory.usage_in_bytes")
        else:
            continue
        folder = mount / parts[2].lstrip("/")
        if not folder.is_dir():  # a cgroup namespace: the mount's root is our group
            folder = mount
        while True:
            found.append((folder, *names))
            if folder == mount or mount not in folder.parents:
                break
            folder = folder.parent
    return found


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    if text == "max":
        return UNLIMITED
    try:
        return int(text)
    except ValueError:
        return None


def physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def describe_limits() -> str:
    """The memory limits this process runs under, in a sentence for an out-of-memory error."""
    from gradviz.schema.units import format_bytes

    parts = []
    ram = physical_memory()
    if ram:
        parts.append(f"RAM {format_bytes(ram)}")
    room = address_space_room()
    if room is not None:
        parts.append(f"{format_bytes(max(0, room))} left under the address-space limit (ulimit -v, RLIMIT_AS)")
    group = cgroup_room()
    if group is not None:
        parts.append(f"{format_bytes(max(0, group))} left under the cgroup's memory limit")
    return f"This process has {', '.join(parts)}." if parts else ""

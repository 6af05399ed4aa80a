"""How many CPUs this process may use: its affinity mask, bounded by its cgroup's CPU quota.

This is the default thread count of the element-wise launches and of MKL's products. A
container given ``--cpus=1.5`` on a 64-core host sees 64 CPUs in its affinity mask but is
throttled after 1.5 CPUs' worth of time per period; threads beyond the quota then only wait
for each other at every barrier. The quota is read from cgroup v2 (``cpu.max``) or v1
(``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``) for the process's cgroup and each of its
ancestors (the tightest wins), rounded up.

    from nuvec.backends.cpu import cores
    cores.usable_cpus()      # e.g. 2
"""

from __future__ import annotations

import math
import os
from pathlib import Path

_ROOT = Path("/sys/fs/cgroup")


def affinity_cpus() -> int:
    """The number of CPUs in this process's affinity mask (at least 1)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _quota_v2(folder: Path) -> float | None:
    text = _read(folder / "cpu.max")  # "max 100000" or "150000 100000"
    if not text:
        return None
    parts = text.split()
    if len(parts) != 2 or parts[0] == "max":
        return None
    try:
        return int(parts[0]) / int(parts[1])
    except (ValueError, ZeroDivisionError):
        return None


def _quota_v1(folder: Path) -> float | None:
    quota, period = _read(folder / "cpu.cfs_quota_us"), _read(folder / "cpu.cfs_period_us")
    try:
        q, p = int(quota or "-1"), int(period or "0")
    except ValueError:
        return None
    return q / p if q > 0 and p > 0 else None


def _ancestors(base: Path, relative: str) -> list[Path]:
    """``base/relative`` and each folder above it up to ``base``."""
    parts = [p for p in relative.strip("/").split("/") if p]
    return [base.joinpath(*parts[:n]) for n in range(len(parts), -1, -1)]


def cgroup_quota(root: Path = _ROOT, cgroup_file: Path = Path("/proc/self/cgroup")) -> float | None:
    """The tightest CPU quota (in CPUs, e.g. 1.5) of this process's cgroups, or None."""
    text = _read(cgroup_file)
    if not text:
        return None
    quotas: list[float] = []
    for line in text.splitlines():
        hierarchy, _, rest = line.partition(":")
        controllers, _, relative = rest.partition(":")
        if hierarchy == "0" and not controllers:  # cgroup v2: "0::/path"
            folders, reader = _ancestors(root, relative), _quota_v2
        elif "cpu" in controllers.split(","):  # cgroup v1: "N:cpu,cpuacct:/path"
            mount = root / controllers
            if not mount.is_dir():
                mount = root / "cpu"
            folders, reader = _ancestors(mount, relative), _quota_v1
        else:
            continue
        quotas += [q for q in map(reader, folders) if q is not None]
    return min(quotas) if quotas else None


def usable_cpus() -> int:
    """CPUs this process may keep busy: its affinity mask, bounded by its cgroup quota."""
    n = affinity_cpus()
    quota = cgroup_quota()
    if quota is not None:
        n = min(n, max(1, math.ceil(quota - 1e-9)))
    return n

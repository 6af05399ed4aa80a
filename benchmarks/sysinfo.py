"""What machine the figures come from: CPU model, cores, memory, OS, compilers, load."""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
from typing import Any


def cpu_model() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        m = re.search(r"^Model name:\s*(.+)$", out, re.M)
        if m:
            return m.group(1).strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return platform.processor() or "unknown"


def cache_sizes() -> dict[str, str]:
    sizes = {}
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        for level in ("L1d", "L2", "L3"):
            m = re.search(rf"^{level} cache:\s*(.+)$", out, re.M)
            if m:
                sizes[level] = m.group(1).strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return sizes


def memory_bytes() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def describe() -> dict[str, Any]:
    """A JSON-able description of this machine and interpreter."""
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "caches": cache_sizes(),
        "memory_bytes": memory_bytes(),
        "os": f"{platform.system()} {platform.release()}",
        "arch": platform.machine(),
        "python": sys.version.split()[0],
        "loadavg": list(os.getloadavg()),
    }

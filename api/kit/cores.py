"""How many cores this process may use: `serve` starts a worker for each by default."""

import math
import os
from pathlib import Path

# cgroup v2's CPU quota of this process's group ("max 100000", or "150000 100000": 1.5
# cores); a container started with --cpus has one.
CPU_MAX = Path("/sys/fs/cgroup/cpu.max")


def usable_cores(cpu_max: Path = CPU_MAX) -> int:
    """The cores the scheduler lets this process run on (its affinity: taskset, cpusets),
    or fewer when a CPU quota allows less. `os.cpu_count()` counts the machine's: in a
    container limited to one core of a large host it would start a worker per host core,
    each holding its own memory and all sharing the one core."""
    if hasattr(os, "sched_getaffinity"):
        cores = len(os.sched_getaffinity(0))
    else:  # no affinity to read (macOS, Windows)
        cores = os.cpu_count() or 1
    quota = cpu_quota(cpu_max)
    if quota is not None:
        cores = min(cores, math.ceil(quota))
    return max(1, cores)


def cpu_quota(cpu_max: Path = CPU_MAX) -> float | None:
    """Cores' worth of CPU time the quota allows, or None: no quota, or none to read."""
    try:
        limit, period = cpu_max.read_text().split()
        return None if limit == "max" else int(limit) / int(period)
    except (OSError, ValueError, ZeroDivisionError):
        return None

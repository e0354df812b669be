"""Who this process is, as written on the runs it drives: at start, a run marked with this
host and a process that no longer exists (or with this very pid but another start) is
known dead at once, without waiting for its conversation's lease to lapse."""

import os
import socket
from dataclasses import dataclass
from pathlib import Path

from api.kit.secrets import new_id


@dataclass(frozen=True)
class ProcessId:
    host: str
    pid: int
    token: str  # new at each start: a pid can be used again, a token cannot

    def knows_dead(self, host: str, pid: int, token: str) -> bool:
        """Whether the process named is certainly gone (False when it may be alive)."""
        if host != self.host:
            return False
        if pid == self.pid:
            return token != self.token
        return not _exists(pid)


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists, maybe only as a zombie
        pass
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    """Killed but not yet reaped: a worker killed with its supervisor waits for init to
    collect it, and a server restarted at once (faster than that) would otherwise take it
    for alive and leave its runs to the lease's lapse. It runs nothing any more."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):  # gone meanwhile, or no /proc here: the signal's answer
        return False
    return state in ("Z", "X")


_current: ProcessId | None = None


def this_process() -> ProcessId:
    """Asked each time, not fixed at import: a forked worker is a process of its own."""
    global _current
    if _current is None or _current.pid != os.getpid():
        _current = ProcessId(socket.gethostname(), os.getpid(), new_id())
    return _current

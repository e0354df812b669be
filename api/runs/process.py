"""Who this process is, as written on the runs it drives: at start, a run marked with this
host and a process that no longer exists (or with this very pid but another start) is
known dead at once, without waiting for its conversation's lease to lapse."""

import os
import socket
from dataclasses import dataclass

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
    except PermissionError:  # someone else's process: it exists
        return True
    return True


_current: ProcessId | None = None


def this_process() -> ProcessId:
    """Asked each time, not fixed at import: a forked worker is a process of its own."""
    global _current
    if _current is None or _current.pid != os.getpid():
        _current = ProcessId(socket.gethostname(), os.getpid(), new_id())
    return _current

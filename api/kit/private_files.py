"""Data files only their owner may read: the embedded store and its key hold every tenant's
memories and credentials, so what the server creates is 0700 (folders) and 0600 (files),
whatever the process's umask. What exists already is left as its owner set it."""

import os
from pathlib import Path


def private_directory(path: Path) -> None:
    """`path` and any missing parents, each made readable by its owner only."""
    missing: list[Path] = []
    for folder in (path, *path.parents):
        if folder.exists():
            break
        missing.append(folder)
    path.mkdir(parents=True, exist_ok=True)
    for folder in missing:
        os.chmod(folder, 0o700)


def private_file(path: Path) -> None:
    """Create `path` empty for its owner only, unless it exists."""
    private_directory(path.parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    os.fchmod(fd, 0o600)  # the umask may have taken bits away, never added: this is exact
    os.close(fd)

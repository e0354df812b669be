"""The encryption keys of provider credentials: ENCRYPTION_KEY, or in local mode a key made
on first start and kept beside the data, readable by its owner only."""

import os
import secrets
from pathlib import Path

from api.config import Settings
from api.kit.crypto import KeyRing
from api.kit.private_files import private_directory

KEY_FILE = "encryption.key"


def local_key(directory: Path) -> str:
    path = directory / KEY_FILE
    if not path.exists():
        private_directory(directory)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_urlsafe(48))
    return path.read_text().strip()


def keyring(settings: Settings) -> KeyRing:
    if settings.encryption_key is not None:
        current = settings.encryption_key.get_secret_value()
    else:  # check_settings requires ENCRYPTION_KEY in google mode
        current = local_key(settings.sqlite_path.parent)
    return KeyRing(current, settings.old_encryption_keys)

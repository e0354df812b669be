"""What each worker of `agent-memory serve --workers N` loads: the app, built from the
environment (`api.main`'s `app`), with the collector off while its modules load. Their
objects live as long as the process, and a collection during the imports walks them all
again (about 0.1 s of each worker's start); the app's start-up freezes them and turns the
collector back on (api/main.py's lifespan)."""

import gc

gc.disable()

from api.main import app  # noqa: E402

__all__ = ["app"]

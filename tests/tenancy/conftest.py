# The harness runs on the SaaS app (AUTH_MODE=google), where every route exists.
from tests.auth.conftest import app, google, settings

__all__ = ["app", "google", "settings"]

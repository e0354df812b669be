from tests.runtime.conftest import store

__all__ = ["store"]  # fixtures shared with the turn tests

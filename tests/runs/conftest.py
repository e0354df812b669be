from tests.runtime.conftest import fake_openai, store

__all__ = ["fake_openai", "store"]  # fixtures shared with the turn tests

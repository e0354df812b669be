import pytest

from bench import common
from tests.parallel import free_port


@pytest.fixture(autouse=True)
def _ports(monkeypatch: pytest.MonkeyPatch) -> None:
    """The benchmarks' servers started in this process take their ports as the tests' do."""
    monkeypatch.setattr(common, "free_port", free_port)

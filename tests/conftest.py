import os
import time
from collections.abc import Iterator

import pytest

from api.kit.clock import FrozenClock
from api.store.dynamodb_local import DynamoDBLocal, DynamoDBLocalUnavailable
from tests.fakes.llm_servers import FakeLLM, start_fake_anthropic, start_fake_openai

# boto3 must never reach a real AWS account from a test.
os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.pop("AWS_PROFILE", None)

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
UNDOCUMENTED = pytest.StashKey[list[str]]()


@pytest.fixture
def clock() -> FrozenClock:
    # Real time, frozen: DynamoDB Local's own TTL sweeper sees the same present as the test.
    return FrozenClock(float(int(time.time())))


@pytest.fixture
def fake_openai() -> Iterator[FakeLLM]:
    """OpenAI's API, faked on 127.0.0.1 in its wire format (tests/fakes/llm_servers.py)."""
    with start_fake_openai() as fake:
        yield fake


@pytest.fixture
def fake_anthropic() -> Iterator[FakeLLM]:
    """Anthropic's Messages API, faked the same way."""
    with start_fake_anthropic() as fake:
        yield fake


@pytest.fixture(scope="session")
def dynamodb_local() -> Iterator[DynamoDBLocal]:
    """One DynamoDB Local for the whole run. In CI it must run: never skipped there."""
    try:
        server = DynamoDBLocal().start()
    except DynamoDBLocalUnavailable as e:
        if IN_CI:
            pytest.fail(f"DynamoDB Local must run in CI: {e}")
        pytest.skip(f"DynamoDB Local unavailable: {e}")
    yield server
    server.stop()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Fails the session when an operation answered a status it does not document
    (tests/contract_api/observed.py); a question for the document only when answers
    were counted."""
    # Here, not at the top: a session of unit tests that answered nothing loads no app.
    from tests.contract_api import observed
    from tests.contract_api.documents import both_modes

    answers = observed.observed()
    missing = observed.undocumented(answers, both_modes().values()) if answers else []
    if missing:
        session.config.stash[UNDOCUMENTED] = missing
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    missing = terminalreporter.config.stash.get(UNDOCUMENTED, [])
    if missing:
        terminalreporter.section("statuses answered but not documented", red=True)
        for answer in missing:
            terminalreporter.write_line(answer)
        terminalreporter.write_line(
            "Document each with errors(...) where the route is declared, or make the route "
            "not answer it (docs/api-contract.md)."
        )

import os
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from moto.server import ThreadedMotoServer

from api.kit.clock import FrozenClock
from api.store.dynamodb_local import DynamoDBLocal, DynamoDBLocalUnavailable, install
from tests.compiled_routes import reuse
from tests.fakes.llm_servers import FakeLLM, start_fake_anthropic, start_fake_openai
from tests.parallel import (
    free_port,
    one_at_a_time,
    shared_by_workers,
    stop_left_over,
    terminate,
)
from tests.schedule import longest_first

# boto3 must never reach a real AWS account from a test.
os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.pop("AWS_PROFILE", None)

reuse()  # compiled routes, from one app to the next (tests/compiled_routes.py)

DYNAMODB_LOCAL = "dynamodb-local"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
UNDOCUMENTED = pytest.StashKey[list[str]]()
CASES = pytest.StashKey[Counter[str]]()
# What pytest-xdist's workers counted, handed to the controller as each one ends.
FROM_WORKERS = pytest.StashKey[list[dict[str, Any]]]()


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
def dynamodb_local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DynamoDBLocal]:
    """One DynamoDB Local for the whole run, shared by pytest-xdist's workers: a JVM each
    would cost each its start and warm-up (every table a test makes has a name of its own
    anyway). In CI it must run: never skipped there."""
    started: list[DynamoDBLocal] = []

    def start(workdir: Path) -> tuple[int, str]:
        server = DynamoDBLocal(port=free_port()).start(workdir=workdir)
        started.append(server)  # this process's child: stopped, and reaped, by it if last
        assert server.process is not None
        return server.process.pid, server.endpoint

    def stop(pid: int) -> None:
        mine = [s for s in started if s.process is not None and s.process.pid == pid]
        for server in mine:
            server.stop()
        if not mine:
            terminate(pid)

    try:
        with one_at_a_time(tmp_path_factory, "dynamodb-local-install"):
            install()  # by the first worker to need it; the others find it installed
        with shared_by_workers(tmp_path_factory, DYNAMODB_LOCAL, start, stop) as endpoint:
            yield DynamoDBLocal(port=int(endpoint.rsplit(":", 1)[1]))
    except DynamoDBLocalUnavailable as e:
        if IN_CI:
            pytest.fail(f"DynamoDB Local must run in CI: {e}")
        pytest.skip(f"DynamoDB Local unavailable: {e}")


@pytest.fixture(scope="session")
def moto_server() -> Iterator[str]:
    """moto as a server on 127.0.0.1, its endpoint: one for the run, or for each pytest-xdist
    worker (every table a test makes has a name of its own). The DynamoDB adapter sends its
    own HTTP requests, which moto's in-process patching of botocore would never see."""
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


def pytest_configure(config: pytest.Config) -> None:
    # pytest-xdist takes the files in the order collected, which tests/schedule.py sets.
    config.option.loadscopereorder = False


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    longest_first(items)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """pytest-xdist's, in its controller: a worker ended (one that crashed counted nothing)."""
    node.config.stash.setdefault(FROM_WORKERS, []).append(getattr(node, "workeroutput", {}))


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Fails the session when an operation answered a status it does not document
    (tests/contract_api/observed.py); a question for the document only when answers
    were counted. Under pytest-xdist the tests run in workers: each hands what it counted
    to the controller, which asks for all of them (and has the terminal to say it)."""
    # Here, not at the top: a session of unit tests that answered nothing loads no app.
    from tests.contract_api import observed

    config = session.config
    answers = Counter(observed.observed())
    cases = Counter(observed.TALLY)
    if hasattr(config, "workeroutput"):  # this process is a worker
        config.workeroutput["answers"] = [[*answer, n] for answer, n in answers.items()]
        config.workeroutput["cases"] = dict(cases)
        return
    if config.getoption("dist", "no") != "no":  # every worker has ended: none stops it now
        root = config._tmp_path_factory.getbasetemp()  # type: ignore[attr-defined]
        stop_left_over(root, DYNAMODB_LOCAL)
    for counted in config.stash.get(FROM_WORKERS, []):
        for method, route, status, n in counted.get("answers", []):
            answers[(method, route, status)] += n
        cases.update(counted.get("cases", {}))
    config.stash[CASES] = cases
    if answers:
        from tests.contract_api.documents import both_modes

        missing = observed.undocumented(answers, both_modes().values())
    else:
        missing = []
    if missing:
        config.stash[UNDOCUMENTED] = missing
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    cases = terminalreporter.config.stash.get(CASES, Counter())
    if cases:  # the conformance run in one line, as CI shows it: operations, cases, statuses
        operations = {key.rsplit(" ", 1)[0] for key in cases}
        statuses: Counter[str] = Counter()
        for key, count in cases.items():
            statuses[key.rsplit(" ", 1)[1]] += count
        by_status = ", ".join(f"{status}: {statuses[status]}" for status in sorted(statuses))
        terminalreporter.write_line(
            f"contract: {len(operations)} operations, {sum(cases.values())} cases answered "
            f"and checked ({by_status})"
        )
    missing = terminalreporter.config.stash.get(UNDOCUMENTED, [])
    if missing:
        terminalreporter.section("statuses answered but not documented", red=True)
        for answer in missing:
            terminalreporter.write_line(answer)
        terminalreporter.write_line(
            "Document each with errors(...) where the route is declared, or make the route "
            "not answer it (docs/api-contract.md)."
        )

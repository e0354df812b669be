"""POST /context through kept-alive `http.client` connections (client/fast_http.py): taken
when no proxy applies, left to httpx2 when one does; closed and broken connections; many
threads at once; and the same errors as through httpx2. Against the real server process,
and against a raw-socket server (tests/client/raw_server.py) for what uvicorn will not do
on demand."""

import socket
import threading
from collections.abc import Callable, Iterator

import httpx2
import pytest
from openai import OpenAI

from client import MemoryServerError, MemoryServerUnavailable, learning
from client.fast_http import direct_route
from client.server import MemoryServer as Client
from tests.client.conftest import ask
from tests.client.raw_server import Reply, Seen, memory_like, raw_server
from tests.client.server_process import MemoryServer
from tests.fakes.llm_servers import FakeLLM

PROXY_VARIABLES = ["http_proxy", "https_proxy", "all_proxy", "no_proxy"]
TLS = httpx2.create_ssl_context()
URLS = [
    "http://127.0.0.1:8283",
    "http://localhost:8283",
    "http://[::1]:8283",
    "http://a.example.com",
    "http://example.com/memory",
    "http://10.1.2.3",
]


@pytest.fixture(autouse=True)
def no_proxy_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sets the proxy variables it wants; the machine's own are left out."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


@pytest.fixture
def client_of() -> Iterator[list[Client]]:
    made: list[Client] = []
    yield made
    for client in made:
        client.close()


def connect(
    url: str, made: list[Client], *, key: str | None = None, timeout: float = 5.0
) -> Client:
    client = Client(url, api_key=key, timeout=timeout)
    made.append(client)
    return client


def through_httpx2(client: Client) -> Client:
    """The same client with POST /context sent as before the fast path existed."""
    assert client.fast is not None
    client.fast.close()
    client.fast = None
    return client


def test_without_a_proxy_the_fetch_reuses_one_kept_alive_connection(
    server: MemoryServer, agent: str, client_of: list[Client]
) -> None:
    client = connect(server.url, client_of)
    client.ensure_agent(agent)
    client.add_message(agent, "user", "My cat is called Pixel.", {})

    answers = [client.context(agent, "What is my cat called?") for _ in range(5)]

    assert client.fast is not None
    assert client.fast.opened == 1
    for answer in answers:
        contents = [m["content"] for m in answer["relevant_messages"]]
        assert "My cat is called Pixel." in contents
        assert isinstance(answer["memory_blocks"], list)


def test_the_fetch_sends_the_clients_headers_and_a_json_body(client_of: list[Client]) -> None:
    with raw_server() as raw:
        client = connect(raw.url + "/", client_of, key="amk_secret")
        assert client.context("my agent/1", "Hello é") == {
            "memory_blocks": [],
            "relevant_messages": [],
            "query": "Hello é",
        }
        (seen,) = raw.requests_to("/context/")

    assert (seen.method, seen.target) == ("POST", "/context/my%20agent%2F1")
    assert seen.headers["authorization"] == "Bearer amk_secret"
    assert seen.headers["user-agent"].startswith("agent-memory-client/")
    assert seen.headers["content-type"] == "application/json"
    assert seen.headers["content-length"] == str(len(seen.body))
    assert seen.json() == {"agent_name": "my agent/1", "query": "Hello é"}


def test_a_base_url_with_a_path_keeps_it(client_of: list[Client]) -> None:
    with raw_server() as raw:
        client = connect(raw.url + "/memory/", client_of)
        client.context("a", "q")
        (seen,) = raw.requests_to("/memory/context/")
    assert seen.target == "/memory/context/a"


@pytest.mark.parametrize(
    ("base", "target"),
    [("/mémoire/", "/m%C3%A9moire/context/a"), ("/my memory", "/my%20memory/context/a")],
)
def test_a_base_path_to_escape_is_sent_escaped_as_through_httpx2(
    base: str, target: str, client_of: list[Client]
) -> None:
    with raw_server() as raw:
        fast = connect(raw.url + base, client_of)
        slow = through_httpx2(connect(raw.url + base, client_of))
        assert fast.context("a", "q") == slow.context("a", "q")
        seen = raw.requests_to("/")
    assert [s.target for s in seen] == [target, target]


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "http_proxy", "ALL_PROXY"])
def test_a_proxy_in_the_environment_gets_the_fetch_through_httpx2(
    variable: str, client_of: list[Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    with raw_server() as proxy:
        monkeypatch.setenv(variable, proxy.url)
        target = "http://memory.invalid:8283"  # resolvable only by the proxy
        client = connect(target, client_of)
        assert client.fast is None
        assert client.context("a", "Through the proxy?")["query"] == "Through the proxy?"
        (seen,) = proxy.requests_to("/context/")
    assert seen.target == f"{target}/context/a"  # a proxy's absolute form


@pytest.mark.parametrize(
    ("no_proxy", "direct"),
    [("127.0.0.1", True), ("localhost, 127.0.0.1 ", True), ("*", True), (".example.com", False)],
)
def test_no_proxy_naming_the_host_keeps_the_fetch_direct(
    no_proxy: str, direct: bool, client_of: list[Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    with raw_server() as proxy, raw_server() as memory:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("NO_PROXY", no_proxy)
        client = connect(memory.url, client_of)
        client.context("a", "Direct?")
        assert (client.fast is not None) is direct
        assert len(memory.requests_to("/context/")) == (1 if direct else 0)
        assert len(proxy.requests_to("/context/")) == (0 if direct else 1)


def test_an_https_proxy_alone_leaves_an_http_url_direct(
    client_of: list[Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    with raw_server() as proxy, raw_server() as memory:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        client = connect(memory.url, client_of)
        client.context("a", "Direct?")
        assert client.fast is not None
        assert (len(memory.seen), len(proxy.seen)) == (1, 0)


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "all_proxy"])
@pytest.mark.parametrize(
    "no_proxy",
    [
        None,
        "127.0.0.1",
        "LOCALHOST",
        "::1",
        "[::1]",
        "*",
        "example.com",
        ".example.com",
        "*.example.com",
        "10.0.0.0/8",
        "127.0.0.1:8283",
        "http://127.0.0.1",
        " x , 127.0.0.1",
    ],
)
def test_the_fast_path_is_taken_only_where_httpx2_would_go_direct(
    variable: str, no_proxy: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rule never takes a request past a proxy httpx2 would use (asked through
    httpx2's own lookup of a URL's transport, private: this test is its only reader)."""
    monkeypatch.setenv(variable, "http://proxy.invalid:3128")
    if no_proxy is not None:
        monkeypatch.setenv("NO_PROXY", no_proxy)
    for url in URLS:
        # One TLS context for them all: making one per client (and per proxy it mounts)
        # was most of this test's time, and has no part in the routing asked.
        with httpx2.Client(base_url=url, verify=TLS) as reference:
            httpx2_direct = reference._transport_for_url(httpx2.URL(url)) is reference._transport
        if direct_route(url) is not None:
            assert httpx2_direct, (url, no_proxy)
    expected = no_proxy is not None and no_proxy.strip() in ("127.0.0.1", "*", "x , 127.0.0.1")
    assert (direct_route("http://127.0.0.1:8283") is not None) is expected


def test_https_and_credentials_in_the_url_stay_on_httpx2(client_of: list[Client]) -> None:
    assert connect("https://127.0.0.1:9", client_of).fast is None
    assert connect("http://user:pw@127.0.0.1:9", client_of).fast is None


# --- connections the server closed ---------------------------------------------------------


def test_a_connection_closed_after_each_answer_is_never_reused(client_of: list[Client]) -> None:
    """The server closes each connection after its answer, without `Connection: close`:
    the idle connection is seen closed before it is used."""
    with raw_server(close_after_each=True) as raw:
        client = connect(raw.url, client_of)
        answers = [client.context("a", f"Question {n}")["query"] for n in range(5)]
        assert client.fast is not None
        assert client.fast.opened == 5
        assert raw.connections == 5
        assert len(raw.requests_to("/context/")) == 5
    assert answers == [f"Question {n}" for n in range(5)]


def test_a_kept_alive_connection_dropped_on_the_next_request_is_retried_once(
    client_of: list[Client],
) -> None:
    """The server keeps each connection open after its answer but drops it, unanswered,
    when the next request arrives on it (as when its idle timeout strikes just then)."""

    def drop_second(seen: Seen) -> Reply | None:
        return memory_like(seen) if seen.nth == 1 else None

    with raw_server(drop_second) as raw:
        client = connect(raw.url, client_of)
        answers = [client.context("a", f"Question {n}")["query"] for n in range(4)]
        assert client.fast is not None
        assert client.fast.opened == 4
        # Each call after the first: once on the old connection, dropped; once on a new one.
        assert len(raw.requests_to("/context/")) == 1 + 3 * 2
    assert answers == [f"Question {n}" for n in range(4)]


def test_a_new_connection_dropped_mid_request_is_not_retried(client_of: list[Client]) -> None:
    with raw_server(drop_context) as raw:
        client = connect(raw.url, client_of)
        with pytest.raises(MemoryServerUnavailable) as dropped:
            client.context("a", "Anyone?")
        assert len(raw.requests_to("/context/")) == 1
    assert str(dropped.value).startswith(f"Cannot reach the memory server at {raw.url} (")
    assert dropped.value.status is None


def test_an_answer_that_is_not_http_is_unavailable(client_of: list[Client]) -> None:
    def garbage(seen: Seen) -> Reply | None:
        return (0, b"SSH-2.0-OpenSSH_9.6\r\n") if seen.path.startswith("/context/") else None

    with raw_server(garbage) as raw:
        client = connect(raw.url, client_of)
        with pytest.raises(MemoryServerUnavailable) as garbled:
            client.context("a", "Anyone?")
        assert len(raw.requests_to("/context/")) == 1
    assert str(garbled.value).startswith(f"Cannot reach the memory server at {raw.url} (")
    assert "BadStatusLine" in str(garbled.value)
    assert garbled.value.status is None


def drop_context(seen: Seen) -> Reply | None:
    return None if seen.path.startswith("/context/") else memory_like(seen)


def garble_context(seen: Seen) -> Reply | None:
    return (0, b"garbage\r\n\r\n") if seen.path.startswith("/context/") else memory_like(seen)


@pytest.mark.parametrize("respond", [drop_context, garble_context])
def test_a_fetch_dropped_or_garbled_during_a_call_is_a_counted_context_failure(
    respond: Callable[[Seen], Reply | None], agent: str, oai: OpenAI, fake_openai: FakeLLM
) -> None:
    with raw_server(respond) as raw, learning(agent, server_url=raw.url) as memory:
        answer = oai.chat.completions.create(model="m", messages=ask("Still answered?"))
        memory.flush()

    assert answer.choices[0].message.content
    assert memory.context_failures == 1
    assert "the call went on without memory" in memory.errors[0]
    assert len(raw.requests_to("/context/")) == 1
    assert fake_openai.requests[-1]["messages"] == [{"role": "user", "content": "Still answered?"}]


def test_nothing_listening_is_unavailable(client_of: list[Client]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"  # bound, not listening: refused
        client = connect(url, client_of)
        with pytest.raises(MemoryServerUnavailable) as refused:
            client.context("a", "Anyone?")
    assert str(refused.value).startswith(f"Cannot reach the memory server at {url} (")
    assert "ConnectionRefusedError" in str(refused.value)


def test_a_server_that_does_not_answer_times_out_once(client_of: list[Client]) -> None:
    release = threading.Event()

    def stall(seen: Seen) -> Reply | None:
        release.wait(10)
        return memory_like(seen)

    with raw_server(stall) as raw:
        client = connect(raw.url, client_of, timeout=0.3)
        try:
            with pytest.raises(MemoryServerUnavailable) as late:
                client.context("a", "Slow?")
        finally:
            release.set()
        assert len(raw.requests_to("/context/")) == 1  # a timeout is not sent again
    assert "timed out" in str(late.value)


def test_close_closes_the_kept_alive_connections(client_of: list[Client]) -> None:
    with raw_server() as raw:
        client = connect(raw.url, client_of)
        client.context("a", "q")
        assert raw.open == 1
        client.close()
        assert raw.wait_until_all_closed() == 0


def test_a_fetch_given_up_before_its_answer_closes_its_connection(
    client_of: list[Client],
) -> None:
    """A fetch sent and then given up (the call failed before it needed the memory): its
    answer, still coming, must never be read as the next fetch's."""
    with raw_server() as raw:
        client = connect(raw.url, client_of)
        client.start_context("a", "Given up").cancel()
        assert client.context("a", "Wanted")["query"] == "Wanted"
        assert client.fast is not None
        assert client.fast.opened == 2
        assert raw.connections == 2


def test_a_fetchs_answer_is_read_once(client_of: list[Client]) -> None:
    with raw_server() as raw:
        client = connect(raw.url, client_of)
        assert client.fast is not None
        sent = client.fast.send("/context/a", b'{"agent_name":"a","query":"q"}')
        assert sent.answer().status == 200
        with pytest.raises(RuntimeError, match="read or dropped already"):
            sent.answer()
        sent.drop()  # nothing left to close: the connection went back to the pool
        assert client.context("a", "again")["query"] == "again"
        assert client.fast.opened == 1


# --- threads ---------------------------------------------------------------------------------


def test_fetches_from_many_threads_each_get_their_own_answer(client_of: list[Client]) -> None:
    threads, calls = 8, 25
    start = threading.Barrier(threads)
    wrong: list[object] = []

    with raw_server() as raw:
        client = connect(raw.url, client_of)

        def fetch(who: int) -> None:
            start.wait(timeout=10)
            for n in range(calls):
                try:
                    got = client.context("a", f"{who}-{n}")["query"]
                except Exception as e:
                    got = e
                if got != f"{who}-{n}":
                    wrong.append(got)

        running = [threading.Thread(target=fetch, args=(who,)) for who in range(threads)]
        for thread in running:
            thread.start()
        for thread in running:
            thread.join(timeout=60)
        assert client.fast is not None
        assert 1 <= client.fast.opened <= threads
        assert len(raw.requests_to("/context/")) == threads * calls
    assert wrong == []


def test_agents_fetched_from_threads_against_the_real_server_never_mix(
    server: MemoryServer, agent: str, client_of: list[Client]
) -> None:
    client = connect(server.url, client_of)
    names = [f"{agent}-{n}" for n in range(4)]
    for name in names:
        client.ensure_agent(name)
        client.add_message(name, "user", f"My badge says {name}.", {})
    mixed: list[object] = []

    def fetch(name: str) -> None:
        for _ in range(10):
            try:
                answer = client.context(name, "What does my badge say?")
                found = [m["content"] for m in answer["relevant_messages"]]
            except Exception as e:
                found = [repr(e)]
            if found != [f"My badge says {name}."]:
                mixed.append((name, found))

    running = [threading.Thread(target=fetch, args=(name,)) for name in names]
    for thread in running:
        thread.start()
    for thread in running:
        thread.join(timeout=60)
    assert mixed == []


# --- the same errors as through httpx2 -------------------------------------------------------


def test_an_unknown_agent_is_refused_as_through_httpx2(
    server: MemoryServer, agent: str, client_of: list[Client]
) -> None:
    fast = connect(server.url, client_of)
    slow = through_httpx2(connect(server.url, client_of))
    errors = []
    for client in (fast, slow):
        with pytest.raises(MemoryServerError) as refused:
            client.context(agent, "Who?")
        errors.append(refused.value)

    assert [(e.status, e.code, str(e)) for e in errors] == [
        (errors[1].status, errors[1].code, str(errors[1]))
    ] * 2
    assert errors[0].status == 404
    assert str(errors[0]).startswith(f"The memory server at {server.url} refused POST /context/")


@pytest.mark.parametrize(
    ("status", "value", "expected"),
    [
        (
            401,
            {"code": "invalid_api_key", "message": "Unknown key."},
            "401 invalid_api_key: Unknown key.",
        ),
        (500, b"Internal Server Error", "500: Internal Server Error"),
        (503, b"", "503: Answer"),
    ],
)
def test_refusals_read_the_same_as_through_httpx2(
    status: int, value: object, expected: str, client_of: list[Client]
) -> None:
    with raw_server(lambda seen: (status, value)) as raw:
        fast = connect(raw.url, client_of, key="amk_wrong")
        slow = through_httpx2(connect(raw.url, client_of, key="amk_wrong"))
        errors = []
        for client in (fast, slow):
            with pytest.raises(MemoryServerError) as refused:
                client.context("a", "q")
            errors.append(refused.value)

    assert str(errors[0]) == str(errors[1])
    assert (errors[0].status, errors[0].code) == (errors[1].status, errors[1].code)
    assert f"refused POST /context/a: {expected}" in str(errors[0])
    assert ("MEMORY_API_KEY" in str(errors[0])) is (status == 401)
    assert not isinstance(errors[0], MemoryServerUnavailable)

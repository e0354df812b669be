"""Tenants are sealed off: every route of the app, called with another tenant's ids, is a 404.

ROUTES lists every route and how it is checked. A route that is not listed fails
`test_every_route_is_covered`, so a new route cannot ship without its tenancy check: add a
Probe (how the other tenant creates the object, and the path that names it) or say why the
route names nothing of another tenant.
"""

import itertools
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from starlette.routing import BaseRoute, Mount, Route, WebSocketRoute

from api.kit.clock import FrozenClock
from api.main import create_app
from tests.auth.conftest import access_token, as_user, bearer, browser, google_mode, sign_in
from tests.fakes.oidc import FakeGoogle, start_fake_google


@dataclass(frozen=True)
class Tenant:
    client: TestClient
    headers: dict[str, str]


@dataclass(frozen=True)
class Probe:
    """`create` makes an object as the owner and returns the path parameters naming it."""

    create: Callable[[Tenant], dict[str, str]]
    body: dict[str, Any] = field(default_factory=dict)
    owner_succeeds: bool = True  # False where the owner's call needs the outside world
    query: str = ""  # may name the owner's ids, like the path: "?agent_id={agent_id}"
    body_names_ids: bool = False  # the body's string values name the owner's ids


PUBLIC = "public: answers without a user and names no tenant's object"
SELF = "self: acts on the caller only; the path names no object"


def api_key(owner: Tenant) -> dict[str, str]:
    created = owner.client.post("/auth/api-keys", json={"name": "owned"}, headers=owner.headers)
    assert created.status_code == 201
    return {"key_id": created.json()["id"]}


def provider_settings(owner: Tenant) -> dict[str, str]:
    saved = owner.client.put(
        "/settings/providers/openai",
        json={"api_key": "sk-owner-secret-123456"},
        headers=owner.headers,
    )
    assert saved.status_code == 200, saved.text
    return {"provider": "openai"}


def agent(owner: Tenant) -> dict[str, str]:
    created = owner.client.post("/agents", json={"name": "Owned"}, headers=owner.headers)
    assert created.status_code == 201, created.text
    return {"agent_id": created.json()["id"]}


def block(owner: Tenant) -> dict[str, str]:
    ids = agent(owner)
    created = owner.client.post(
        f"/agents/{ids['agent_id']}/memory/blocks", json={"name": "notes"}, headers=owner.headers
    )
    assert created.status_code == 201, created.text
    return {**ids, "block": "notes"}


def block_line(owner: Tenant) -> dict[str, str]:
    ids = block(owner)
    added = owner.client.post(
        f"/agents/{ids['agent_id']}/memory/blocks/notes/lines",
        json={"content": "Owner's line"},
        headers=owner.headers,
    )
    assert added.status_code == 201, added.text
    return {**ids, "line_number": "1"}


def archival_memory(owner: Tenant) -> dict[str, str]:
    ids = agent(owner)
    created = owner.client.post(
        f"/agents/{ids['agent_id']}/memory/archival",
        json={"content": "Owner's secret fact."},
        headers=owner.headers,
    )
    assert created.status_code == 201, created.text
    return {**ids, "memory_id": created.json()["id"]}


def deleted_archival_memory(owner: Tenant) -> dict[str, str]:
    """A memory deleted within its undo window: the owner can restore it."""
    ids = archival_memory(owner)
    deleted = owner.client.delete(
        f"/agents/{ids['agent_id']}/memory/archival/{ids['memory_id']}", headers=owner.headers
    )
    assert deleted.status_code == 204, deleted.text
    return ids


def replaced_archival_memory(owner: Tenant) -> dict[str, str]:
    """A memory and the one that can replace it."""
    ids = archival_memory(owner)
    created = owner.client.post(
        f"/agents/{ids['agent_id']}/memory/archival",
        json={"content": "Owner's newer secret fact."},
        headers=owner.headers,
    )
    assert created.status_code == 201, created.text
    return {**ids, "by": created.json()["id"]}


def document(owner: Tenant) -> dict[str, str]:
    ids = agent(owner)
    sent = owner.client.post(
        f"/agents/{ids['agent_id']}/documents",
        files={"file": ("secret.txt", b"Owner's secret document.", "text/plain")},
        headers=owner.headers,
    )
    assert sent.status_code == 202, sent.text
    return {**ids, "document_id": sent.json()["id"]}


def run(owner: Tenant) -> dict[str, str]:
    """A turn that used one of the owner's archival memories (its run names it)."""
    ids = archival_memory(owner)
    turn = owner.client.post(
        "/chat",
        json={
            "agent_id": ids["agent_id"],
            "prompt": "What do you remember about the secret?",
            "stream": False,
        },
        headers=owner.headers,
    )
    assert turn.status_code == 200, turn.text
    return {"run_id": turn.headers["Run-Id"], "memory_id": ids["memory_id"]}


def conversation(owner: Tenant) -> dict[str, str]:
    ids = agent(owner)
    created = owner.client.post(
        "/conversations", json={"agent_id": ids["agent_id"]}, headers=owner.headers
    )
    assert created.status_code == 201, created.text
    return {**ids, "conversation_id": created.json()["id"]}


# Seed 002's routes name an agent by its name: the other tenant has no agent of that name.
def named_agent(owner: Tenant) -> dict[str, str]:
    return {**agent(owner), "agent_name": "Owned"}


def named_message(owner: Tenant) -> dict[str, str]:
    ids = named_agent(owner)
    body = {"agent_name": "Owned", "role": "user", "content": "Owner's secret message"}
    stored = owner.client.post("/messages", json=body, headers=owner.headers)
    assert stored.status_code == 201, stored.text
    return ids


def named_block(owner: Tenant) -> dict[str, str]:
    ids = named_agent(owner)
    body = {"agent_name": "Owned", "label": "notes", "value": "Owner's secret"}
    created = owner.client.post("/memory-blocks", json=body, headers=owner.headers)
    assert created.status_code == 201, created.text
    return {**ids, "label": "notes"}


# Seed 004 names a subject by the caller's own `user_id`: the other tenant has none of that name.
def subject(owner: Tenant) -> dict[str, str]:
    made = owner.client.post(
        "/memory/initialize",
        json={"user_id": "customer_123", "user_info": "Owner's secret"},
        headers=owner.headers,
    )
    assert made.status_code == 200, made.text
    return {"user_id": "customer_123"}


def subject_memory(owner: Tenant) -> dict[str, str]:
    ids = subject(owner)
    body = {"user_id": "customer_123", "messages": [{"role": "user", "content": "Owner's secret"}]}
    added = owner.client.post("/memory/add", json=body, headers=owner.headers)
    assert added.status_code == 200, added.text
    return {**ids, "run_id": added.json()["run_id"]}


ROUTES: dict[tuple[str, str], str | Probe] = {
    ("GET", "/health"): PUBLIC,
    ("GET", "/health/ready"): PUBLIC,
    ("GET", "/metrics"): PUBLIC + " (METRICS: loopback peers or a bearer token, no user)",
    ("GET", "/.well-known/oauth-protected-resource/mcp"): PUBLIC + " (RFC 9728 metadata)",
    # MCP's JSON-RPC names its objects in the body; tests/mcp/test_auth.py calls every
    # agent and subject tool with another tenant's ids, over a real server.
    ("POST", "/mcp"): "mcp: tools act in the caller's tenant (tests/mcp/test_auth.py)",
    ("GET", "/auth/google/login"): PUBLIC,
    ("GET", "/auth/google/callback"): PUBLIC,
    ("POST", "/auth/refresh"): SELF,
    ("POST", "/auth/logout"): SELF,
    ("POST", "/auth/api-keys"): SELF,
    ("GET", "/auth/api-keys"): SELF,
    ("GET", "/users/me"): SELF,
    ("DELETE", "/auth/api-keys/{key_id}"): Probe(api_key),
    ("GET", "/settings/providers/schema"): PUBLIC,
    ("GET", "/settings/providers"): SELF,
    ("PUT", "/settings/providers/{provider}"): SELF + " (a provider name, not an id)",
    ("GET", "/settings/providers/{provider}"): Probe(provider_settings),
    ("DELETE", "/settings/providers/{provider}"): Probe(provider_settings),
    ("POST", "/settings/providers/{provider}/test"): Probe(provider_settings, owner_succeeds=False),
    ("GET", "/agents/schema"): SELF,
    # A provider name, read in the caller's settings: another's is not configured here.
    ("GET", "/agents/schema/models/{provider}"): Probe(provider_settings),
    ("POST", "/agents"): SELF + " (a name is resolved inside the caller's own agents)",
    ("GET", "/agents"): SELF,
    ("GET", "/agents/{agent_id}"): Probe(agent),
    ("PATCH", "/agents/{agent_id}"): Probe(agent, body={"persona": "taken over"}),
    ("DELETE", "/agents/{agent_id}"): Probe(agent),
    ("GET", "/agents/{agent_id}/memory/schema"): Probe(agent),
    ("GET", "/agents/{agent_id}/context"): Probe(
        conversation, query="?session_id={conversation_id}&prompt=secret"
    ),
    ("GET", "/agents/{agent_id}/memory/blocks"): Probe(agent),
    ("POST", "/agents/{agent_id}/memory/blocks"): Probe(agent, body={"name": "planted"}),
    ("GET", "/agents/{agent_id}/memory/blocks/{block}"): Probe(block),
    ("PATCH", "/agents/{agent_id}/memory/blocks/{block}"): Probe(block, body={"lines": ["x"]}),
    ("DELETE", "/agents/{agent_id}/memory/blocks/{block}"): Probe(block),
    ("POST", "/agents/{agent_id}/memory/blocks/{block}/lines"): Probe(
        block, body={"content": "planted"}
    ),
    ("PUT", "/agents/{agent_id}/memory/blocks/{block}/lines/{line_number}"): Probe(
        block_line, body={"content": "taken over"}
    ),
    ("DELETE", "/agents/{agent_id}/memory/blocks/{block}/lines/{line_number}"): Probe(block_line),
    ("GET", "/agents/{agent_id}/memory/blocks/{block}/history"): Probe(block_line),
    ("POST", "/agents/{agent_id}/memory/blocks/{block}/restore"): Probe(
        block_line, body={"version": 1}
    ),
    ("GET", "/agents/{agent_id}/memory/archival"): Probe(agent),
    ("GET", "/agents/{agent_id}/memory/archival/search"): Probe(
        archival_memory, query="?query=secret"
    ),
    ("POST", "/agents/{agent_id}/memory/archival"): Probe(agent, body={"content": "planted"}),
    ("GET", "/agents/{agent_id}/memory/archival/{memory_id}"): Probe(archival_memory),
    ("DELETE", "/agents/{agent_id}/memory/archival/{memory_id}"): Probe(archival_memory),
    ("POST", "/agents/{agent_id}/memory/archival/{memory_id}/restore"): Probe(
        deleted_archival_memory
    ),
    ("POST", "/agents/{agent_id}/memory/archival/{memory_id}/supersede"): Probe(
        replaced_archival_memory, body={"by": "{by}"}, body_names_ids=True
    ),
    ("GET", "/agents/{agent_id}/messages/search"): Probe(agent, query="?q=secret"),
    # Multipart: the other tenant's call is refused for the agent before its body is read;
    # the owner's, with no file, is a 422.
    ("POST", "/agents/{agent_id}/documents"): Probe(agent, owner_succeeds=False),
    ("GET", "/agents/{agent_id}/documents"): Probe(document),
    ("GET", "/agents/{agent_id}/documents/search"): Probe(document, query="?query=secret"),
    ("GET", "/agents/{agent_id}/documents/{document_id}"): Probe(document),
    ("DELETE", "/agents/{agent_id}/documents/{document_id}"): Probe(document),
    ("GET", "/agents/{agent_id}/export"): Probe(archival_memory),
    ("POST", "/agents/import"): SELF + " (lands in the caller's tenant, under ids of its own)",
    ("POST", "/conversations"): Probe(agent, body={"agent_id": "{agent_id}"}, body_names_ids=True),
    ("GET", "/conversations"): Probe(agent, query="?agent_id={agent_id}"),
    ("GET", "/conversations/{conversation_id}"): Probe(conversation),
    ("PATCH", "/conversations/{conversation_id}"): Probe(conversation, body={"title": "x"}),
    ("DELETE", "/conversations/{conversation_id}"): Probe(conversation),
    ("GET", "/conversations/{conversation_id}/messages"): Probe(conversation),
    ("POST", "/conversations/{conversation_id}/messages"): Probe(
        conversation, body={"content": "hello", "stream": False}
    ),
    ("GET", "/runs/{run_id}"): Probe(run),
    ("GET", "/runs/{run_id}/events"): Probe(run),
    ("POST", "/chat"): Probe(
        agent,
        body={"agent_id": "{agent_id}", "prompt": "hello", "stream": False},
        body_names_ids=True,
    ),
    ("POST", "/messages"): Probe(
        named_agent,
        body={"agent_name": "{agent_name}", "role": "user", "content": "planted"},
        body_names_ids=True,
    ),
    ("POST", "/messages/batch"): Probe(
        named_agent,
        body={"agent_name": "{agent_name}", "messages": [{"role": "user", "content": "planted"}]},
        body_names_ids=True,
    ),
    ("GET", "/messages/{agent_name}"): Probe(named_message),
    ("POST", "/messages/search"): Probe(
        named_message, body={"agent_name": "{agent_name}", "query": "secret"}, body_names_ids=True
    ),
    ("POST", "/memory-blocks"): Probe(
        named_agent,
        body={"agent_name": "{agent_name}", "label": "planted", "value": "x"},
        body_names_ids=True,
    ),
    ("GET", "/memory-blocks/{agent_name}"): Probe(named_agent),
    ("GET", "/memory-blocks/{agent_name}/{label}"): Probe(named_block),
    ("PUT", "/memory-blocks/{agent_name}/{label}"): Probe(named_block, body={"value": "taken"}),
    ("POST", "/context/{agent_name}"): Probe(named_message, body={"query": "secret"}),
    ("POST", "/memory/initialize"): SELF + " (a user_id is resolved among the caller's own)",
    ("POST", "/memory/initialize-with-blocks"): SELF + " (likewise)",
    ("POST", "/memory/add"): Probe(
        subject,
        body={"user_id": "{user_id}", "messages": [{"role": "user", "content": "planted"}]},
        body_names_ids=True,
    ),
    ("GET", "/memory/runs/{run_id}"): Probe(subject_memory),
    ("GET", "/memory/context"): Probe(subject_memory, query="?user_id={user_id}&query=secret"),
    ("GET", "/memory/user-context"): Probe(subject, query="?user_id={user_id}"),
    ("GET", "/memory/summary"): Probe(subject, query="?user_id={user_id}"),
    ("GET", "/memory/search"): Probe(subject_memory, query="?user_id={user_id}&query=secret"),
    ("DELETE", "/memory/user/{user_id}"): Probe(subject),
    ("GET", "/memory/agent/{user_id}"): Probe(subject),
    ("GET", "/v1/models"): SELF + " (lists the caller's own agents)",
    # OpenAI's `model` names an agent by id (here) or by name (test_openai_models_...).
    ("POST", "/v1/chat/completions"): Probe(
        agent,
        body={"model": "{agent_id}", "messages": [{"role": "user", "content": "hello"}]},
        body_names_ids=True,
    ),
}


DOCS = {"/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"}


def _walk(routes: list[BaseRoute], prefix: str = "") -> Iterator[tuple[str, str]]:
    for route in routes:
        # FastAPI mounts included routers lazily; each keeps the router it wraps.
        included = getattr(route, "original_router", None)
        if included is not None:
            yield from _walk(included.routes, prefix + route.include_context.prefix)  # type: ignore[attr-defined]
        elif isinstance(route, Mount | WebSocketRoute):
            yield ("MOUNT" if isinstance(route, Mount) else "WS"), prefix + route.path
        elif isinstance(route, Route) and prefix + route.path not in DOCS:
            # As OpenAPI writes it: "{agent_name:path}" is "{agent_name}".
            path = re.sub(r"\{(\w+):\w+\}", r"{\1}", prefix + route.path)
            for method in route.methods or ():
                if method != "HEAD":
                    yield method, path


def app_routes(app: FastAPI) -> set[tuple[str, str]]:
    """Every route the app serves, hidden from the OpenAPI schema or not."""
    routes = set(_walk(app.routes))
    documented = {
        (method.upper(), path)
        for path, operations in app.openapi()["paths"].items()
        for method in operations
    }
    assert documented <= routes, "the route walk misses routes: FastAPI changed its internals"
    return routes


def test_every_route_is_covered(app: FastAPI) -> None:
    routes = app_routes(app)
    missing = routes - set(ROUTES)
    assert not missing, f"routes without a tenancy check: {sorted(missing)}"
    stale = set(ROUTES) - routes
    assert not stale, f"checks for routes that no longer exist: {sorted(stale)}"


@pytest.fixture(scope="module")
def shared_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, FakeGoogle]]:
    """One app for the module's tenancy checks, and its client holding no user's cookies:
    each check signs in two users of its own, so none sees another's objects (an app and
    two lifespans per check were nine tenths of this module's time)."""
    with start_fake_google() as google:
        settings = google_mode(tmp_path_factory.mktemp("tenancy"), google)
        with browser(create_app(settings, clock=FrozenClock(float(int(time.time()))))) as client:
            yield client, google


_pairs = itertools.count()


@pytest.fixture
def tenants(shared_app: tuple[TestClient, FakeGoogle]) -> tuple[Tenant, Tenant]:
    """Two users new to the app, each calling with an access token of their own."""
    client, google = shared_app
    pair = next(_pairs)
    made = []
    for name, sub in (("ada", 1111), ("bob", 2222)):
        as_user(google, f"{sub}-{pair}", f"{name}.{pair}@example.com")
        sign_in(client)
        made.append(Tenant(client, bearer(access_token(client))))
        client.cookies.clear()  # the next calls are the token's alone
    ada, bob = made
    return ada, bob


def error_code(body: dict[str, Any]) -> str:
    """An error's code: ours `{code, message}`, or OpenAI's `{"error": {...}}` under /v1."""
    code: str = body["error"]["code"] if "error" in body else body["code"]
    return code


PROBES = [(key, probe) for key, probe in ROUTES.items() if isinstance(probe, Probe)]


@pytest.mark.parametrize(("route", "probe"), PROBES, ids=[f"{m} {p}" for (m, p), _ in PROBES])
def test_another_tenants_object_is_not_found(
    tenants: tuple[Tenant, Tenant], route: tuple[str, str], probe: Probe
) -> None:
    owner, other = tenants
    method, path = route
    ids = probe.create(owner)
    url = path.format(**ids) + probe.query.format(**ids)
    body = (
        {k: v.format(**ids) if isinstance(v, str) else v for k, v in probe.body.items()}
        if probe.body_names_ids
        else probe.body
    )
    response = other.client.request(method, url, headers=other.headers, json=body or None)
    assert response.status_code == 404, response.text
    assert error_code(response.json())  # a stable code, as for every error
    # And the object is still there for its owner.
    again = owner.client.request(method, url, headers=owner.headers, json=body or None)
    if probe.owner_succeeds:
        assert again.status_code < 400, again.text
    else:
        assert again.status_code != 404, again.text


def test_the_coverage_check_sees_a_new_route_even_hidden(app: FastAPI) -> None:
    @app.get("/uncovered/{thing_id}", include_in_schema=False)
    async def uncovered(thing_id: str) -> None:
        return None

    app.openapi_schema = None  # built lazily and cached; rebuild with the new route
    assert ("GET", "/uncovered/{thing_id}") in app_routes(app) - set(ROUTES)


def test_the_same_agent_name_in_two_tenants_is_two_agents(
    tenants: tuple[Tenant, Tenant],
) -> None:
    ada, bob = tenants
    mine = ada.client.post("/agents", json={"name": "Helper"}, headers=ada.headers)
    theirs = bob.client.post("/agents", json={"name": "Helper"}, headers=bob.headers)
    assert mine.status_code == theirs.status_code == 201
    assert mine.json()["id"] != theirs.json()["id"]
    assert [a["id"] for a in bob.client.get("/agents", headers=bob.headers).json()] == [
        theirs.json()["id"]
    ]


def test_the_same_session_id_in_two_tenants_is_two_sessions(
    tenants: tuple[Tenant, Tenant],
) -> None:
    ada, bob = tenants
    answers = {}
    for tenant, said in ((ada, "I prefer tea"), (bob, "What do I prefer?")):
        agent_id = tenant.client.post(
            "/agents", json={"name": "Helper"}, headers=tenant.headers
        ).json()["id"]
        body = {"agent_id": agent_id, "prompt": said, "session_id": "shared", "stream": False}
        answer = tenant.client.post("/chat", json=body, headers=tenant.headers)
        assert answer.status_code == 200, answer.text
        answers[tenant.headers["Authorization"]] = answer.json()
    mine, theirs = answers.values()
    assert mine["session_id"] == theirs["session_id"] == "shared"
    assert mine["conversation_id"] != theirs["conversation_id"]
    assert theirs["output"].startswith("I don't know that yet.")
    # Neither sees the other's session among their conversations.
    listed = bob.client.get(
        "/conversations", params={"agent_id": theirs["agent_id"]}, headers=bob.headers
    ).json()["conversations"]
    assert [c["id"] for c in listed] == [theirs["conversation_id"]]


def test_an_agent_name_resolves_only_among_the_callers_agents(
    tenants: tuple[Tenant, Tenant],
) -> None:
    """Seed 002 names agents by name: Bob's "Helper" is never Ada's, by id or by name."""
    ada, bob = tenants
    mine = ada.client.post("/agents", json={"name": "Helper"}, headers=ada.headers).json()
    message = {"agent_name": "Helper", "role": "user", "content": "Ada's secret"}
    assert ada.client.post("/messages", json=message, headers=ada.headers).status_code == 201
    not_found = bob.client.get("/agents/Helper", headers=bob.headers)
    assert not_found.status_code == 404
    assert not_found.json()["code"] == "agent_not_found"

    theirs = bob.client.post("/agents", json={"name": "Helper"}, headers=bob.headers).json()
    assert theirs["id"] != mine["id"]
    assert bob.client.get("/agents/helper", headers=bob.headers).json()["id"] == theirs["id"]
    assert bob.client.get(f"/agents/{mine['id']}", headers=bob.headers).status_code == 404
    assert bob.client.get("/messages/Helper", headers=bob.headers).json() == []
    found = bob.client.post(
        "/messages/search", json={"agent_name": "Helper", "query": "secret"}, headers=bob.headers
    )
    assert found.json() == []
    context = bob.client.post("/context/Helper", json={"query": "secret"}, headers=bob.headers)
    assert context.json()["relevant_messages"] == []


def test_openai_models_are_the_callers_agents_by_name_or_id(
    tenants: tuple[Tenant, Tenant],
) -> None:
    """/v1 names agents as OpenAI names models: Bob can neither list nor reach Ada's."""
    ada, bob = tenants
    mine = ada.client.post("/agents", json={"name": "Helper"}, headers=ada.headers).json()
    listed = ada.client.get("/v1/models", headers=ada.headers).json()["data"]
    assert [(m["id"], m["agent_id"]) for m in listed] == [("Helper", mine["id"])]
    assert bob.client.get("/v1/models", headers=bob.headers).json() == {
        "object": "list",
        "data": [],
    }
    for model in ("Helper", mine["id"]):
        body = {"model": model, "messages": [{"role": "user", "content": "Ada's secret?"}]}
        refused = bob.client.post("/v1/chat/completions", json=body, headers=bob.headers)
        assert refused.status_code == 404, refused.text
        assert refused.json()["error"]["code"] == "model_not_found"
        assert model not in listed_ids(bob)
    theirs = bob.client.post("/agents", json={"name": "Helper"}, headers=bob.headers).json()
    body = {"model": "helper", "messages": [{"role": "user", "content": "Who am I?"}]}
    answered = bob.client.post("/v1/chat/completions", json=body, headers=bob.headers)
    assert answered.status_code == 200, answered.text
    run = bob.client.get(f"/runs/{answered.headers['Run-Id']}", headers=bob.headers).json()
    assert run["agent_id"] == theirs["id"]


def test_what_a_turn_used_is_read_by_its_owner_alone(tenants: tuple[Tenant, Tenant]) -> None:
    """A run names the memories its turn used: Bob reads neither the run nor its events,
    and his own turn on the same question uses nothing of Ada's."""
    ada, bob = tenants
    ids = run(ada)
    owned = ada.client.get(f"/runs/{ids['run_id']}", headers=ada.headers)
    assert owned.status_code == 200, owned.text
    items = owned.json()["sources"]["items"]
    assert [(i["kind"], i["id"]) for i in items] == [("archival", ids["memory_id"])]
    for path in (f"/runs/{ids['run_id']}", f"/runs/{ids['run_id']}/events"):
        refused = bob.client.get(path, headers=bob.headers)
        assert refused.status_code == 404, refused.text
        assert refused.json()["code"] == "run_not_found"
        assert ids["memory_id"] not in refused.text
        assert "secret" not in refused.text
    theirs = run(bob)
    used = bob.client.get(f"/runs/{theirs['run_id']}", headers=bob.headers).json()["sources"]
    assert [i["id"] for i in used["items"]] == [theirs["memory_id"]]


def listed_ids(tenant: Tenant) -> list[str]:
    listed = tenant.client.get("/v1/models", headers=tenant.headers).json()["data"]
    return [m["id"] for m in listed] + [m["agent_id"] for m in listed]


def test_two_tenants_customer_123_are_two_subjects(tenants: tuple[Tenant, Tenant]) -> None:
    """Seed 004: Mallory cannot read, add to, search or delete Alice's customer_123; her own
    customer_123 is another subject."""
    alice, mallory = tenants
    subject_memory(alice)
    user = {"user_id": "customer_123"}
    calls = [
        ("GET", "/memory/context?user_id=customer_123&query=secret", None),
        ("GET", "/memory/search?user_id=customer_123&query=secret", None),
        ("POST", "/memory/add", {**user, "messages": [{"role": "user", "content": "planted"}]}),
        ("DELETE", "/memory/user/customer_123", None),
    ]
    for method, url, body in calls:
        refused = mallory.client.request(method, url, json=body, headers=mallory.headers)
        assert refused.status_code == 404, refused.text
        assert refused.json()["success"] is False
        assert refused.json()["code"] == "subject_not_found"
    made = mallory.client.post(
        "/memory/initialize", json={**user, "user_info": "Mallory's"}, headers=mallory.headers
    )
    theirs = alice.client.get("/memory/agent/customer_123", headers=alice.headers).json()
    assert made.json()["agent_id"] != theirs["agent_id"]
    found = mallory.client.get(
        "/memory/search", params={**user, "query": "secret"}, headers=mallory.headers
    )
    assert found.json()["results"] == []
    context = alice.client.get(
        "/memory/context", params={**user, "query": "planted"}, headers=alice.headers
    ).json()
    assert "Owner's secret" in context["combined_context"]
    assert "planted" not in context["combined_context"]
    assert "Mallory" not in context["combined_context"]


def test_a_document_is_found_only_under_its_own_agent(tenants: tuple[Tenant, Tenant]) -> None:
    """Another tenant's document id under one's own agent is no document of it."""
    ada, bob = tenants
    ids = document(ada)
    theirs = agent(bob)["agent_id"]
    for method in ("GET", "DELETE"):
        found = bob.client.request(
            method, f"/agents/{theirs}/documents/{ids['document_id']}", headers=bob.headers
        )
        assert found.status_code == 404, found.text
        assert found.json()["code"] == "document_not_found"
    kept = ada.client.get(
        f"/agents/{ids['agent_id']}/documents/{ids['document_id']}", headers=ada.headers
    )
    assert kept.status_code == 200, kept.text


def test_another_tenants_agent_is_no_specialist(tenants: tuple[Tenant, Tenant]) -> None:
    """An agent names specialists by id: another tenant's agent is refused exactly as an
    id nobody has, when an agent is made and when one is changed."""
    ada, bob = tenants
    hers = agent(ada)["agent_id"]
    mine = agent(bob)["agent_id"]
    answers = []
    for named in (hers, "no-such-agent"):
        made = bob.client.post(
            "/agents", json={"name": "Desk", "specialists": [named]}, headers=bob.headers
        )
        changed = bob.client.patch(
            f"/agents/{mine}", json={"specialists": [named]}, headers=bob.headers
        )
        for response in (made, changed):
            body = response.json()
            answers.append(
                (response.status_code, body["code"], body["message"].replace(named, "X"))
            )
    assert len(set(answers)) == 1, answers
    assert answers[0][:2] == (404, "specialist_not_found")
    assert bob.client.get(f"/agents/{mine}", headers=bob.headers).json()["specialists"] == []

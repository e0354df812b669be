"""Tenants are sealed off: every route of the app, called with another tenant's ids, is a 404.

ROUTES lists every route and how it is checked. A route that is not listed fails
`test_every_route_is_covered`, so a new route cannot ship without its tenancy check: add a
Probe (how the other tenant creates the object, and the path that names it) or say why the
route names nothing of another tenant.
"""

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.auth.conftest import access_token, as_user, bearer, browser, sign_in
from tests.fakes.oidc import FakeGoogle


@dataclass(frozen=True)
class Tenant:
    client: TestClient
    headers: dict[str, str]


@dataclass(frozen=True)
class Probe:
    """`create` makes an object as the owner and returns the path parameters naming it."""

    create: Callable[[Tenant], dict[str, str]]
    body: dict[str, Any] = field(default_factory=dict)


PUBLIC = "public: answers without a user and names no tenant's object"
SELF = "self: acts on the caller only; the path names no object"


def api_key(owner: Tenant) -> dict[str, str]:
    created = owner.client.post("/auth/api-keys", json={"name": "owned"}, headers=owner.headers)
    assert created.status_code == 201
    return {"key_id": created.json()["id"]}


ROUTES: dict[tuple[str, str], str | Probe] = {
    ("GET", "/health"): PUBLIC,
    ("GET", "/auth/google/login"): PUBLIC,
    ("GET", "/auth/google/callback"): PUBLIC,
    ("POST", "/auth/refresh"): SELF,
    ("POST", "/auth/logout"): SELF,
    ("POST", "/auth/api-keys"): SELF,
    ("GET", "/auth/api-keys"): SELF,
    ("GET", "/users/me"): SELF,
    ("DELETE", "/auth/api-keys/{key_id}"): Probe(api_key),
}


def app_routes(app: FastAPI) -> set[tuple[str, str]]:
    """Every operation the app serves, from its OpenAPI description (routers are mounted
    lazily, so the schema is the one complete public list)."""
    return {
        (method.upper(), path)
        for path, operations in app.openapi()["paths"].items()
        for method in operations
    }


def test_every_route_is_covered(app: FastAPI) -> None:
    routes = app_routes(app)
    missing = routes - set(ROUTES)
    assert not missing, f"routes without a tenancy check: {sorted(missing)}"
    stale = set(ROUTES) - routes
    assert not stale, f"checks for routes that no longer exist: {sorted(stale)}"


@pytest.fixture
def tenants(app: FastAPI, google: FakeGoogle) -> Iterator[tuple[Tenant, Tenant]]:
    with browser(app) as ada_browser, browser(app) as bob_browser:
        as_user(google, "1111", "ada@example.com")
        sign_in(ada_browser)
        as_user(google, "2222", "bob@example.com")
        sign_in(bob_browser)
        yield (
            Tenant(ada_browser, bearer(access_token(ada_browser))),
            Tenant(bob_browser, bearer(access_token(bob_browser))),
        )


PROBES = [(key, probe) for key, probe in ROUTES.items() if isinstance(probe, Probe)]


@pytest.mark.parametrize(("route", "probe"), PROBES, ids=[f"{m} {p}" for (m, p), _ in PROBES])
def test_another_tenants_object_is_not_found(
    tenants: tuple[Tenant, Tenant], route: tuple[str, str], probe: Probe
) -> None:
    owner, other = tenants
    method, path = route
    url = path.format(**probe.create(owner))
    response = other.client.request(method, url, headers=other.headers, json=probe.body or None)
    assert response.status_code == 404, response.text
    assert response.json()["code"].endswith("not_found")
    # And the object is still there for its owner.
    again = owner.client.request(method, url, headers=owner.headers, json=probe.body or None)
    assert again.status_code < 400, again.text


def test_the_coverage_check_sees_a_new_route(app: FastAPI) -> None:
    @app.get("/agents/{agent_id}")
    async def uncovered(agent_id: str) -> None:
        return None

    app.openapi_schema = None  # built lazily and cached; rebuild with the new route
    assert ("GET", "/agents/{agent_id}") in app_routes(app) - set(ROUTES)

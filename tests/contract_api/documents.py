"""The OpenAPI documents of the service in both auth modes (google mode adds its sign-in
routes and 401s, local mode its Host/Origin refusals), built without starting the app."""

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fastapi.routing import APIRoute
from starlette.routing import BaseRoute

from api.config import Settings
from api.main import create_app

Document = dict[str, Any]


def _settings(database: Path) -> dict[str, Settings]:
    return {
        "local": Settings(store="sqlite", sqlite_path=database, memory_embedding_backend="none"),
        "google": Settings(
            store="sqlite",
            sqlite_path=database,
            memory_embedding_backend="none",
            auth_mode="google",
            public_url="https://api.example.com",
            jwt_secret="j" * 40,
            encryption_key="e" * 40,
            google_client_id="contract",
            google_client_secret="contract",
            frontend_url="https://app.example.com",
        ),
    }


def both_modes() -> dict[str, Document]:
    with tempfile.TemporaryDirectory(prefix="contract-doc-") as directory:
        return {
            mode: create_app(settings).openapi()
            for mode, settings in _settings(Path(directory) / "doc.db").items()
        }


def api_routes(mode: str) -> list[APIRoute]:
    """Every route of the app in that mode, from inside the routers it includes."""
    with tempfile.TemporaryDirectory(prefix="contract-doc-") as directory:
        app = create_app(_settings(Path(directory) / "doc.db")[mode])

    def inside(routes: list[BaseRoute]) -> Iterator[APIRoute]:
        for route in routes:
            if isinstance(route, APIRoute):
                yield route
            elif hasattr(route, "original_router"):  # an included router's node
                yield from inside(route.original_router.routes)

    return list(inside(app.routes))


def operation_ids(documents: dict[str, Document]) -> list[str]:
    """`METHOD /path operationId`, one per operation of either document, sorted."""
    found = {
        f"{method.upper()} {path} {operation['operationId']}"
        for doc in documents.values()
        for path, methods in doc["paths"].items()
        for method, operation in methods.items()
    }
    return sorted(found)


if __name__ == "__main__":  # python -m tests.contract_api.documents > .../operation_ids.txt
    print("\n".join(operation_ids(both_modes())))

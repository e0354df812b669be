"""The OpenAPI documents of the service in both auth modes (google mode adds its sign-in
routes and 401s, local mode its Host/Origin refusals), built without starting the app."""

import tempfile
from pathlib import Path
from typing import Any

from api.config import Settings
from api.main import create_app

Document = dict[str, Any]


def both_modes() -> dict[str, Document]:
    with tempfile.TemporaryDirectory(prefix="contract-doc-") as directory:
        database = Path(directory) / "doc.db"
        local = Settings(store="sqlite", sqlite_path=database, memory_embedding_backend="none")
        google = Settings(
            store="sqlite",
            sqlite_path=database,
            memory_embedding_backend="none",
            auth_mode="google",
            jwt_secret="j" * 40,
            encryption_key="e" * 40,
            google_client_id="contract",
            google_client_secret="contract",
            frontend_url="https://app.example.com",
        )
        return {"local": create_app(local).openapi(), "google": create_app(google).openapi()}


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

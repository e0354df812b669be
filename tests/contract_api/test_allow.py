"""A 405's `Allow` header lists exactly the methods the OpenAPI document gives its path,
for every path of the document and every method it does not take (OPTIONS included)."""

import re
from typing import Any

from fastapi.testclient import TestClient

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def concrete(path: str) -> str:
    """The path with a value in each parameter (a number where one is expected)."""
    return re.sub(r"{(\w+)}", lambda m: "1" if m.group(1) == "line_number" else "x1", path)


def matcher(path: str) -> re.Pattern[str]:
    return re.compile("^" + re.sub(r"{\w+}", "[^/]+", path) + "$")


def test_every_405_allows_what_the_document_gives_its_path(
    client: TestClient, openapi: dict[str, Any]
) -> None:
    paths: dict[str, Any] = openapi["paths"]
    checked = 0
    for path, operations in paths.items():
        documented = {method.upper() for method in operations}
        url = concrete(path)
        # Another path of the document that takes the method there answers it instead
        # (DELETE /agents/import is DELETE /agents/{agent_id} with agent_id "import").
        elsewhere = {
            method.upper()
            for other, methods in paths.items()
            if other != path and matcher(other).match(url)
            for method in methods
        }
        for method in set(METHODS) - documented - elsewhere:
            response = client.request(method, url)
            assert response.status_code == 405, f"{method} {url}: {response.status_code}"
            allowed = {m.strip() for m in response.headers["allow"].split(",")}
            assert allowed == documented, f"{method} {url}"
            assert response.json()["code"] == "method_not_allowed"
            checked += 1
    assert checked > len(paths)  # OPTIONS at least, on every path

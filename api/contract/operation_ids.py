"""Operation ids: what generated clients name their methods after, so they must be readable
and stay put. An id is the area of the route (the package its endpoint lives in: `agents`,
`memory`, `seed002`, ...) and the endpoint's name, without the words that only repeat the
area: `create_agent` in api/agents is `agents_create`, `search_messages` in api/seed002 is
`seed002_search_messages`. Renaming an endpoint renames its operation, which breaks every
generated client: tests/contract_api/operation_ids.txt pins them (docs/api-contract.md)."""

from fastapi.routing import APIRoute

# Package names that read badly as a client's namespace.
AREAS = {"openai_compat": "openai"}


def operation_id(route: APIRoute) -> str:
    package = route.endpoint.__module__.split(".")
    area = package[1] if len(package) > 2 and package[0] == "api" else package[-1]
    area = AREAS.get(area, area)
    repeats = {area, area.removesuffix("s")}
    words = [word for word in route.endpoint.__name__.split("_") if word not in repeats]
    return "_".join([area, *words])

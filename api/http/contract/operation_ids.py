"""Operation ids: what generated clients name their methods after, so they must be readable
and stay put. Each route declares its own (`operation_id=` on the decorator: the area and
the endpoint's name, `agents_create`, `seed002_search_messages`), so moving a module or
renaming a function renames nothing a client sees: tests/contract_api/operation_ids.txt
pins them (docs/api-contract.md)."""

from fastapi.routing import APIRoute


class OperationIdMissing(RuntimeError):
    pass


def operation_id(route: APIRoute) -> str:
    """FastAPI asks for an id only when a route declares none: a mistake, caught at start."""
    raise OperationIdMissing(
        f"{route.path} ({route.endpoint.__name__}) declares no operation_id: add one, in the "
        "form the others take, and pin it in tests/contract_api/operation_ids.txt"
    )

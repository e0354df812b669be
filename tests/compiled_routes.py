"""FastAPI (0.165) compiles the routes of a router (their dependencies, request and
response models) once for each app that includes it, on the app's first request to them:
3 to 4 ms a route, up to 0.3 s for an app, and the suite builds an app for most tests.
Every `create_app` includes the same module-level routers the same way and no test
overrides a dependency, so what one app compiled serves the next: `reuse()` keeps each
compiled route by route and inclusion for the test process."""

from typing import Any

from fastapi import routing

_compiled: dict[tuple[Any, ...], Any] = {}


def reuse() -> None:
    context_class: Any = routing._EffectiveRouteContext
    compile_route = context_class.from_api_route

    def compiled(*, original_route: Any, include_context: Any) -> Any:
        overrides = getattr(
            include_context.dependency_overrides_provider, "dependency_overrides", None
        )
        if overrides:  # an app with overrides gets its own, as FastAPI would give it
            return compile_route(original_route=original_route, include_context=include_context)
        key = (
            id(original_route),  # routes are not hashable; these live as long as the process
            id(include_context.included_router),
            include_context.prefix,
            include_context.include_in_schema,
            include_context.max_body_size,
        )
        found = _compiled.get(key)
        if found is None:
            found = _compiled[key] = compile_route(
                original_route=original_route, include_context=include_context
            )
        return found

    context_class.from_api_route = staticmethod(compiled)

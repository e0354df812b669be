"""RuntimeDep: the app's one runtime, for routes that run turns."""

from typing import Annotated

from fastapi import Depends, Request

from api.runtime.runner import Runtime


async def get_runtime(request: Request) -> Runtime:
    runtime: Runtime = request.state.runtime
    return runtime


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]

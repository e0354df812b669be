"""MemoryRunnerDep: the process's memory runner (accepting, waiting for and reading runs)."""

from typing import Annotated

from fastapi import Depends, Request

from api.memory_runs.service import MemoryRunner


async def get_memory_runner(request: Request) -> MemoryRunner:
    runner: MemoryRunner = request.state.memory_runs
    return runner


MemoryRunnerDep = Annotated[MemoryRunner, Depends(get_memory_runner)]

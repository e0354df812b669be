"""Which agents an agent may ask (seed 001's multi-agent pattern): its specialists, agents of
the same owner, checked whenever an agent's list is saved. The lists of one owner's agents
form a graph; a save that would make a loop in it, or a chain of specialists deeper than
MAX_DEPTH, is refused, as is an agent naming itself or an agent the owner does not have
(another owner's agent is refused exactly as an unknown one)."""

from collections.abc import Mapping, Sequence

from api.agents.models import Agent
from api.errors import BadRequest, NotFound

MAX_SPECIALISTS = 10
# Specialists of specialists, counted from the agent a person talks to: 3 allows an
# orchestrator, its specialists, theirs, and theirs.
MAX_DEPTH = 3


class SpecialistNotFound(NotFound):
    code = "specialist_not_found"


class SpecialistIsSelf(BadRequest):
    code = "specialist_is_self"


class SpecialistCycle(BadRequest):
    code = "specialist_cycle"


class SpecialistsTooDeep(BadRequest):
    code = "specialists_too_deep"


# What a save of an agent's list answers when it refuses it.
REFUSALS = (SpecialistNotFound, SpecialistIsSelf, SpecialistCycle, SpecialistsTooDeep)


def check(agent_id: str, named: Sequence[str], agents: Sequence[Agent]) -> list[str]:
    """The specialists `agent_id` may have, as saved (each once, in the order given), out
    of `named`; `agents` are all of the owner's (their stored lists). Raises what is wrong."""
    wanted = list(dict.fromkeys(named))
    if agent_id in wanted:
        raise SpecialistIsSelf("An agent cannot be its own specialist.")
    by_id = {a.agent_id: a for a in agents}
    unknown = next((s for s in wanted if s not in by_id), None)
    if unknown is not None:
        raise SpecialistNotFound(f"You have no agent with the id {unknown!r} to be a specialist.")
    graph: dict[str, Sequence[str]] = {a.agent_id: a.specialists for a in agents}
    graph[agent_id] = wanted
    names = {a.agent_id: a.agent_name for a in agents}

    def shown(path: Sequence[str]) -> str:
        return " → ".join(names.get(node, "this agent") for node in path)

    loop = _loop(graph, agent_id)
    if loop is not None:
        raise SpecialistCycle(f"Specialists cannot go round in a loop: {shown(loop)}.")
    deepest = _deepest(graph, agent_id)
    if len(deepest) - 1 > MAX_DEPTH:
        raise SpecialistsTooDeep(
            f"A chain of specialists may be at most {MAX_DEPTH} deep; this one would be "
            f"{len(deepest) - 1}: {shown(deepest)}."
        )
    return wanted


def _loop(graph: Mapping[str, Sequence[str]], start: str) -> list[str] | None:
    """A path from `start` back to an agent already on it, if the graph has one through
    `start` (the only agent whose list changes; the rest had none)."""
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        path.append(node)
        for nxt in graph.get(node, ()):
            found = visit(nxt)
            if found is not None:
                return found
        path.pop()
        return None

    return visit(start)


def _deepest(graph: Mapping[str, Sequence[str]], through: str) -> list[str]:
    """The longest chain of specialists through `through`, looked at no further than one
    past the limit each way (enough to refuse it; and a loop elsewhere, left by two saves
    racing, cannot hold the walk)."""
    callers: dict[str, list[str]] = {}
    for node, named in graph.items():
        for s in named:
            callers.setdefault(s, []).append(node)

    def walk(node: str, step: Mapping[str, Sequence[str]], left: int) -> list[str]:
        if left == 0:
            return [node]
        longest = max((walk(n, step, left - 1) for n in step.get(node, ())), key=len, default=[])
        return [node, *longest]

    down = walk(through, graph, MAX_DEPTH + 1)
    up = walk(through, callers, MAX_DEPTH + 1)
    return [*reversed(up), *down[1:]]

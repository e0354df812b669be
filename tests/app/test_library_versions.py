"""The libraries whose behaviour we rely on beyond what they document stay within the
versions that behaviour was checked on: pyproject.toml bounds each of them (so `uv lock`
cannot move past them unnoticed) and the installed version is inside the bounds.

Moving a bound is a decision: re-check what the library is relied on for (the reason
below, and the tests it names), then change pyproject.toml and RELIED_ON together."""

import tomllib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

PYPROJECT = Path(__file__).parents[2] / "pyproject.toml"


@dataclass(frozen=True)
class Reliance:
    lowest: str  # the version it was checked on
    below: str  # the first version it was not
    why: str


RELIED_ON = {
    "fastapi": Reliance(
        "0.165",
        "0.166",
        "the node of an included router asks its router's `matches`, which `Router` "
        "overrides to skip unrelated requests (api/http/route_filter.py; "
        "tests/app/test_route_filter.py)",
    ),
    "starlette": Reliance(
        "1.10",
        "2",
        "StreamingResponse's constructor (body_iterator, raw_headers), under our own "
        "ASGI sending (api/http/sse.py; tests/runtime/test_sse_stream.py)",
    ),
    "uvicorn": Reliance(
        "0.54",
        "0.55",
        "it sets its SIGINT/SIGTERM handlers with signal.signal in the main thread before "
        "the app's lifespan starts, and puts back what was there after; the lifespan adds "
        "ending the open streams to them (api/http/sse.py; tests/runtime/test_sse_stream.py, "
        "a server told to stop)",
    ),
    "openai": Reliance(
        "3.54.0",
        "4",
        "client.post(cast_to=httpx2.Response, stream=True) hands back the raw response "
        "unread, its errors before the stream raised as for `create`; its aiohttp adapter "
        "raises a refused connection as a ConnectTimeout caused by aiohttp's error "
        "(api/llm/openai.py, api/llm/http.py; tests/llm/test_http_adapters.py)",
    ),
}


def declared() -> dict[str, SpecifierSet]:
    dependencies = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    requirements = [Requirement(line) for line in dependencies]
    return {r.name: r.specifier for r in requirements}


@pytest.mark.parametrize("name", sorted(RELIED_ON))
def test_pyproject_bounds_the_library_to_the_versions_checked(name: str) -> None:
    relied = RELIED_ON[name]
    specifier = declared()[name]
    assert {(s.operator, s.version) for s in specifier} == {
        (">=", relied.lowest),
        ("<", relied.below),
    }, f"{name}: pyproject.toml and RELIED_ON disagree; relied on for {relied.why}"


@pytest.mark.parametrize("name", sorted(RELIED_ON))
def test_the_installed_library_is_within_them(name: str) -> None:
    relied = RELIED_ON[name]
    installed = Version(metadata.version(name))
    assert Version(relied.lowest) <= installed < Version(relied.below), (
        f"{name} {installed} is outside the versions checked for {relied.why}"
    )

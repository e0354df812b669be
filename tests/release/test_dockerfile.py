"""The Dockerfile's shape, read (quick, in every `./dev test`; the release check replays it,
tests/release/test_image.py): three stages, the web app built by Node, the locked
dependencies without dev tools, a runtime of the venv alone, non-root, listening where it
says; and the replay's reading of a Dockerfile."""

import re
from pathlib import Path

import pytest

from tests.release.dockerfile import Unsupported, env_pairs, exec_form, ignored, parse
from tests.release.install import CHECKOUT

DOCKERFILE = (CHECKOUT / "Dockerfile").read_text()


def test_three_stages_node_uv_and_a_slim_runtime() -> None:
    web, build, runtime = parse(DOCKERFILE)
    assert (web.name, build.name, runtime.name) == ("web", "build", "runtime")
    assert web.image.startswith("node:")
    assert build.image == runtime.image == "python:3.11-slim"
    runs = [s.args for s in web.steps if s.instruction == "RUN"]
    assert runs == ["npm ci --no-audit --no-fund", "npm run build"]
    syncs = [s.args for s in build.steps if s.instruction == "RUN" and "uv sync" in s.args]
    assert syncs, "the build stage installs with uv sync"
    for sync in syncs:
        assert {"--frozen", "--no-dev"} <= set(sync.split())  # the lock, no dev tools
    assert "--no-editable" in syncs[-1]  # the server as its wheel: package data included
    copied = [s for s in build.steps if s.instruction == "COPY" and s.flags.get("from") == "web"]
    assert [s.args for s in copied] == ["/web/dist ./web/dist"]


def test_the_runtime_is_the_venv_alone_non_root_with_a_health_check() -> None:
    runtime = parse(DOCKERFILE)[-1]
    copies = [s for s in runtime.steps if s.instruction == "COPY"]
    assert [(s.flags, s.args) for s in copies] == [({"from": "build"}, "/app/.venv /app/.venv")]
    (user,) = [s.args for s in runtime.steps if s.instruction == "USER"]
    assert re.fullmatch(r"[1-9]\d*:[1-9]\d*", user)  # numeric, not root
    env = {k: v for s in runtime.steps if s.instruction == "ENV" for k, v in env_pairs(s.args)}
    assert env["HOST"] == "0.0.0.0"  # noqa: S104 - a published port reaches it
    assert env["ALLOW_REMOTE"] == "true"
    assert env["SQLITE_PATH"].startswith("/data/")
    (volume,) = [exec_form(s.args) for s in runtime.steps if s.instruction == "VOLUME"]
    assert volume == ["/data"]
    (exposed,) = [s.args for s in runtime.steps if s.instruction == "EXPOSE"]
    assert exposed == env["PORT"] == "8283"
    (check,) = [s.args for s in runtime.steps if s.instruction == "HEALTHCHECK"]
    assert re.search(r"os\.environ\.get\('PORT', '8283'\).*/health|/health.*'PORT'", check)
    (command,) = [exec_form(s.args) for s in runtime.steps if s.instruction == "CMD"]
    assert command == ["agent-memory", "serve"]  # HOST and PORT from the environment


def test_the_docs_run_the_image_on_its_port() -> None:
    """Seed 000's `docker run -p 8000:8000` reached nothing: the examples publish 8283."""
    for doc in ("README.md", "docs/install.md"):
        blocks = "".join(re.findall(r"```\n(.*?)```", (CHECKOUT / doc).read_text(), re.DOTALL))
        runs = [line for line in blocks.splitlines() if line.startswith("docker run")]
        assert runs, doc
        for run in runs:
            assert " -p 127.0.0.1:8283:8283 " in run, run


def test_the_reading_of_a_dockerfile() -> None:
    stages = parse(
        "# syntax=docker/dockerfile:1\n"
        "FROM python:3.11-slim AS build\n"
        "ENV A=1 \\\n"
        "    # a comment inside\n"
        '    B="two words"\n'
        "RUN --mount=type=cache,target=/root/.cache/uv \\\n    uv sync --frozen\n"
        "FROM build\n"
        'CMD ["agent-memory", "serve"]\n'
    )
    assert [(s.name, s.image) for s in stages] == [("build", "python:3.11-slim"), ("1", "build")]
    env, run = stages[0].steps
    assert env_pairs(env.args) == [("A", "1"), ("B", "two words")]
    assert run.flags == {"mount": "type=cache,target=/root/.cache/uv"}
    assert run.args == "uv sync --frozen"
    assert exec_form(stages[1].steps[0].args) == ["agent-memory", "serve"]
    with pytest.raises(Unsupported):
        exec_form("agent-memory serve")
    with pytest.raises(Unsupported):
        parse("RUN true\n")


def test_dockerignore_is_followed(tmp_path: Path) -> None:
    (tmp_path / ".dockerignore").write_text("# x\n**/__pycache__\n.venv\nweb/dist\n")
    left_out = ignored(tmp_path)
    assert left_out("api/__pycache__/x.pyc")
    assert left_out("api/store/__pycache__")
    assert left_out(".venv/bin/python")
    assert left_out("web/dist/index.html")
    assert not left_out("api/store/table.py")
    assert not left_out("web/src/pages.json")
    assert ignored(CHECKOUT)("web/node_modules/vite/package.json")

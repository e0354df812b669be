"""The scripts under examples/ run as a user runs them: each a process of its own against
a real server process (local mode, no key), with the project's own Python so nothing is
downloaded here (`uv run examples/...` would build an environment from the script's PEP
723 metadata; the metadata is checked against what this environment has)."""

import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from api.llm.offline import DISCLAIMER
from tests.fakes.llm_servers import Reply, start_fake_openai
from tests.fakes.serving import server_process

EXAMPLES = Path(__file__).parents[2] / "examples"
# PEP 723's reference regular expression for a metadata block.
BLOCK = re.compile(r"(?m)^# /// (?P<type>[a-zA-Z0-9-]+)$\s(?P<content>(^#(| .*)$\s)+)^# ///$")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`agent-memory serve`, as `./dev serve` starts it, on its own SQLite file."""
    db = tmp_path_factory.mktemp("examples") / "examples.db"
    env = {"STORE": "sqlite", "SQLITE_PATH": str(db), "AUTH_MODE": "local"}
    with server_process(env, workers=None, stop_seconds=10) as running:
        yield running.root


def run_example(name: str, server: str, **settings: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "MEMORY_API_KEY"}
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        env={**env, "MEMORY_SERVER_URL": server, **settings},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def script_metadata(path: Path) -> dict[str, object]:
    [block] = [m for m in BLOCK.finditer(path.read_text()) if m.group("type") == "script"]
    content = "".join(
        line[2:] if line.startswith("# ") else line[1:]
        for line in block.group("content").splitlines(keepends=True)
    )
    return tomllib.loads(content)


@pytest.mark.parametrize("name", ["openai_compatible.py", "rest_memory.py", "learning_openai.py"])
def test_the_examples_declare_what_they_need(name: str) -> None:
    """`uv run` reads these; this environment has each, so the tests need no download."""
    found = script_metadata(EXAMPLES / name)
    assert found["requires-python"] == ">=3.11"
    dependencies = found["dependencies"]
    assert isinstance(dependencies, list)
    assert dependencies
    for dependency in dependencies:
        requirement = Requirement(dependency)
        installed = metadata.version(requirement.name)
        assert requirement.specifier.contains(installed), (dependency, installed)


def test_openai_compatible_needs_no_key_and_remembers(server: str) -> None:
    out = run_example("openai_compatible.py", server)
    assert out[0].startswith("agent: openai-example (")
    assert out[1] == "models: openai-example"
    assert out[2:] == [
        "you: My name is Alice and I live in Paris",
        f"agent: Nice to meet you, Alice! I'll remember that (lives in: Paris). {DISCLAIMER}",
        "you: Where do I live?",
        f"agent (streamed): You live in Paris. {DISCLAIMER}",
        "human block: Name: Alice | Lives in: Paris",
    ]


def test_rest_memory_shows_messages_search_blocks_and_context(server: str) -> None:
    out = run_example("rest_memory.py", server)
    assert out[0] == "server: ok, embeddings: onnx"
    assert out[1].startswith("agent: rest-example (")
    assert out[2:5] == [
        "latest messages:",
        "  user: My sister Maya is a violinist in Berlin.",
        "  assistant: Noted: green tea in the morning.",
    ]
    assert out[5] == "search 'What does the user like to drink?':"
    assert out[6].endswith("] I drink green tea every morning, never coffee.")
    start = out.index("blocks:")
    assert out[start + 1 : start + 3] == [
        "  human: Name: Sam | Drinks: green tea, never coffee",
        "  trip: Japan in April",
    ]
    assert out[-4:] == [
        "context for 'What does my sister do?':",
        "  block human: Name: Sam | Drinks: green tea, never coffee",
        "  block trip: Japan in April",
        "  message: My sister Maya is a violinist in Berlin.",
    ]
    # Run again, it finds what it made (the agent, the block) and goes on.
    again = run_example("rest_memory.py", server)
    assert again[-1] == "  message: My sister Maya is a violinist in Berlin."


def test_learning_gives_a_new_block_what_the_first_one_said(server: str) -> None:
    """Seed 002's usage example against the fake OpenAI: the second block's request to
    the model carries the name and the language told in the first."""
    with start_fake_openai() as fake:
        fake.replies += [
            Reply(text="Nice to meet you, Alice!"),
            Reply(text="You are Alice; use Python."),
        ]
        out = run_example(
            "learning_openai.py",
            server,
            OPENAI_BASE_URL=fake.base_url,
            OPENAI_API_KEY="sk-example",
            OPENAI_MODEL="gpt-example",
        )
        first, second = fake.requests
    assert out == [
        "you: My name is Alice and I prefer Python.",
        "model: Nice to meet you, Alice!",
        "stored: 2 messages, 0 failed",
        "you: What is my name, and which programming language should I use?",
        "model: You are Alice; use Python.",
    ]
    assert first["messages"] == [
        {"role": "user", "content": "My name is Alice and I prefer Python."}
    ]
    memory, question = second["messages"]
    assert memory["role"] == "system"
    assert "Alice" in memory["content"]
    assert "Python" in memory["content"]
    assert question["content"] == "What is my name, and which programming language should I use?"
    assert second["model"] == "gpt-example"

"""The runtime's parts on their own: which turns count as the last K, when a client gets a
stream, how architectures are registered (entry points included), and provider clients
reused across turns."""

import asyncio
import logging
import textwrap
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from api.config import Settings
from api.conversations.messages.models import Role, Said
from api.http.responses import wants_stream
from api.llm.openai import OpenAIProvider
from api.runtime.architectures.base import AgentArchitecture
from api.runtime.architectures.krishna_memgpt import KrishnaMemGPT
from api.runtime.architectures.registry import ARCHITECTURES, load_entry_points, register
from api.runtime.continuity import TurnCollector, render
from api.settings import keys
from api.settings import service as settings_service
from api.settings.models import ProviderSettings
from api.settings.service import ProviderCache, ProviderNotConfigured


def message(
    n: int, role: Role, actor: str = "ann", content: str | None = None, interrupted: bool = False
) -> Said:
    return Said(
        f"m{n:03d}", role, f"{role} {n}" if content is None else content, actor, interrupted
    )


def test_the_collector_keeps_the_newest_k_turns_oldest_first() -> None:
    roles: list[Role] = ["user", "assistant", "tool", "assistant"]
    history = [message(i, roles[i % 4]) for i in range(40)]  # ten turns of four messages
    newest_first = list(reversed(history))
    collector = TurnCollector("ann", 3)

    assert collector.feed(newest_first[:5]) is False  # one turn and a piece of the next
    assert collector.feed(newest_first[5:]) is True
    assert [m.message_id for m in collector.messages()] == [m.message_id for m in history[28:]]


def test_the_collector_skips_other_actors_and_drops_a_headless_oldest_turn() -> None:
    history = [
        message(0, "assistant"),  # its question lies beyond what was read
        message(1, "user", actor="bob"),
        message(2, "assistant", actor="bob"),
        message(3, "user"),
        message(4, "assistant"),
    ]
    collector = TurnCollector("ann", 5)
    assert collector.feed(list(reversed(history))) is False
    assert [m.message_id for m in collector.messages()] == ["m003", "m004"]


def test_render_is_seed_001s_form_without_tool_traffic() -> None:
    recent = [
        message(0, "user"),
        message(1, "assistant", content=""),
        message(2, "tool"),
        message(3, "assistant", interrupted=True),
    ]
    assert render(recent) == (
        "Recent conversation:\nuser: user 0\nassistant: assistant 3 (interrupted)"
    )
    assert render([]) == ""


@pytest.mark.parametrize(
    ("asked", "accept", "expected"),
    [
        (True, None, True),
        (True, "*/*", True),
        (True, "text/event-stream", True),
        (True, "application/json", False),
        (True, "application/json, text/event-stream", True),
        (False, "text/event-stream", False),
    ],
)
def test_who_gets_a_stream(asked: bool, accept: str | None, expected: bool) -> None:
    assert wants_stream(asked, accept) is expected


def test_registering_refuses_what_is_not_an_architecture_or_takes_a_name() -> None:
    class Impostor(AgentArchitecture):
        name = KrishnaMemGPT.name
        description = "Not the real one."

        def run(self, turn):  # type: ignore[no-untyped-def]
            raise NotImplementedError

    with pytest.raises(ValueError, match="registered already"):
        register(Impostor)
    with pytest.raises(TypeError):
        register(object)  # type: ignore[arg-type]

    class Dreamer(AgentArchitecture):
        name = "dreamer"
        description = "Offers a tool nobody wrote."
        tools = ("core_memory_append", "dream")

        def run(self, turn):  # type: ignore[no-untyped-def]
            raise NotImplementedError

    with pytest.raises(ValueError, match="dream"):
        register(Dreamer)
    assert "dreamer" not in ARCHITECTURES
    assert ARCHITECTURES[KrishnaMemGPT.name] is KrishnaMemGPT
    assert register(KrishnaMemGPT) is KrishnaMemGPT  # again: a no-op


def test_architectures_from_installed_packages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "parrot_arch.py").write_text(
        textwrap.dedent(
            """
            from api.runtime.architectures.base import AgentArchitecture
            from api.runtime.loop import AgentLoop

            class Parrot(AgentArchitecture):
                name = "parrot"
                description = "From an installed package."

                def run(self, turn):
                    return AgentLoop(turn, system_prompt="Squawk.").stream()
            """
        )
    )
    dist = tmp_path / "parrot_arch-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: parrot-arch\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[agent_memory.architectures]\nparrot = parrot_arch:Parrot\nbroken = parrot_arch:Missing\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with caplog.at_level(logging.ERROR):
            assert load_entry_points() == ["parrot"]
        assert ARCHITECTURES["parrot"].description == "From an installed package."
        assert "broken" in caplog.text  # reported, and the others still load
    finally:
        ARCHITECTURES.pop("parrot", None)


async def test_provider_clients_are_reused_until_the_credentials_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ring = keys.keyring(Settings(encryption_key="k" * 40))
    cache = ProviderCache(size=2)

    def stored(api_key: str, email: str = "ann@example.com") -> ProviderSettings:
        data = settings_service.associated_data(email, "openai")
        return ProviderSettings(
            user_email=email,
            provider_name="openai",
            encrypted_credentials=ring.encrypt(f'{{"api_key": "{api_key}"}}'.encode(), data),
            key_id=ring.current_id,
            updated_at=datetime.now(tz=UTC),
        )

    async def build(settings: ProviderSettings | None) -> object:
        return await settings_service.provider_from(
            ring,
            settings,
            "openai",
            allow_private_urls=False,
            allow_server_identity=False,
            cache=cache,
        )

    monkeypatch.setattr(settings_service, "CLOSE_AFTER_SECONDS", 0.0)
    first = stored("sk-first-000000000000000000")
    original = await build(first)
    assert await build(first) is original
    renewed = await build(stored("sk-second-00000000000000000"))
    assert renewed is not original
    assert await build(first) is original  # the first is the newest used again
    other = await build(stored("sk-other-000000000000000000", email="bob@example.com"))
    # The least recently used went, and its client is closed once turns had time to end.
    for _ in range(5):
        await asyncio.sleep(0)
    assert isinstance(renewed, OpenAIProvider)
    assert renewed._client.is_closed()
    assert isinstance(original, OpenAIProvider)
    assert not original._client.is_closed()
    await cache.aclose()  # at shutdown: every client still cached
    assert isinstance(other, OpenAIProvider)
    assert original._client.is_closed()
    assert other._client.is_closed()
    with pytest.raises(ProviderNotConfigured):
        await build(None)

    # Turns that start together with the same credentials share one client, built once.
    built: list[OpenAIProvider] = []
    real_build = OpenAIProvider.__init__
    failing: list[str] = []

    def counted(self: OpenAIProvider, **options: Any) -> None:
        if failing:
            raise RuntimeError(failing.pop())
        real_build(self, **options)
        built.append(self)

    monkeypatch.setattr(OpenAIProvider, "__init__", counted)
    together = stored("sk-together-0000000000000000")
    one, two = await asyncio.gather(build(together), build(together))
    assert one is two
    assert built == [one]
    # A turn that gives up while the client is built does not stop it for the others.
    alone = stored("sk-alone-000000000000000000")
    gives_up = asyncio.ensure_future(build(alone))
    waits = asyncio.ensure_future(build(alone))
    await asyncio.sleep(0)
    gives_up.cancel()
    assert isinstance(await waits, OpenAIProvider)
    assert gives_up.cancelled()
    assert await build(alone) is await waits
    # A build that fails fails every turn that waited for it; the next turn tries again.
    failing.append("no TLS context today")
    broken = stored("sk-broken-00000000000000000")
    outcomes = await asyncio.gather(build(broken), build(broken), return_exceptions=True)
    assert [str(o) for o in outcomes] == ["no TLS context today"] * 2
    assert isinstance(await build(broken), OpenAIProvider)
    await cache.aclose()

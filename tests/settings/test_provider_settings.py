"""/settings/providers end to end: validation, masking, encryption at rest, the URL guard,
testing a provider over real HTTP, rotation, and secrets kept out of logs."""

import json
import logging
import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from api.config import Settings
from api.main import create_app
from api.repositories import Repositories
from tests.fakes.llm_servers import FakeLLM

LOCAL = "http://127.0.0.1"
SECRET = "sk-live-abcdefghijklmnop1234"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(sqlite_path=tmp_path / "s.db", encryption_key="k" * 40)


def local_client(settings: Settings) -> TestClient:
    return TestClient(create_app(settings), base_url=LOCAL)


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    with local_client(settings) as client:
        yield client


def saved_under_older_rules(settings: Settings, values: dict[str, str]) -> None:
    """The local user's OpenAI credentials replaced, in the file, by `values`: what an
    older version of the service may have saved."""
    from api.kit.crypto import KeyRing
    from api.settings.service import associated_data

    stale = KeyRing("k" * 40).encrypt(
        json.dumps(values).encode(), associated_data("local@localhost", "openai")
    )
    db = sqlite3.connect(settings.sqlite_path)
    (row,) = db.execute(
        "SELECT item FROM \"agent-memory\" WHERE sk = 'ProviderSettings#openai'"
    ).fetchone()
    item = json.loads(row)
    item["encrypted_credentials"]["S"] = stale
    db.execute(
        "UPDATE \"agent-memory\" SET item = ? WHERE sk = 'ProviderSettings#openai'",
        (json.dumps(item),),
    )
    db.commit()


def stored_rows(settings: Settings) -> list[dict[str, Any]]:
    rows = sqlite3.connect(settings.sqlite_path).execute(
        "SELECT item FROM \"agent-memory\" WHERE sk LIKE 'ProviderSettings#%'"
    )
    return [json.loads(row[0]) for row in rows]


def test_credentials_are_saved_encrypted_and_shown_masked(
    client: TestClient, settings: Settings
) -> None:
    saved = client.put("/settings/providers/openai", json={"api_key": SECRET})
    assert saved.status_code == 200, saved.text
    assert saved.json()["values"]["api_key"] == "…1234"
    assert SECRET not in saved.text
    got = client.get("/settings/providers/openai").json()
    assert got["values"] == {"api_key": "…1234", "base_url": None, "organization": None}
    assert [p["provider"] for p in client.get("/settings/providers").json()] == ["openai"]
    rows = stored_rows(settings)
    assert len(rows) == 1
    assert SECRET not in json.dumps(rows)
    assert rows[0]["encrypted_credentials"]["S"].startswith("v1.")


def test_a_secret_left_empty_keeps_its_stored_value(client: TestClient) -> None:
    client.put("/settings/providers/openai", json={"api_key": SECRET})
    updated = client.put(
        "/settings/providers/openai", json={"api_key": "", "organization": "org-42"}
    )
    assert updated.status_code == 200
    assert updated.json()["values"] == {
        "api_key": "…1234",
        "base_url": None,
        "organization": "org-42",
    }


def test_bad_input_is_a_validation_error_and_changes_nothing(client: TestClient) -> None:
    client.put("/settings/providers/openai", json={"api_key": SECRET})
    for body in (
        {"base_url": "not a url"},
        {"api_key": SECRET, "unknown": 1},
        {"api_key": "x" * 501},
    ):
        response = client.put("/settings/providers/openai", json=body)
        assert response.status_code == 422, body
        assert response.json()["code"] == "validation_error"
        assert SECRET not in response.text
    bedrock = client.put(
        "/settings/providers/bedrock", json={"access_key_id": "AKIAABCDEFGHIJKLMNOP"}
    )
    assert bedrock.status_code == 422
    assert "both" in bedrock.json()["message"]
    assert client.get("/settings/providers/openai").json()["values"]["organization"] is None


def test_unknown_and_unconfigured_providers_are_404(client: TestClient) -> None:
    assert client.put("/settings/providers/acme", json={}).json()["code"] == "unknown_provider"
    assert client.put("/settings/providers/offline", json={}).status_code == 404
    missing = client.get("/settings/providers/anthropic")
    assert missing.status_code == 404
    assert missing.json()["code"] == "provider_not_configured"
    assert client.delete("/settings/providers/anthropic").status_code == 404


def test_delete(client: TestClient) -> None:
    client.put("/settings/providers/anthropic", json={"api_key": SECRET})
    assert client.delete("/settings/providers/anthropic").status_code == 204
    assert client.get("/settings/providers/anthropic").status_code == 404


def test_a_ciphertext_copied_to_another_provider_does_not_decrypt(
    client: TestClient, settings: Settings
) -> None:
    client.put("/settings/providers/openai", json={"api_key": SECRET})
    client.put("/settings/providers/anthropic", json={"api_key": "sk-ant-other-secret-99"})
    db = sqlite3.connect(settings.sqlite_path)
    (openai_item,) = db.execute(
        "SELECT item FROM \"agent-memory\" WHERE sk = 'ProviderSettings#openai'"
    ).fetchone()
    ciphertext = json.loads(openai_item)["encrypted_credentials"]["S"]
    (row,) = db.execute(
        "SELECT item FROM \"agent-memory\" WHERE sk = 'ProviderSettings#anthropic'"
    ).fetchone()
    item = json.loads(row)
    item["encrypted_credentials"]["S"] = ciphertext
    db.execute(
        "UPDATE \"agent-memory\" SET item = ? WHERE sk = 'ProviderSettings#anthropic'",
        (json.dumps(item),),
    )
    db.commit()
    response = client.get("/settings/providers/anthropic")
    assert response.status_code == 500
    assert response.json()["code"] == "decryption_failed"
    assert SECRET not in response.text


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest",
        "http://[fd00:ec2::254]/",
        "http://[fe80::1]/",
        "http://0.0.0.0/",
        "http://[::ffff:169.254.169.254]/",
    ],
)
def test_metadata_and_link_local_urls_are_refused_even_locally(
    client: TestClient, url: str
) -> None:
    response = client.put("/settings/providers/openai", json={"api_key": SECRET, "base_url": url})
    assert response.status_code == 400
    assert response.json()["code"] == "url_refused"
    assert client.get("/settings/providers/openai").status_code == 404


def test_private_addresses_follow_the_setting(settings: Settings) -> None:
    body = {"api_key": SECRET, "base_url": "http://localhost:11434/v1"}  # a name, resolved
    with local_client(settings) as client:  # local mode: a self-hosted model is fine
        assert client.put("/settings/providers/openai", json=body).status_code == 200
    strict = settings.model_copy(update={"allow_private_provider_urls": False})
    with local_client(strict) as client:
        refused = client.put("/settings/providers/openai", json=body)
        assert refused.status_code == 400
        assert "private or loopback" in refused.json()["message"]


def test_testing_a_provider_lists_its_models_over_http(
    client: TestClient, fake_openai: FakeLLM
) -> None:
    client.put(
        "/settings/providers/openai", json={"api_key": SECRET, "base_url": fake_openai.base_url}
    )
    response = client.post("/settings/providers/openai/test")
    assert response.status_code == 200, response.text
    assert response.json() == {"ok": True, "models": sorted(fake_openai.models)}


def test_testing_a_provider_returns_its_error(client: TestClient, fake_openai: FakeLLM) -> None:
    client.put(
        "/settings/providers/openai", json={"api_key": "bad-key", "base_url": fake_openai.base_url}
    )
    response = client.post("/settings/providers/openai/test")
    assert response.status_code == 400
    assert response.json()["code"] == "provider_auth_failed"
    assert "OpenAI" in response.json()["message"]


def test_the_offline_model_needs_no_settings(client: TestClient) -> None:
    response = client.post("/settings/providers/offline/test")
    assert response.json() == {"ok": True, "models": ["offline-demo"]}


def test_rotation_reads_old_keys_writes_new_and_reencrypts(
    settings: Settings, tmp_path: Path
) -> None:
    with local_client(settings) as client:
        client.put("/settings/providers/openai", json={"api_key": SECRET})
        client.put("/settings/providers/anthropic", json={"api_key": "sk-ant-second-key-77"})
    old_key_id = stored_rows(settings)[0]["key_id"]["S"]
    rotated = settings.model_copy(
        update={"encryption_key": SecretStr("r" * 40), "encryption_old_keys": SecretStr("k" * 40)}
    )
    with local_client(rotated) as client:
        assert client.get("/settings/providers/openai").status_code == 200  # old still reads
        client.put("/settings/providers/openai", json={"organization": "org-1"})
    ids = {row["sk"]["S"]: row["key_id"]["S"] for row in stored_rows(settings)}
    assert ids["ProviderSettings#anthropic"] == old_key_id
    assert ids["ProviderSettings#openai"] != old_key_id  # new writes use the new key

    import subprocess
    import sys

    env = {
        **os.environ,
        "SQLITE_PATH": str(settings.sqlite_path),
        "ENCRYPTION_KEY": "r" * 40,
        "ENCRYPTION_OLD_KEYS": "k" * 40,
    }
    result = subprocess.run(
        [sys.executable, "-m", "api.cli", "reencrypt"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "Re-encrypted 1 " in result.stdout
    assert len({row["key_id"]["S"] for row in stored_rows(settings)}) == 1
    only_new = settings.model_copy(update={"encryption_key": SecretStr("r" * 40)})
    with local_client(only_new) as client:
        for provider in ("openai", "anthropic"):
            assert client.get(f"/settings/providers/{provider}").status_code == 200


def test_local_mode_makes_its_own_key_readable_by_its_owner_only(tmp_path: Path) -> None:
    settings = Settings(sqlite_path=tmp_path / "data" / "s.db")
    with local_client(settings) as client:
        assert client.put("/settings/providers/openai", json={"api_key": SECRET}).status_code == 200
    key_file = tmp_path / "data" / "encryption.key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    with local_client(settings) as client:  # the same key after a restart
        assert client.get("/settings/providers/openai").status_code == 200


def test_secrets_never_reach_the_logs(
    settings: Settings, fake_openai: FakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with local_client(settings) as client:
        client.put(
            "/settings/providers/openai", json={"api_key": SECRET, "base_url": fake_openai.base_url}
        )
        client.put("/settings/providers/openai", json={"api_key": "x" * 501})  # refused
        client.post("/settings/providers/openai/test")
        client.get("/settings/providers")
    assert caplog.records
    assert SECRET not in caplog.text
    assert ("k" * 40) not in caplog.text


def test_private_provider_urls_default_by_mode() -> None:
    assert Settings(auth_mode="local").private_provider_urls is True
    google = Settings.model_construct(auth_mode="google", allow_private_provider_urls=None)
    assert google.private_provider_urls is False


@pytest.mark.parametrize(
    "url",
    [
        "http://[2002:a9fe:a9fe::1]/",
        "http://168.63.129.16/",
        "http://user:pw@127.0.0.1:9/v1",
        "http://127.0.0.1:9/v1?key=secret",
    ],
    ids=["6to4_metadata", "azure_wireserver", "userinfo", "query"],
)
def test_more_urls_that_are_refused(client: TestClient, url: str) -> None:
    response = client.put("/settings/providers/openai", json={"api_key": SECRET, "base_url": url})
    assert response.status_code == 400
    assert response.json()["code"] == "url_refused"
    assert "pw@" not in response.text
    assert "secret" not in response.text


def test_ipv6_loopback_is_a_local_server_not_a_refusal(client: TestClient) -> None:
    body = {"api_key": SECRET, "base_url": "http://[::1]:11434/v1"}
    assert client.put("/settings/providers/openai", json=body).status_code == 200


def test_a_redirect_is_not_followed_past_the_guard(client: TestClient) -> None:
    """A base URL that redirects elsewhere (an internal address, say) is not followed, and
    what the redirecting server said is not repeated."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Redirect(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(307)
            self.send_header("Location", "http://169.254.169.254/latest/meta-data/")
            self.send_header("Content-Length", "22")
            self.end_headers()
            self.wfile.write(b"INTERNAL-ONLY aws_key=")

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}/v1"
        client.put("/settings/providers/openai", json={"api_key": SECRET, "base_url": base})
        response = client.post("/settings/providers/openai/test")
    finally:
        server.shutdown()
    assert response.status_code == 400
    assert "redirect" in response.json()["message"]
    assert "INTERNAL-ONLY" not in response.text


def test_settings_saved_under_older_rules_are_a_clear_error(
    client: TestClient, settings: Settings
) -> None:
    client.put("/settings/providers/openai", json={"api_key": SECRET})
    saved_under_older_rules(settings, {"api_key": SECRET, "retired_field": "old-secret-value"})
    response = client.get("/settings/providers/openai")
    assert response.status_code == 409
    assert response.json()["code"] == "stored_settings_invalid"
    assert "old-secret-value" not in response.text
    assert client.put("/settings/providers/openai", json={"api_key": SECRET}).status_code == 200


def test_new_credentials_can_be_saved_after_their_old_key_is_gone(settings: Settings) -> None:
    with local_client(settings) as client:
        client.put("/settings/providers/openai", json={"api_key": SECRET})
    rekeyed = settings.model_copy(update={"encryption_key": SecretStr("z" * 40)})
    with local_client(rekeyed) as client:
        assert client.get("/settings/providers/openai").json()["code"] == "decryption_failed"
        assert client.put("/settings/providers/openai", json={"api_key": SECRET}).status_code == 200
        assert client.get("/settings/providers/openai").status_code == 200


def test_a_new_access_key_id_needs_its_own_secret(client: TestClient) -> None:
    first = {"access_key_id": "AKIAAAAAAAAAAAAAAAAA", "secret_access_key": "s" * 30}
    assert client.put("/settings/providers/bedrock", json=first).status_code == 200
    kept = client.put(
        "/settings/providers/bedrock",
        json={"access_key_id": first["access_key_id"], "region": "eu-west-1"},
    )
    assert kept.status_code == 200  # same key id: the stored secret stays
    other = client.put(
        "/settings/providers/bedrock", json={"access_key_id": "AKIABBBBBBBBBBBBBBBB"}
    )
    assert other.status_code == 422  # a new key id without its secret
    cleared = client.put("/settings/providers/bedrock", json={"access_key_id": None})
    assert cleared.status_code == 200  # local mode may use the server's own AWS role
    assert cleared.json()["values"]["secret_access_key"] is None


async def test_only_local_mode_lends_the_servers_aws_identity(tmp_path: Path) -> None:
    from api.kit.clock import SystemClock
    from api.kit.crypto import KeyRing
    from api.settings import service
    from api.settings.providers import BedrockCredentials
    from api.store.definition import load_definition
    from api.store.sqlite import SqliteTable

    table = SqliteTable(tmp_path / "t.db", "agent-memory", load_definition())
    repos = Repositories.over(table)
    await table.create()
    with pytest.raises(service.ServerIdentityRefused):
        await service.save(
            repos,
            KeyRing("k" * 40),
            "a@x.io",
            "bedrock",
            BedrockCredentials(),
            allow_private_urls=False,
            allow_server_identity=False,
            clock=SystemClock(),
        )
    await table.close()


def test_short_secrets_are_masked_entirely(client: TestClient) -> None:
    saved = client.put("/settings/providers/anthropic", json={"api_key": "short-key-123"})
    assert saved.json()["values"]["api_key"] == "••••"


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("api_key", "sk-abc\u00a0def123456", "no-break space"),
        ("api_key", "sk-abc\r\nX-Evil: 1", "U+000D"),
        ("api_key", "sk-abc\x00def123456", "U+0000"),
        ("organization", "org-\u200bhidden", "zero width space"),
    ],
)
def test_values_no_header_can_carry_are_refused_on_save(
    client: TestClient, field: str, value: str, named: str
) -> None:
    body = {"api_key": "sk-valid-0000000000", field: value}
    refused = client.put("/settings/providers/openai", json=body)
    assert refused.status_code == 422
    assert named in refused.json()["message"].lower() or named in refused.json()["message"]
    assert value not in refused.text
    assert client.get("/settings/providers/openai").status_code == 404  # nothing saved


def test_surrounding_whitespace_of_a_pasted_key_is_dropped(
    client: TestClient, fake_openai: FakeLLM
) -> None:
    saved = client.put(
        "/settings/providers/openai",
        json={"api_key": f"  {SECRET}\n", "base_url": fake_openai.base_url},
    )
    assert saved.status_code == 200
    tested = client.post("/settings/providers/openai/test")
    assert tested.status_code == 200, tested.text  # the fake saw the key without the spaces


def test_a_stored_key_no_header_can_carry_is_a_clear_error(
    client: TestClient, settings: Settings
) -> None:
    """Saved before the rule: every use is a typed error naming what to do, never a 500."""
    client.put("/settings/providers/openai", json={"api_key": SECRET})
    saved_under_older_rules(settings, {"api_key": "sk-with\u00a0space"})
    assert client.get("/settings/providers/openai").json()["code"] == "stored_settings_invalid"
    form = client.get("/agents/schema")
    assert form.status_code == 200
    assert "openai" in form.json()["notes"]
    agent = client.post("/agents", json={"name": "Uses it", "provider": "openai", "model": "m"})
    assert agent.status_code == 201, agent.text
    turn = client.post(
        "/chat", json={"agent_id": agent.json()["id"], "prompt": "hi", "stream": False}
    )
    assert turn.status_code == 409
    assert turn.json()["code"] == "stored_settings_invalid"

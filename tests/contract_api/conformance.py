"""Schemathesis over every operation of the app's own OpenAPI document: generated requests,
valid and not, each answered with no server error, a documented status, a documented
content type and a body matching its documented schema (the events of a stream included,
each against the `itemSchema` of its operation). Operations come from `/openapi.json`, so
a new route is covered the day it lands; only what is not the API (the MCP endpoint, the
web app's pages) is left out, by path.

The operations are dealt into SHARES shares, one test file each (`test_conformance_1.py`
...), so that pytest-xdist's workers, which take a file's tests together (`--dist
loadfile`), run the suite side by side: one file took a worker for two minutes while the
other ran everything else. Each share has an app of its own (a fresh SQLite file, its own
seeded objects), so what a share sees does not depend on which shares ran before it in
the same worker.

CONTRACT_EXAMPLES sets how many requests each operation gets (bounded for CI's 2 cores)."""

import copy
import functools
import os
import re
import tempfile
import uuid
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import CheckContext, not_a_server_error
from schemathesis.core.jsonschema.types import JsonValue
from schemathesis.core.transport import Response
from schemathesis.generation.feedback import FeedbackSources
from schemathesis.pytest._test_builder import build_operation_test
from schemathesis.python import asgi
from schemathesis.python._constants.orchestrator import make_constants_value_source
from schemathesis.specs.openapi.checks import (
    allow_header_conformance,
    content_type_conformance,
    negative_data_rejection,
    positive_data_acceptance,
    response_schema_conformance,
    status_code_conformance,
)

from api.main import create_app
from tests.contract_api.conftest import contract_settings
from tests.contract_api.observed import TALLY

EXAMPLES = int(os.environ.get("CONTRACT_EXAMPLES", "25"))
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    # A 405's Allow lists the path's documented methods (every path: test_allow.py).
    # Not schemathesis's unsupported_method: it resends a write's Idempotency-Key with
    # another method, which the Idempotency middleware (before routing) answers 422
    # `idempotency_key_reused`, rightly for the key, before any 405.
    allow_header_conformance,
]
# Refusals of schema-valid requests that name what the client can only have been given or
# made first, or break a rule across fields that JSON Schema cannot state: as a generated
# id is answered 404, these are answered with their code, and are not a schema too loose.
# Any other refusal of a schema-valid request fails the run.
REFUSED_BY_STATE_OR_RULE = {
    "invalid_cursor": "a cursor is an opaque token a page gave",
    "version_mismatch": "If-Match names the current version, which the client read first",
    "line_out_of_range": "a line number within the block's lines as they are now",
    "user_id_mismatch": "user_id, when sent, is the signed-in user's own",
    "invalid_time_range": "`after` earlier than `before`",
    "provider_not_configured": "a provider is one the user configured first",
    "unknown_architecture": "architectures are the installed ones (plugins add some)",
    "idempotency_key_reused": "the generated key was used before, for another request",
    "invalid_import_file": "what the file holds (an export or a Letta .af), not its form",
    # An uploaded document: what its bytes hold (docs/documents.md), not the request's form.
    "document_empty": "a document's file has bytes",
    "document_has_no_text": "a document's file holds text",
    "document_unreadable": "a .pdf is a PDF; text is UTF-8",
    "document_encrypted": "a PDF without a password",
    "document_too_many_pages": "a PDF within DOCUMENT_MAX_PAGES",
    "document_too_many_passages": "a file within DOCUMENT_MAX_PASSAGES",
    "document_too_large": "a file within DOCUMENT_MAX_BYTES, an operator's bound",
    "unsupported_document_type": "text, Markdown, HTML or PDF, by its type or its name",
    "empty_query": "a documents search's words are more than white space",
    "agent_name_mismatch": "seed 002: the body's agent_name, when sent, is the path's",
    "model_required": "seed 004: a provider named needs its model named too",
    "archival_required": "seed 004: supersedes and valid_from go with store_in_archival",
    "invalid_supersedes": "seed 004: at most 10 memories replaced by one add, each named once",
    "invalid_block_name": "a block name is what remains of it once normalized (docs)",
    "invalid_value": "/v1: the last message is the user's, as the turn's input",
    "unsupported_value": "/v1: OpenAI's options an agent cannot honour (logprobs, n > 1)",
}
# Operations whose body's fields depend on a path parameter, which JSON Schema cannot
# state: a provider's credentials are that provider's form (GET /settings/providers/schema).
BODY_CHOSEN_BY_PATH = {"/settings/providers/{provider}"}
# Not the API, by design: the MCP endpoint (its own protocol, tested in tests/mcp) and the
# web app's pages (HTML, a catch-all: the one operation that is a bare parameter at the
# root). Both stay out of the document today; the pattern keeps them out if they come in.
NON_API = re.compile(r"^/mcp(/|$)|^/\{[^/}]+\}$")

SHARES = 4
FILES = [f"test_conformance_{number}.py" for number in range(1, SHARES + 1)]
# The operations whose bodies take free JSON (messages, metadata), for which schemathesis
# builds hundreds of coverage cases: each costs as much as a dozen others (POST
# /messages/batch, POST /memory/add and POST /messages took 51, 31 and 27 s of one run's
# 272), so each has a share of its own, which the rest then fill up.
HEAVY = {"POST /memory/add": 1, "POST /messages/batch": 2, "POST /messages": 3}


def deal(labels: set[str]) -> dict[str, int]:
    """Each operation's share (1 to SHARES): the heavy ones where HEAVY says, the others in
    the order of their labels, one to each share in turn from the last, which has no heavy
    one. A new operation finds its share by itself; its cases are its own whatever the
    share (schemathesis seeds an operation's cases with its label)."""
    dealt = {label: share for label, share in HEAVY.items() if label in labels}
    rest = sorted(label for label in labels if label not in HEAVY)
    dealt.update({label: SHARES - turn % SHARES for turn, label in enumerate(rest)})
    return dealt


@functools.cache
def document() -> dict[str, Any]:
    """/openapi.json as the app serves it in these settings, built once per process (a
    second of CPU): every share's app serves the same one (nothing in it names the SQLite
    file), and each worker imports every share's file to collect it."""
    with tempfile.TemporaryDirectory(prefix="contract-") as directory:
        return create_app(contract_settings(Path(directory))).openapi()


def documented() -> set[str]:
    """Every operation of the document that is the API, as "METHOD /path"."""
    return {
        f"{method.upper()} {path}"
        for path, methods in document()["paths"].items()
        if not NON_API.search(path)
        for method in methods
    }


class Share:
    """The operations of one share, each checked against an app of its own. Built at
    import, to name the operations at collection; nothing runs until the first request
    (which starts the app's lifespan)."""

    def __init__(self, number: int) -> None:
        self.number = number
        self._directory = tempfile.TemporaryDirectory(prefix="contract-")
        self.app = create_app(contract_settings(Path(self._directory.name)))
        schema = schemathesis.openapi.from_dict(copy.deepcopy(document()))
        self.schema = schema.exclude(path_regex=NON_API.pattern)
        self.schema.app = self.app
        dealt = deal(documented())
        self.operations = {
            operation.label: operation
            for operation in (result.ok() for result in self.schema.get_all_operations())  # type: ignore[union-attr]
            if dealt[operation.label] == number
        }
        self.seeded: dict[str, str] = {}

    @classmethod
    def of(cls, test_file: str) -> "Share":
        """The share a file `test_conformance_{number}.py` checks."""
        return cls(int(Path(test_file).stem.rsplit("_", 1)[1]))

    def lifespan(self) -> Iterator[None]:
        """A module fixture's body: the app's lifespan, which schemathesis started on its
        first request, ended with the module, and its SQLite file removed."""
        yield
        asgi.shutdown_lifespans()
        self._directory.cleanup()

    def check(self, operation: str) -> None:
        """One operation's cases, generated here rather than at collection as
        `schema.parametrize()` does: schemathesis builds an operation's coverage cases with
        its test, 35 s of CPU for the three whose bodies take any JSON, which every
        pytest-xdist worker would pay collecting the suite, this file's or not."""

        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            derandomize=True,  # the same cases on every run: a CI failure reproduces locally
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        def check_case(case: schemathesis.Case[Any]) -> None:
            aimed = aim_at_seeded_objects(case, self.seeded_objects())
            fresh_idempotency_key(case)
            checks = [*CHECKS, valid_data_accepted, invalid_data_refused]
            response = case.call_and_validate(checks=checks)
            if aimed and case.method == "DELETE" and response.status_code < 300:
                self.seeded.clear()  # made again for the next case
            TALLY[f"{case.operation.label} {response.status_code}"] += 1

        test = build_operation_test(
            config=self.schema.config,
            operation=self.operations[operation],
            test_func=check_case,
            given_kwargs={},
            feedback=FeedbackSources(
                constants_value_source=make_constants_value_source(self.schema)
            ),
        )
        test()

    def every_operation_exercised(self) -> None:
        """Schemathesis skips an operation it cannot generate for, silently: none of this
        share's may be."""
        mine = {label for label, share in deal(documented()).items() if share == self.number}
        exercised = {key.rsplit(" ", 1)[0] for key in TALLY}
        if not mine & exercised:
            pytest.skip("this share's conformance run was not selected")
        assert mine - exercised == set()

    # --- reaching past the 404s -------------------------------------------------------------
    # Generated ids name nothing, so every route would answer its 404 and never its 200.
    # Half of the cases (chosen by the generated value, so a case replays the same) name
    # instead objects made once through the API: an agent with a conversation, a turn, a
    # block with a line, an archival memory, seed 004's subject and memory run. Turns then
    # run for real (the offline model) and their streams are checked event by event.

    def seeded_objects(self) -> dict[str, str]:
        seeded = self.seeded
        if seeded:
            return seeded

        def call(method: str, path: str, body: JsonValue) -> dict[str, Any]:
            operation = self.schema[path][method]
            params = {name: seeded[name] for name in re.findall(r"{(\w+)}", path)}
            response = operation.Case(path_parameters=params, body=body).call()
            assert response.status_code in (200, 201, 202), response.text
            found: dict[str, Any] = response.json()
            return found

        seeded["agent_name"] = "contract"
        seeded["agent_id"] = agent = call("POST", "/agents", {"name": "contract"})["id"]
        turn: JsonValue = {"agent_id": agent, "prompt": "My name is Alice.", "stream": False}
        seeded["conversation_id"] = call("POST", "/conversations", {"agent_id": agent})["id"]
        seeded["run_id"] = call("POST", "/chat", turn)["run_id"]
        seeded["block"] = seeded["label"] = "human"
        line: JsonValue = {"content": "Name: Alice"}
        call("POST", "/agents/{agent_id}/memory/blocks/{block}/lines", line)
        seeded["line_number"] = "1"
        memory: JsonValue = {"content": "Alice likes tea."}
        archived = call("POST", "/agents/{agent_id}/memory/archival", memory)
        seeded["memory_id"] = archived["id"]
        seeded["user_id"] = "alice"
        call("POST", "/memory/initialize", {"user_id": "alice"})
        hello: JsonValue = {"role": "user", "content": "Hello, I am Alice."}
        added = call("POST", "/memory/add", {"user_id": "alice", "messages": [hello]})
        seeded["memory_run_id"] = added["run_id"]
        return seeded


def valid_data_accepted(
    ctx: CheckContext, response: Response, case: schemathesis.Case[Any]
) -> bool | None:
    """Schemathesis's positive_data_acceptance, but for the refusals named above and the
    validation errors JSON Schema cannot prevent (beyond_json_schema)."""
    error = error_body(response)
    if error.get("code") in REFUSED_BY_STATE_OR_RULE:
        return None
    if case.operation.path in BODY_CHOSEN_BY_PATH and error.get("code") == "validation_error":
        return None
    details = error.get("details") or {}
    found = details.get("errors") if isinstance(details, dict) else None
    if (
        error.get("code") == "validation_error"
        and found
        and all(beyond_json_schema(e) for e in found if isinstance(e, dict))
    ):
        return None
    return positive_data_acceptance(ctx, response, case)


def beyond_json_schema(error: dict[str, Any]) -> bool:
    """A whole number written as a float (`5.0`), which JSON Schema's `integer` takes and
    the server, reading integers strictly, does not; a bound an operator sets; or free JSON
    (`metadata`) past what a store keeps: nesting, size in bytes, DynamoDB's number range,
    empty keys inside it. The document says these in words; its schemas cannot."""
    location = error.get("loc") or []
    if error.get("type") == "int_type":
        return True
    if location == ["body", "limit"] and error.get("type") == "less_than_equal":
        return True  # seed 002's search: MEMORY_MAX_SEARCH_LIMIT, a setting, in its words
    return error.get("type") == "value_error" and bool(location) and location[-1] == "metadata"


def invalid_data_refused(
    ctx: CheckContext, response: Response, case: schemathesis.Case[Any]
) -> bool | None:
    """Schemathesis's negative_data_rejection, with 413 a refusal too: a body made invalid
    by its size (a string past its maxLength) can be past MAX_REQUEST_BYTES as well."""
    if response.status_code == 413:
        return None
    return negative_data_rejection(ctx, response, case)


def error_body(response: Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    if not isinstance(body, dict):
        return {}
    inner = body.get("error", body)  # /v1's errors are OpenAI's {"error": {...}}
    return inner if isinstance(inner, dict) else {}


def fresh_idempotency_key(case: schemathesis.Case[Any]) -> None:
    """A valid case's Idempotency-Key made unique, as a client makes one per request:
    generated keys repeat ("0"), and a key reused for another request is refused (422),
    which would leave most writes untried."""
    if case.meta is None or not case.meta.generation.mode.is_positive or not case.headers:
        return
    if "Idempotency-Key" in case.headers:
        case.headers["Idempotency-Key"] = uuid.uuid4().hex


def aim_at_seeded_objects(case: schemathesis.Case[Any], seeded: dict[str, str]) -> bool:
    """Whether the case now names a seeded object. Only schema-valid cases are aimed: a
    schema-violating one keeps what makes it so, to be refused."""
    if case.meta is None or not case.meta.generation.mode.is_positive:
        return False
    aimed = False
    memory_layer = case.path.startswith("/memory/")

    def value(name: str) -> str | None:
        if name == "run_id" and memory_layer:
            name = "memory_run_id"
        return seeded.get(name)

    def aim(values: Any) -> None:
        nonlocal aimed
        if not isinstance(values, dict):
            return
        for name, generated in values.items():
            wanted = value(name)
            if wanted is not None and zlib.crc32(repr(generated).encode()) % 2 == 0:
                values[name] = wanted
                aimed = True

    aim(case.path_parameters)
    aim(case.query)
    aim(case.body)
    return aimed

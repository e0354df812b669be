"""The DynamoDB adapter's own HTTP client: signed as botocore signs, credentials as botocore
resolves and refreshes them (off the event loop), errors read from DynamoDB's answers."""

import datetime
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials, DeferredRefreshableCredentials
from botocore.exceptions import CredentialRetrievalError

from api.store.dynamodb_http import (
    CONTENT_TYPE,
    DynamoHttp,
    Signer,
    Unreachable,
    encode,
    host_of,
    refused,
)

SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"


@pytest.mark.parametrize(
    "endpoint",
    [
        "https://dynamodb.eu-west-1.amazonaws.com",
        "https://dynamodb.eu-west-1.amazonaws.com:443/",
        "http://127.0.0.1:8000",
        "http://localhost",
    ],
)
@pytest.mark.parametrize("token", [None, "session/token+="])
def test_requests_are_signed_as_botocore_signs_them(endpoint: str, token: str | None) -> None:
    credentials = Credentials("AKIDEXAMPLE", SECRET, token)
    body = encode({"TableName": "t", "Key": {"pk": {"S": "é ü"}, "v": {"B": b"\x00\xff"}}})
    target = "DynamoDB_20120810.GetItem"
    theirs = AWSRequest(
        method="POST",
        url=endpoint,
        data=body,
        headers={"Content-Type": CONTENT_TYPE, "X-Amz-Target": target},
    )
    SigV4Auth(credentials, "dynamodb", "eu-west-1").add_auth(theirs)
    when = datetime.datetime.strptime(theirs.headers["X-Amz-Date"], "%Y%m%dT%H%M%SZ")
    signer = Signer("eu-west-1", host_of(endpoint))

    ours = signer.headers(
        credentials.get_frozen_credentials(), target, body, when.replace(tzinfo=datetime.UTC)
    )

    assert ours["Authorization"] == theirs.headers["Authorization"]
    assert ours["X-Amz-Date"] == theirs.headers["X-Amz-Date"]
    assert ours.get("X-Amz-Security-Token") == theirs.headers.get("X-Amz-Security-Token")


def test_binary_values_travel_as_base64() -> None:
    assert json.loads(encode({"v": {"B": b"\x00\xff"}, "s": {"BS": [b"a"]}})) == {
        "v": {"B": "AP8="},
        "s": {"BS": ["YQ=="]},
    }


def test_what_orjson_refuses_is_still_sent_for_dynamodb_to_judge() -> None:
    assert encode({"v": {"S": "a\ud800"}}) == b'{"v":{"S":"a\\ud800"}}'
    assert encode({"v": {"S": "é"}}) == '{"v":{"S":"é"}}'.encode()


def test_errors_are_read_from_the_answer() -> None:
    cancelled = refused(
        400,
        json.dumps(
            {
                "__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
                "Message": "Transaction cancelled",
                "CancellationReasons": [{"Code": "None"}, {"Code": "ConditionalCheckFailed"}],
            }
        ).encode(),
    )
    assert cancelled.code == "TransactionCanceledException"
    assert cancelled.message == "Transaction cancelled"
    assert cancelled.answer["CancellationReasons"][1] == {"Code": "ConditionalCheckFailed"}
    not_json = refused(502, b"<html>Bad Gateway</html>")
    assert (not_json.code, not_json.message) == ("HTTP502", "<html>Bad Gateway</html>")


class Recording(BaseHTTPRequestHandler):
    """Answers every request with an empty item, keeping its headers."""

    headers_seen: ClassVar[list[dict[str, str]]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).headers_seen.append(dict(self.headers))
        data = b"{}"
        self.send_response(200)
        self.send_header("Content-Type", CONTENT_TYPE)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def recording_endpoint() -> Iterator[str]:
    Recording.headers_seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Recording)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


async def test_expiring_credentials_are_refreshed_off_the_event_loop(
    recording_endpoint: str,
) -> None:
    """As boto3 refreshes a role's credentials: before they expire, by botocore, but on a
    thread, as it asks STS or the instance over the network."""
    refreshed_on: list[threading.Thread] = []
    expiry = datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=1)

    def refresh() -> dict[str, Any]:
        refreshed_on.append(threading.current_thread())
        n = len(refreshed_on)
        return {
            "access_key": f"KEY{n}",
            "secret_key": SECRET,
            "token": f"token{n}",
            "expiry_time": expiry.isoformat(),
        }

    credentials = DeferredRefreshableCredentials(refresh_using=refresh, method="test")
    http = DynamoHttp(recording_endpoint, "us-east-1", credentials, max_attempts=1)
    try:
        await http.call("GetItem", {"TableName": "t"})
        await http.call("GetItem", {"TableName": "t"})
    finally:
        await http.close()

    assert len(refreshed_on) == 1  # an hour left: no second refresh
    assert refreshed_on[0] is not threading.main_thread()
    for seen in Recording.headers_seen:
        assert "Credential=KEY1/" in seen["Authorization"]
        assert seen["X-Amz-Security-Token"] == "token1"


async def test_without_credentials_nothing_is_sent(recording_endpoint: str) -> None:
    http = DynamoHttp(recording_endpoint, "us-east-1", None, max_attempts=3)
    try:
        with pytest.raises(Unreachable, match="No AWS credentials"):
            await http.call("GetItem", {"TableName": "t"})
    finally:
        await http.close()
    assert Recording.headers_seen == []


async def test_credentials_that_cannot_be_refreshed_leave_the_store_unreachable(
    recording_endpoint: str,
) -> None:
    def refresh() -> dict[str, Any]:
        raise CredentialRetrievalError(provider="test", error_msg="the role is gone")

    credentials = DeferredRefreshableCredentials(refresh_using=refresh, method="test")
    http = DynamoHttp(recording_endpoint, "us-east-1", credentials, max_attempts=1)
    try:
        with pytest.raises(Unreachable, match="the role is gone"):
            await http.call("GetItem", {"TableName": "t"})
    finally:
        await http.close()
    assert Recording.headers_seen == []

"""Cold start: what local mode never uses is never imported. The provider SDKs, authlib
(google mode's sign-in) and the MCP SDK cost about 1.0, 0.4 and 1.7-2.2 s of imports, PyJWT
and cryptography (tokens and secrets) about 30 ms and 7 MiB; they load on first use. The
shipped embedding model (about 50 ms and 25 MiB) loads on the first text embedded. In a
fresh interpreter, as a server process starts."""

import json
import subprocess
import sys
from pathlib import Path

LAZY = [
    "openai",
    "anthropic",
    "authlib",
    "mcp",
    "sentence_transformers",
    "torch",
    "cryptography",
    "jwt",
    "aiohttp",
    "boto3",  # DynamoDB mode's SDK (about 0.1 s); the store's codec writes items without it
    "botocore",
]

PROBE = """
import json, sys
from pathlib import Path
from fastapi.testclient import TestClient
from api.config import Settings
from api.main import create_app
app = create_app(Settings(sqlite_path=Path(sys.argv[1]) / "app.db", encryption_key="k" * 40))
from api.embeddings import onnx
with TestClient(app, base_url="http://127.0.0.1") as client:
    assert client.get("/health").json()["embedding_dimension"] == 384
    assert client.get("/agents").status_code == 200
    modules = sorted({name.split(".")[0] for name in sys.modules})
    assert client.post("/agents", json={"name": "probe"}).status_code == 201
    found = client.post("/messages/search", json={"agent_name": "probe", "query": "pizza"})
    assert found.status_code == 200, found.text
    used = onnx._shipped.cache_info().currsize
    static = "api.embeddings.static" in sys.modules
    aws = sorted(m for m in ("boto3", "botocore") if m in sys.modules)  # after writes too
seen = {"modules": modules, "model_loaded": used, "static": static, "aws_after_writes": aws}
print(json.dumps(seen))
"""


def test_a_started_local_server_has_not_imported_what_it_does_not_use(tmp_path: Path) -> None:
    ran = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    seen = json.loads(ran.stdout.strip().splitlines()[-1])
    loaded = set(seen["modules"])
    assert {"api", "fastapi"} <= loaded  # the probe saw its own imports
    assert loaded.isdisjoint(LAZY), sorted(loaded & set(LAZY))
    # The default model loads in a thread at the start (off its path), once; the static
    # model, not in use, is never imported.
    assert (seen["model_loaded"], seen["static"]) == (1, False)
    assert seen["aws_after_writes"] == []

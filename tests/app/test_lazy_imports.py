"""Cold start: what local mode never uses is never imported. The provider SDKs, authlib
(google mode's sign-in) and the MCP SDK cost about 1.0, 0.4 and 1.7-2.2 s of imports; they
load on first use. In a fresh interpreter, as a server process starts."""

import json
import subprocess
import sys
from pathlib import Path

LAZY = ["openai", "anthropic", "authlib", "mcp", "sentence_transformers", "torch"]

PROBE = """
import json, sys
from pathlib import Path
from fastapi.testclient import TestClient
from api.config import Settings
from api.main import create_app
app = create_app(Settings(sqlite_path=Path(sys.argv[1]) / "app.db", encryption_key="k" * 40))
with TestClient(app, base_url="http://127.0.0.1") as client:
    assert client.get("/health").status_code == 200
    assert client.get("/agents").status_code == 200
print(json.dumps(sorted({name.split(".")[0] for name in sys.modules})))
"""


def test_a_started_local_server_has_not_imported_what_it_does_not_use(tmp_path: Path) -> None:
    ran = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    loaded = set(json.loads(ran.stdout.strip().splitlines()[-1]))
    assert {"api", "fastapi"} <= loaded  # the probe saw its own imports
    assert loaded.isdisjoint(LAZY), sorted(loaded & set(LAZY))

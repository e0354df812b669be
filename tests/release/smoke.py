"""What a user of an installed server or of the image sees first: the server answers
`/health` with the project's version, serves the web app at `/` (and its files), the
OpenAPI docs, and one agent chatting with the offline model (no key needed)."""

import json
import re
from typing import Any

import httpx2

PAGE = {"accept": "text/html,application/xhtml+xml"}  # a browser opening a URL


def check_server(root: str, version: str) -> dict[str, Any]:
    """Each check, or an AssertionError naming the one that failed; what the server said."""
    with httpx2.Client(base_url=root, timeout=60) as http:
        health = http.get("/health")
        assert health.status_code == 200, health.text
        said: dict[str, Any] = health.json()
        assert said["status"] == "ok"
        assert said["version"] == version, said

        page = http.get("/", headers=PAGE)
        assert page.status_code == 200, f"/ answered {page.status_code}: {page.text[:300]}"
        assert page.headers["content-type"].startswith("text/html")
        assert '<div id="root">' in page.text
        assert '<meta name="auth-mode" content="local">' in page.text
        assets = re.findall(r'(?:src|href)="(/assets/[^"]+)"', page.text)
        assert assets, "the page names none of the app's files"
        for asset in assets:
            got = http.get(asset)
            assert got.status_code == 200, f"{asset}: {got.status_code}"
        # seed 004's dashboard_url, a page that shares its path with the API
        assert http.get("/agents/x", headers=PAGE).headers["content-type"].startswith("text/")

        docs = http.get("/docs")
        assert docs.status_code == 200
        assert "swagger" in docs.text.lower()

        made = http.post("/agents", json={"name": "Kit"})
        assert made.status_code == 201, made.text
        agent = made.json()["id"]
        prompt = "My name is Alice and I work at Google"
        body = {"agent_id": agent, "prompt": prompt}
        with http.stream("POST", "/chat", json=body) as turn:
            assert turn.status_code == 200, turn.read()
            stream = "".join(turn.iter_text())
        events = re.findall(r"^event: ([^\r\n]+)", stream, flags=re.MULTILINE)
        assert events[0] == "run.started", stream[:500]
        assert events[-1] == "run.completed", stream[-500:]
        assert "text.delta" in events
        blocks = http.get(f"/agents/{agent}/memory/blocks")
        assert blocks.status_code == 200, blocks.text
        assert "Alice" in json.dumps(blocks.json()), "the turn's memory edit is not stored"
    return said

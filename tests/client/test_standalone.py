"""The client needs nothing of the server's code: `learning()` in a process where the
server's packages cannot be imported still fetches memory and stores the exchange, and
loads none of the server's own dependencies."""

import json
import subprocess
import sys

from tests.client.server_process import MemoryServer
from tests.fakes.llm_servers import FakeLLM, Reply

SCRIPT = """
import json, sys
for name in ("api", "bench", "tests"):  # the repository's packages: any import fails
    sys.modules[name] = None
from openai import OpenAI
from client import learning

agent, server_url, base_url = sys.argv[1:4]
oai = OpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
with learning(agent, server_url=server_url) as memory:
    oai.chat.completions.create(
        model="gpt-4", messages=[{"role": "user", "content": "My name is Alice."}]
    )
with learning(agent, server_url=server_url) as memory:
    answer = oai.chat.completions.create(
        model="gpt-4", messages=[{"role": "user", "content": "What is my name?"}]
    )
server_side = ("fastapi", "starlette", "uvicorn", "numpy", "pydantic_settings", "bm25s")
print(json.dumps({
    "answer": answer.choices[0].message.content,
    "stored": memory.stored,
    "failures": memory.capture_failures + memory.context_failures,
    "loaded": sorted(m for m in server_side if m in sys.modules),
}))
"""


def test_learning_works_with_none_of_the_servers_code(
    server: MemoryServer, agent: str, fake_openai: FakeLLM
) -> None:
    fake_openai.replies += [Reply(text="Hello Alice."), Reply(text="You are Alice.")]
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, agent, server.url, fake_openai.base_url],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out == {"answer": "You are Alice.", "stored": 2, "failures": 0, "loaded": []}
    assert "Alice" in fake_openai.requests[-1]["messages"][0]["content"]  # memory went in
    assert server.said(agent) == [
        ("user", "My name is Alice."),
        ("assistant", "Hello Alice."),
        ("user", "What is my name?"),
        ("assistant", "You are Alice."),
    ]

import openai
from tests.openai_compat.conftest import Server, user_says
from tests.openai_compat.test_errors import HELLO, post
from tests.fakes.llm_servers import FakeLLM, Reply
from tests.runs.test_resume import STORY
from tests.runtime.conftest import use_openai
from tests.openai_compat.conftest import *  # noqa

def test_dbg(server: Server, sdk: openai.OpenAI, fake_openai: FakeLLM) -> None:
    use_openai(server.http, fake_openai)
    fake_openai.replies.append(Reply(text=STORY, stall_after_chunks=3))
    body = {"model": "Scripted", "messages": HELLO, "user": "s", "stream": True}
    with server.http.stream("POST", "/v1/chat/completions", json=body) as running:
        next(running.iter_lines())
        busy = post(server, {**body, "stream": False}, **{"X-Wait": "false"})
        print(busy.status_code)
        r = sdk.chat.completions.with_raw_response.create(model="Scripted", messages=HELLO, user="s", extra_headers={"X-Wait": "false"})
        print(r.http_response.status_code, r.http_response.text, r.http_response.request.headers)
        print(fake_openai.requests[-1]["messages"])

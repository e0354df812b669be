"""`agent-memory serve` for the google-mode browser test, with access tokens that live for
seconds: `python -m tests.web.short_tokens PORT SECONDS`. ACCESS_TOKEN_MINUTES allows whole
minutes only, so the test would wait one out; create_app's `access_token_seconds` is a
keyword for code like this, never a setting a deployment could get wrong."""

import sys

import uvicorn

from api.config import load_settings
from api.main import create_app
from api.observability.logs import configure_logging


def main(port: int, seconds: int) -> None:
    settings = load_settings()
    configure_logging(settings)
    app = create_app(settings, access_token_seconds=seconds)
    uvicorn.run(app, host="127.0.0.1", port=port, log_config=None, access_log=False)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))

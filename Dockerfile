# Image for the agent-memory API.
#
# No Docker engine runs on the development machine, so this file is checked by reading.
#   docker build -t agent-memory .
#   docker run --rm -p 127.0.0.1:8283:8283 -v agent-memory-data:/data agent-memory
#
# The project is installed editable (the uv default): the venv's .pth file and the
# console script's shebang hold absolute paths under /app, so the builder and runtime
# stages both use /app, and both use the same base image so the venv's python symlink
# (/usr/local/bin/python3.11) resolves in the runtime stage too. Editable also keeps
# api/ and infra/ side by side, as api/store/definition.py reads
# <project root>/infra/template.yaml at run time.

# ---- builder --------------------------------------------------------------------------
FROM python:3.11-slim AS builder

# Pinned to the uv that wrote uv.lock.
COPY --from=ghcr.io/astral-sh/uv:0.13.9 /uv /uvx /bin/

ENV UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_NO_CACHE=1 \
    UV_PYTHON_DOWNLOADS=never \
    UV_PYTHON=/usr/local/bin/python3.11 \
    UV_PROJECT_ENVIRONMENT=/app/.venv

WORKDIR /app

# Dependencies first: this layer is rebuilt only when the lock or project metadata change.
COPY pyproject.toml uv.lock README.md ./
RUN uv sync --frozen --no-dev --no-install-project

# Then the application itself.
COPY api/ ./api/
COPY infra/ ./infra/
# UV_COMPILE_BYTECODE compiles the dependencies; the project is installed editable, so its
# own modules are compiled here: the runtime stage cannot write bytecode (read-only code,
# PYTHONDONTWRITEBYTECODE) and would otherwise compile them at every start.
RUN uv sync --frozen --no-dev && /app/.venv/bin/python -m compileall -q api

# ---- runtime --------------------------------------------------------------------------
FROM python:3.11-slim AS runtime

RUN groupadd --system --gid 10001 app \
    && useradd --system --uid 10001 --gid app --home-dir /home/app --create-home \
       --shell /usr/sbin/nologin app \
    && mkdir -p /data \
    && chown app:app /data

WORKDIR /app

# Code and venv stay owned by root (read-only to the app); only /data is writable.
COPY --from=builder /app /app

ENV PATH=/app/.venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    SQLITE_PATH=/data/agent-memory.db \
    ALLOW_REMOTE=true
# ALLOW_REMOTE: inside a container the server must bind 0.0.0.0 for a published port to
# reach it. It only permits that bind: with the default AUTH_MODE=local the server still
# answers only requests addressed to localhost (ALLOWED_HOSTS), so publish the port on the
# host's loopback (-p 127.0.0.1:8283:8283), or use AUTH_MODE=google.

# Declared after the chown above so a fresh volume starts owned by the app user.
VOLUME ["/data"]

USER app

EXPOSE 8283

# python:3.11-slim has no curl; urlopen raises (non-zero exit) on errors and HTTP >= 400.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8283/health', timeout=3)"]

CMD ["agent-memory", "serve", "--host", "0.0.0.0", "--port", "8283"]

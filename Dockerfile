# syntax=docker/dockerfile:1
# The agent-memory server with its web app, in three stages (docs/install.md):
#   docker build -t agent-memory .
#   docker run --rm -p 127.0.0.1:8283:8283 -v agent-memory-data:/data agent-memory
# then http://localhost:8283/ is the web app, /docs the API's, /health the health check.
#
# No container engine runs on our machines, so tests/release/test_image.py replays this file
# step by step outside a container (.ci/release-check): each stage in an empty directory of
# its own, the same files copied, the same RUN commands and environment, the same command
# line; then it checks /, /health and a chat turn of that server. Keep to what it replays:
# COPY (from the context or a stage), RUN, ENV, WORKDIR, and absolute paths in the image's
# own directories (/web, /app, /data). hadolint lints it (.ci/run).

# ---- web: the single-page app, built by Node ---------------------------------------------
FROM node:22-slim AS web
WORKDIR /web
COPY web/package.json web/package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY web/index.html web/tsconfig.json web/vite.config.ts ./
COPY web/src ./src
COPY web/scripts/compress.mjs ./scripts/
RUN npm run build

# ---- build: the locked dependencies, then the server's wheel, into /app/.venv ------------
FROM python:3.11-slim AS build

# Pinned to the uv that wrote uv.lock.
COPY --from=ghcr.io/astral-sh/uv:0.13.9 /uv /uvx /bin/

# The venv is relocatable (its scripts find their python beside them), so it works wherever
# it is copied; its python is the base image's, the same path in the runtime stage.
ENV UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_PYTHON_DOWNLOADS=never \
    UV_PYTHON=/usr/local/bin/python3.11 \
    UV_PROJECT_ENVIRONMENT=/app/.venv

WORKDIR /app/src
RUN uv venv --relocatable /app/.venv

# The locked dependencies first, without dev tools (this layer changes with the lock only).
COPY pyproject.toml uv.lock README.md ./
RUN --mount=type=cache,target=/root/.cache/uv \
    uv sync --frozen --no-dev --no-install-project

# Then the server, installed as its wheel (not editable): the build hook (hatch_build.py)
# puts the table's template and the web app built above into the package.
COPY hatch_build.py ./
COPY infra/template.yaml ./infra/
COPY web/src/pages.json ./web/src/
COPY --from=web /web/dist ./web/dist
COPY api ./api
RUN --mount=type=cache,target=/root/.cache/uv \
    uv sync --frozen --no-dev --no-editable

# ---- runtime: the venv alone, a user without privileges --------------------------------
FROM python:3.11-slim AS runtime

RUN groupadd --system --gid 10001 app \
    && useradd --system --uid 10001 --gid app --home-dir /home/app --create-home \
       --shell /usr/sbin/nologin app \
    && mkdir -p /data \
    && chown app:app /data

# Owned by root, read-only to the app: only /data is written.
COPY --from=build /app/.venv /app/.venv
WORKDIR /app

# HOST 0.0.0.0: in a container the server must listen on every interface for a published
# port to reach it; ALLOW_REMOTE permits that bind in AUTH_MODE=local, which still answers
# only requests addressed to localhost (ALLOWED_HOSTS): publish the port on the host's
# loopback (-p 127.0.0.1:8283:8283), or run AUTH_MODE=google behind TLS.
ENV PATH=/app/.venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    HOST=0.0.0.0 \
    PORT=8283 \
    ALLOW_REMOTE=true \
    SQLITE_PATH=/data/agent-memory.db

# Declared after the chown above, so a fresh volume starts owned by the app's user.
VOLUME ["/data"]

USER 10001:10001

EXPOSE 8283

# python:3.11-slim has no curl; urlopen raises (a non-zero exit) on errors and HTTP >= 400.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request as r; r.urlopen('http://127.0.0.1:%s/health' % os.environ.get('PORT', '8283'), timeout=3)"]

CMD ["agent-memory", "serve"]

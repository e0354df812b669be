#!/usr/bin/env bash
# Builds web/dist when web's sources changed since the last build: a stamp holds the hash of
# the sources and the lock file. `npm ci` runs when package-lock.json changed since the last
# install. Nothing built is committed (docs/web.md).
#   --optional: without Node, warn and go on (`./dev serve` then explains at `/` how to build).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v npm >/dev/null 2>&1; then
  if [[ "${1:-}" == "--optional" ]]; then
    echo "warning: npm not found: the web app is not built or rebuilt (needs Node 20.19+)" >&2
    exit 0
  fi
  echo "error: npm not found: building the web app needs Node 20.19+ and npm" >&2
  exit 1
fi

hash_of() { find "$@" -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1; }

lock=$(hash_of package-lock.json)
if [[ ! -f node_modules/.installed-lock || "$(cat node_modules/.installed-lock)" != "$lock" ]]; then
  echo "web: npm ci" >&2
  npm ci --no-audit --no-fund --loglevel=error >&2
  echo "$lock" > node_modules/.installed-lock
fi

sources=$(hash_of src index.html package.json package-lock.json vite.config.ts tsconfig.json scripts)
if [[ ! -f dist/.stamp || "$(cat dist/.stamp)" != "$sources" ]]; then
  echo "web: npm run build" >&2
  npm run build --silent >&2
  echo "$sources" > dist/.stamp
fi

#!/usr/bin/env bash
# The browser tests drive Debian's Chromium (/usr/bin/chromium) with Playwright; Playwright's
# own browser download is never used. Installed from Debian's packages when missing, as CI
# runs as root on a fresh machine; elsewhere without root or sudo, say how and go on (the
# browser tests then skip, except under CI=true where they fail).
set -euo pipefail

[[ -x /usr/bin/chromium ]] && exit 0
if [[ "$(id -u)" == 0 ]]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  sudo=(sudo -n)
else
  echo "warning: /usr/bin/chromium is missing; install it with: sudo apt-get install chromium" >&2
  exit 0
fi
echo "installing chromium from Debian's packages" >&2
"${sudo[@]}" apt-get update -qq >&2
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends chromium >&2

#!/usr/bin/env bash
# Installs playwright-core, pinned by tests/serve/package-lock.json, into
# target/browser-tools/ for approve-in-browser.mjs, and prints the NODE_PATH
# to use (the only line on stdout):
#   NODE_PATH=$(bash tests/serve/setup-browser.sh) node tests/serve/approve-in-browser.mjs URL approve
# No browser is downloaded: the harness drives Debian's chromium
# (/usr/bin/chromium; `apt-get install -y chromium`). Needs node >= 20 and npm.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest="$here/../../target/browser-tools"
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)

if ! command -v npm >/dev/null 2>&1; then
  echo "setup-browser.sh: npm not found; install Node.js 20+ with npm (Debian: apt-get install -y nodejs npm)" >&2
  exit 1
fi
# Reinstall only when the pinned lock changed or the package is missing;
# one caller at a time (the serve tests run two browser tests at once, and
# `npm ci` removes node_modules before it installs).
exec 9>"$dest/.install-lock"
flock 9
if ! cmp -s "$here/package-lock.json" "$dest/package-lock.json" \
  || [ ! -f "$dest/node_modules/playwright-core/package.json" ]; then
  cp "$here/package.json" "$here/package-lock.json" "$dest/"
  (cd "$dest" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error) >&2
fi
echo "$dest/node_modules"

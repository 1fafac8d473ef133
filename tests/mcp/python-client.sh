#!/usr/bin/env bash
# `lobster mcp` driven by the official Python MCP SDK (PyPI `mcp`, pinned
# below) in a venv this script creates, in the SDK's legacy (2025-11-25
# handshake) and auto (2026-07-28) modes. See python_client.py.
#   bash tests/mcp/python-client.sh           # the venv (when missing), then the test
#   bash tests/mcp/python-client.sh --setup   # the venv only (.ci/run, beside clippy)
set -euo pipefail
cd "$(dirname "$0")/../.."

MCP_VERSION=2.3.0
TARGET=${CARGO_TARGET_DIR:-target}
VENV=${LOBSTER_MCP_VENV:-$TARGET/mcp-venv}

if ! "$VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$MCP_VERSION')" 2>/dev/null; then
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "mcp==$MCP_VERSION"
fi
if [ "${1:-}" = --setup ]; then
  exit 0
fi

cargo build --quiet -p lobster
for mode in legacy auto; do
  "$VENV/bin/python" tests/mcp/python_client.py "$TARGET/debug/lobster" "$mode"
done

#!/usr/bin/env bash
# Installs the second MCP client the tests use (adapters/mcp/tests/test_mcp_inspector.py): the
# MCP Inspector's CLI (@modelcontextprotocol/inspector 2.12.0 from the npm registry) under
# ${SAB_VENV:-.venv}/mcp-inspector, with Debian's nodejs and npm (as root) when they are missing.
# Its package asks for Node 22; its CLI runs on Debian's Node 20 (docs/MCP.md says what does
# not: a proxy variable in its environment). Idempotent. Prints the CLI's path on stdout; the
# tests take it from SAB_MCP_INSPECTOR, else from that path.
# Usage: scripts/mcp-inspector.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

version=2.12.0
log() { printf '[mcp-inspector] %s\n' "$*" >&2; }

# shellcheck source=scripts/apt.sh
. scripts/apt.sh
command -v npm >/dev/null || apt_install nodejs npm

prefix=${SAB_VENV:-.venv}/mcp-inspector
cli=$prefix/node_modules/.bin/mcp-inspector
installed=$prefix/node_modules/@modelcontextprotocol/inspector/package.json
if [ ! -x "$cli" ] || ! grep -q "\"version\": \"$version\"" "$installed" 2>/dev/null; then
  log "installing @modelcontextprotocol/inspector@$version under $prefix"
  mkdir -p "$prefix"
  npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error \
    "@modelcontextprotocol/inspector@$version" >&2
fi
printf '%s\n' "$(cd "$(dirname "$cli")" && pwd)/mcp-inspector"

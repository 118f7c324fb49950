#!/usr/bin/env bash
# Installs (from Debian's packages, idempotently, as root) the headless browser that the tests
# of the bridge's web page use (adapters/common/tests/test_conversations_page.py, through
# adapters/testing/browser_testing.py): Debian's `chromium`, and a font for the text of its
# screenshots (headless Chromium draws none without one). Nothing else is downloaded.
# Prints the browser's path on stdout; the tests take it from SAB_CHROMIUM, else from PATH.
# Usage: scripts/browser.sh
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
log() { printf '[browser] %s\n' "$*" >&2; }

# shellcheck source=scripts/apt.sh
. "$here/apt.sh"

apt_install chromium fonts-dejavu-core

path=$(command -v chromium || true)
if [ -z "$path" ]; then
  log "chromium is installed but not on PATH"
  exit 1
fi
"$path" --version >&2 || { log "$path does not run"; exit 1; }
printf '%s\n' "$path"

#!/usr/bin/env bash
# Install what the HTML export test (tests/notebook/test_html_export.py) needs in a browser:
# Debian's chromium when /usr/bin/chromium is missing, and the pinned npm packages of engine/web
# (@jupyter-widgets/html-manager and requirejs), so exported notebooks load their widget
# renderer from 127.0.0.1 and never from a CDN. `npm ci` installs exactly package-lock.json and
# is skipped when node_modules already holds that lock.
#
# Under CI ($CI set) any failure is fatal; on a developer machine a failure is a warning and the
# test skips itself, so a laptop without apt or npm can still run the rest of `make test`.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WEB="$ROOT/engine/web"
CHROMIUM=/usr/bin/chromium

fail() {
  echo "install-browser-deps: $*" >&2
  if [ -n "${CI:-}" ]; then
    exit 1
  fi
  echo "install-browser-deps: continuing; tests/notebook/test_html_export.py will be skipped" >&2
  exit 0
}

if [ ! -x "$CHROMIUM" ]; then
  if [ "$(id -u)" -eq 0 ]; then
    SUDO=()
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO=(sudo -n)
  else
    fail "$CHROMIUM is missing and apt-get needs root (run: sudo apt-get install -y chromium)"
  fi
  command -v apt-get >/dev/null 2>&1 || fail "$CHROMIUM is missing and this is not a Debian system"
  echo "install-browser-deps: installing Debian's chromium with apt-get" >&2
  "${SUDO[@]}" apt-get update -q || fail "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -q chromium \
    || fail "apt-get install chromium failed"
fi

command -v npm >/dev/null 2>&1 || fail "npm is missing (install Node.js 18 or newer)"
STAMP="$WEB/node_modules/.samza-nb-package-lock.json"
if [ -f "$STAMP" ] && cmp -s "$WEB/package-lock.json" "$STAMP"; then
  exit 0
fi
echo "install-browser-deps: npm ci in engine/web" >&2
npm ci --prefix "$WEB" --no-audit --no-fund --loglevel=error || fail "npm ci in engine/web failed"
cp "$WEB/package-lock.json" "$STAMP"

#!/usr/bin/env bash
# Install what the browser tests need (tests/notebook/test_browser_*.py, the real-browser suite
# that drives JupyterLab, and tests/notebook/test_html_export.py): Debian's chromium at
# /usr/bin/chromium, which Playwright drives through `executable_path` (Playwright never
# downloads a browser here: no `playwright install`). The Python packages (jupyterlab,
# playwright) come with the venv: `pip install -e ".[notebooks]"` (make install).
#
# Under CI ($CI set) any failure is fatal; on a developer machine a failure is a warning and the
# browser tests skip themselves, so a laptop without apt can still run the rest of `make test`.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CHROMIUM=/usr/bin/chromium
PYTHON="$ROOT/.venv/bin/python"

fail() {
  echo "install-browser-deps: $*" >&2
  if [ -n "${CI:-}" ]; then
    exit 1
  fi
  echo "install-browser-deps: continuing; the browser tests will be skipped" >&2
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
"$CHROMIUM" --version >/dev/null 2>&1 || fail "$CHROMIUM does not start"

if [ -x "$PYTHON" ]; then
  "$PYTHON" -c "import playwright.sync_api, jupyterlab" 2>/dev/null \
    || fail "playwright or jupyterlab is missing from .venv: run make install"
fi

#!/usr/bin/env bash
# Runs every benchmark in bench/; each prints its own baseline and ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
for script in bench/*.py; do
  echo "== $script"
  .venv/bin/python "$script"
done

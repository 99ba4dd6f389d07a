#!/usr/bin/env bash
# Runs every benchmark in bench/; each prints its own baseline and ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
for script in bench/*.py; do
  case "$(basename "$script")" in _*) continue ;; esac  # helpers, not benches
  echo "== $script"
  .venv/bin/python "$script"
done

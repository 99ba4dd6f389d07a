#!/usr/bin/env bash
# Runs every benchmark in bench/; each prints its own baseline and ratios. The Kafka and
# rebalance benches need the engine-room services: they are started here (in .services-bench)
# and stopped whatever happens. A bench that fails does not stop the others;
# the run then fails, naming it.
set -uo pipefail
cd "$(dirname "$0")/.."
VENV=.venv
# A folder of their own: a bench run must not stop the services of a test run in this checkout.
export SAMZA_NB_SERVICES_DIR="${SAMZA_NB_SERVICES_DIR:-$PWD/.services-bench}"
. engine/_services_trap.sh
"$VENV/bin/samza-nb" services install || exit 1
"$VENV/bin/samza-nb" services up || exit 1
failed=()
for script in bench/*.py; do
  case "$(basename "$script")" in _*) continue ;; esac  # helpers, not benches
  echo "== $script"
  "$VENV/bin/python" "$script" || failed+=("$script")
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "run-bench: failed: ${failed[*]}" >&2
  exit 1
fi

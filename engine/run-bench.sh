#!/usr/bin/env bash
# Runs every benchmark in bench/; each prints its own baseline and ratios. The Kafka and
# rebalance benches need the engine-room services: they are started here (in .services, as
# for the tests) and stopped whatever happens. A bench that fails does not stop the others;
# the run then fails, naming it.
set -uo pipefail
cd "$(dirname "$0")/.."
VENV=.venv
export SAMZA_NB_SERVICES_DIR="${SAMZA_NB_SERVICES_DIR:-$PWD/.services}"
export SAMZA_NB_SERVICES_ENV="$SAMZA_NB_SERVICES_DIR/services.env"

stop_services() {
  local status=$?
  if ! "$VENV/bin/samza-nb" services down; then
    echo "run-bench: stopping the services failed; see the messages above" >&2
    [ "$status" -eq 0 ] && status=1
  fi
  exit "$status"
}
trap stop_services EXIT

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

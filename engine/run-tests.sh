#!/usr/bin/env bash
# Lint, type-check and test with the engine-room services up; stops them whatever happens.
set -uo pipefail
cd "$(dirname "$0")/.."
VENV=.venv
export SAMZA_NB_SERVICES_DIR="${SAMZA_NB_SERVICES_DIR:-$PWD/.services}"
export SAMZA_NB_SERVICES_ENV="$SAMZA_NB_SERVICES_DIR/services.env"

# Runs on every exit; a failed stop (a process left behind) fails the run even if tests passed.
stop_services() {
  local status=$?
  if ! "$VENV/bin/samza-nb" services down; then
    echo "run-tests: stopping the services failed; see the messages above" >&2
    [ "$status" -eq 0 ] && status=1
  fi
  exit "$status"
}
trap stop_services EXIT

"$VENV/bin/ruff" check samza_nb tests bench engine || exit 1
"$VENV/bin/mypy" || exit 1
"$VENV/bin/samza-nb" services install || exit 1
bash engine/install-browser-deps.sh || exit 1
"$VENV/bin/samza-nb" services up || exit 1
"$VENV/bin/python" -m pytest "$@"
status=$?
exit $status

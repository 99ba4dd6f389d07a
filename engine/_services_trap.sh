# Sourced by run-tests.sh and run-bench.sh: the engine-room services live in <repo>/.services
# (unless SAMZA_NB_SERVICES_DIR says otherwise) and are stopped on every exit; a failed stop
# (a process left behind) fails the run even when everything else passed. Expects $VENV.
export SAMZA_NB_SERVICES_DIR="${SAMZA_NB_SERVICES_DIR:-$PWD/.services}"
export SAMZA_NB_SERVICES_ENV="$SAMZA_NB_SERVICES_DIR/services.env"

stop_services() {
  local status=$?
  if ! "$VENV/bin/samza-nb" services down; then
    echo "$(basename "$0"): stopping the services failed; see the messages above" >&2
    [ "$status" -eq 0 ] && status=1
  fi
  exit "$status"
}
trap stop_services EXIT

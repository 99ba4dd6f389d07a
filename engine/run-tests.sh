#!/usr/bin/env bash
# Lint, type-check and test with the engine-room services up; stops them whatever happens.
set -uo pipefail
cd "$(dirname "$0")/.."
VENV=.venv
. engine/_services_trap.sh

# The services' install (npm and wheels: the network and the disk) runs while the checks and
# the Spark class-data archive use the CPU; a failure on either side fails the run.
"$VENV/bin/samza-nb" services install &
services_install=$!
ready() {
  "$VENV/bin/ruff" check samza_nb tests bench engine || return 1
  "$VENV/bin/mypy" || return 1
  # Spark drivers map their classes from an archive made once (runtime/executors/class_archive.py).
  "$VENV/bin/python" -m samza_nb.runtime.executors.class_archive --if-missing
  bash engine/install-browser-deps.sh || return 1
}
if ! ready; then
  kill "$services_install" 2>/dev/null
  wait "$services_install"
  exit 1
fi
wait "$services_install" || exit 1
"$VENV/bin/samza-nb" services up || exit 1
echo "run-tests: checks, installs and services ready after ${SECONDS} s"
# The suite mostly waits (ZooKeeper sessions, Azure leases, processes, browsers): three workers
# fill the two cores; tests of one file stay together on one worker, the longest files first
# (tests/conftest.py orders them; xdist keeps that order).
"$VENV/bin/python" -m pytest -n "${SAMZA_NB_TEST_WORKERS:-3}" --dist loadfile --no-loadscope-reorder \
    --durations=30 "$@"
status=$?
exit $status

#!/usr/bin/env bash
# Lint, type-check and test with the engine-room services up; stops them whatever happens.
set -uo pipefail
cd "$(dirname "$0")/.."
VENV=.venv
. engine/_services_trap.sh

"$VENV/bin/ruff" check samza_nb tests bench engine || exit 1
"$VENV/bin/mypy" || exit 1
"$VENV/bin/samza-nb" services install || exit 1
# Spark drivers map their classes from an archive made once (runtime/executors/class_archive.py).
"$VENV/bin/python" -m samza_nb.runtime.executors.class_archive --if-missing
bash engine/install-browser-deps.sh || exit 1
"$VENV/bin/samza-nb" services up || exit 1
# The suite mostly waits (ZooKeeper sessions, Azure leases, processes, browsers): three workers
# fill the two cores; tests of one file stay together on one worker, the longest files first
# (tests/conftest.py orders them; xdist keeps that order).
"$VENV/bin/python" -m pytest -n "${SAMZA_NB_TEST_WORKERS:-3}" --dist loadfile --no-loadscope-reorder \
    --durations=30 "$@"
status=$?
exit $status

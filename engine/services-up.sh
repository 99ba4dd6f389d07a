#!/usr/bin/env bash
# Start ZooKeeper, the Kafka test broker and Azurite (or the named services).
# Thin wrapper over `samza-nb services up` (samza_nb/services); extra arguments are passed on.
set -euo pipefail
. "$(dirname "$0")/_samza_nb.sh"
exec "$SAMZA_NB" services up "$@"

#!/usr/bin/env bash
# Start the local Spark standalone master and its two workers.
# Thin wrapper over `samza-nb services up spark` (samza_nb/services); extra arguments are passed on.
set -euo pipefail
. "$(dirname "$0")/_samza_nb.sh"
exec "$SAMZA_NB" services up spark "$@"

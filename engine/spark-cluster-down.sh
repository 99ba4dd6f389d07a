#!/usr/bin/env bash
# Stop the local Spark standalone master and workers.
# Thin wrapper over `samza-nb services down spark` (samza_nb/services); extra arguments are passed on.
set -euo pipefail
. "$(dirname "$0")/_samza_nb.sh"
exec "$SAMZA_NB" services down spark "$@"

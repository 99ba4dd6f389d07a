#!/usr/bin/env bash
# Stop every service started here (Spark standalone included); nothing is left running.
# Thin wrapper over `samza-nb services down` (samza_nb/services); extra arguments are passed on.
set -euo pipefail
. "$(dirname "$0")/_samza_nb.sh"
exec "$SAMZA_NB" services down "$@"

#!/usr/bin/env bash
# Print where each service runs and the env file with their addresses.
# Thin wrapper over `samza-nb services status` (samza_nb/services); extra arguments are passed on.
set -euo pipefail
. "$(dirname "$0")/_samza_nb.sh"
exec "$SAMZA_NB" services status "$@"

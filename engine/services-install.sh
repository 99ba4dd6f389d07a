#!/usr/bin/env bash
# Install what the services need (the pinned Azurite npm package).
# Thin wrapper over `samza-nb services install` (samza_nb/services); extra arguments are passed on.
set -euo pipefail
. "$(dirname "$0")/_samza_nb.sh"
exec "$SAMZA_NB" services install "$@"

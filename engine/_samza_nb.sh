# Sourced by the engine/ scripts: run the samza-nb CLI of this checkout's .venv, with the
# services folder defaulting to <repo>/.services whatever the caller's working directory.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export SAMZA_NB_SERVICES_DIR="${SAMZA_NB_SERVICES_DIR:-$ROOT/.services}"
SAMZA_NB="$ROOT/.venv/bin/samza-nb"
if [ ! -x "$SAMZA_NB" ]; then
  SAMZA_NB="$(command -v samza-nb || true)"
fi
if [ -z "$SAMZA_NB" ]; then
  echo "samza-nb is not installed: run 'make install' (or pip install -e .) first" >&2
  exit 1
fi

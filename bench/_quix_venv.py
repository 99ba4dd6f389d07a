"""The Quix Streams venv: bench/kafka.py's peer lives in ``bench/.quix-venv``, apart from the
dev venv and from ``.bench-venv`` (its confluent-kafka pin may differ from both).

Created on first use with ``python -m venv`` and ``pip install quixstreams`` from the package
index; a venv that cannot be made is reported and the peer is skipped.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

VENV = Path(os.environ.get("SAMZA_NB_QUIX_VENV", Path(__file__).resolve().parent / ".quix-venv"))


def ensure() -> Path | None:
    """The Quix venv's Python, created and filled on first use; None when it cannot be."""
    py = VENV / "bin" / "python"
    try:
        if not py.exists():
            subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        probe = subprocess.run([str(py), "-c", "import quixstreams"], capture_output=True, check=False)
        if probe.returncode != 0:
            subprocess.run([str(py), "-m", "pip", "install", "-q", "quixstreams"], check=True, timeout=900)
    except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
        print(f"Quix Streams venv {VENV} unavailable ({error}); the Quix Streams row is skipped")
        return None
    return py

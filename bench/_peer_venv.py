"""The bench virtualenv: peers (bytewax, orjson, apache-beam) live apart from the dev venv.

Their pins may fight pyspark and pyarrow, and they would slow ``make install``; so the benches
create ``.bench-venv`` beside ``.venv`` on first use (``pip install`` from the package index)
and run the peers there, in subprocesses, on the same input files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
VENV = Path(os.environ.get("SAMZA_NB_BENCH_VENV", ROOT / ".bench-venv"))
PEERS = ("bytewax", "orjson")
#: Installed when possible; a peer that does not install or import is reported as skipped.
OPTIONAL = ("apache-beam",)


def python() -> Path:
    return VENV / "bin" / "python"


def ensure(*, optional: bool = True) -> Path | None:
    """The bench venv's Python, created and filled on first use; None when it cannot be."""
    py = python()
    try:
        if not py.exists():
            subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        missing = [name for name in PEERS if not _has(py, name)]
        if missing:
            subprocess.run([str(py), "-m", "pip", "install", "-q", *missing], check=True)
        if optional and not _has(py, "apache_beam") and not (VENV / ".no-beam").exists():
            done = subprocess.run([str(py), "-m", "pip", "install", "-q", *OPTIONAL], check=False)
            if done.returncode != 0:
                (VENV / ".no-beam").write_text("apache-beam did not install here\n")
    except (OSError, subprocess.CalledProcessError) as error:
        print(f"bench venv {VENV} unavailable ({error}); peers in it are skipped")
        return None
    return py


def _has(py: Path, module: str) -> bool:
    module = module.replace("-", "_")
    done = subprocess.run([str(py), "-c", f"import {module}"], capture_output=True, check=False)
    return done.returncode == 0


def run_script(script: str, *args: str, timeout: float = 1800) -> dict[str, Any] | None:
    """Run ``script`` (Python source) in the bench venv; it prints one JSON object last."""
    py = ensure()
    if py is None:
        return None
    done = subprocess.run(
        [str(py), "-c", script, *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        print(f"  peer failed: {' | '.join(tail)}")
        return None
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def has_beam() -> bool:
    """Whether apache-beam is in the bench venv (``ensure`` tries to install it once)."""
    py = ensure()
    return py is not None and _has(py, "apache_beam")

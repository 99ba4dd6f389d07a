"""Run the notebooks of notebooks/ under papermill, in a kernel that uses this interpreter.

The kernelspec is written to a temporary folder that is put on ``JUPYTER_PATH`` only while
papermill starts the kernel, so the tests never depend on (or change) a user's global
kernelspecs. Every notebook gets the same small parameters (the names every ``parameters``
cell defines) and a fresh data folder; the executed notebook is kept under
``.artifacts/notebooks/`` for inspection, also when it fails. An execution is cached for the
session, so the HTML export test reuses the 03-drain run of test_notebooks.py (one Spark JVM
start less) when both run in one pytest process.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
ARTIFACTS = ROOT / ".artifacts" / "notebooks"
KERNEL_NAME = "samza-nb-tests"

# The names every notebook's parameters cell defines (tests/test_binder.py checks it), with
# values small enough that each notebook runs in well under a minute on two cores.
SMALL_PARAMETERS: dict[str, Any] = {"events": 1_200, "spark_master": "local[2]"}
PARAMETER_NAMES = ("events", "data_dir", "spark_master")

# Per-cell limit; a notebook that hangs (a job that never drains) fails instead of blocking.
_CELL_TIMEOUT_S = 240


def notebook_paths() -> list[Path]:
    """Every notebook of notebooks/, in file-name order (a new notebook is picked up)."""
    return sorted(NOTEBOOKS.glob("*.ipynb"))


@functools.cache
def _kernel_dir() -> Path:
    root = Path(tempfile.mkdtemp(prefix="samza-nb-kernels-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    spec_dir = root / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "samza_nb tests (this virtualenv)",
        "language": "python",
        # Hermetic kernels: no user IPython profile or startup files, and Spark bound to
        # loopback like everything else in the tests.
        "env": {"IPYTHONDIR": str(root / "ipython"), "SPARK_LOCAL_IP": "127.0.0.1"},
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec, indent=1), encoding="utf-8")
    return root


@contextmanager
def _kernelspec_on_path() -> Iterator[None]:
    previous = os.environ.get("JUPYTER_PATH")
    paths = [str(_kernel_dir())] + ([previous] if previous else [])
    os.environ["JUPYTER_PATH"] = os.pathsep.join(paths)
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("JUPYTER_PATH", None)
        else:
            os.environ["JUPYTER_PATH"] = previous


@functools.cache
def execute(stem: str) -> Path:
    """Execute ``notebooks/<stem>.ipynb`` with the small parameters; returns the executed copy.

    Raises papermill's PapermillExecutionError (naming the failing cell) if a cell fails.
    """
    import papermill

    source = NOTEBOOKS / f"{stem}.ipynb"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    output = ARTIFACTS / f"{stem}.ipynb"
    work = Path(tempfile.mkdtemp(prefix=f"samza-nb-{stem}-"))
    atexit.register(shutil.rmtree, work, ignore_errors=True)
    parameters = {**SMALL_PARAMETERS, **service_parameters(), "data_dir": str(work / "data")}
    with _kernelspec_on_path():
        papermill.execute_notebook(
            str(source),
            str(output),
            parameters=parameters,
            kernel_name=KERNEL_NAME,
            # Spark's spark-warehouse/ and derby.log land in the scratch folder, not in notebooks/.
            cwd=str(work),
            progress_bar=False,
            execution_timeout=_CELL_TIMEOUT_S,
            start_timeout=120,
        )
    return output


def service_parameters() -> dict[str, Any]:
    """``zk_connect``: the engine room's ZooKeeper, for the notebooks that take it (06); nothing
    when no services run (those notebooks then find or start ZooKeeper themselves)."""
    from samza_nb.errors import ServiceError
    from samza_nb.services import read_service_env

    try:
        connect = read_service_env().get("SAMZA_NB_ZK_CONNECT")
    except ServiceError:
        return {}
    return {"zk_connect": connect} if connect else {}

"""Run the notebooks of notebooks/ under papermill, in a kernel that uses this interpreter.

The kernelspec is written to a temporary folder that is put on ``JUPYTER_PATH`` only while
papermill starts the kernel, so the tests never depend on (or change) a user's global
kernelspecs. Every notebook gets the same small parameters (the names every ``parameters``
cell defines) and a fresh data folder; the executed notebook is kept under
``.artifacts/notebooks/`` for inspection, also when it fails.

Each notebook runs once per test session, whichever test asks first: the papermill tests, the
HTML export and the browser's saved-output tests all read the same executed copy, also from
different xdist workers. The copy lives in a folder the session's workers share (the
``executed_notebook`` fixture of conftest.py names it); a file lock per notebook makes a second
worker wait for the run in progress instead of starting its own, and a failed run is recorded
there, so every test that needs the notebook fails with the first run's error instead of
running it again.
"""

from __future__ import annotations

import atexit
import fcntl
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


@contextmanager
def _services_found_as_a_user_finds_them() -> Iterator[None]:
    """The kernel starts without ``$SAMZA_NB_SERVICES_DIR``/``$SAMZA_NB_SERVICES_ENV`` when they
    name this checkout's ``.services`` (as ``make test`` sets them): a person's kernel has no
    such variable, and the notebooks must find what ``make services-up`` started by themselves
    (samza_nb.services._base.find_services_dir). A folder of the user's own is kept."""
    default = ROOT / ".services"
    saved = {
        name: os.environ[name]
        for name in ("SAMZA_NB_SERVICES_DIR", "SAMZA_NB_SERVICES_ENV")
        if name in os.environ
        and Path(os.environ[name]).resolve() in (default, default / "services.env")
    }
    for name in saved:
        del os.environ[name]
    try:
        yield
    finally:
        os.environ.update(saved)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (an advisory fcntl lock: released by the kernel if
    the holder dies, so a killed worker never blocks the others)."""
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def execute(stem: str, shared: Path) -> Path:
    """``notebooks/<stem>.ipynb`` executed with the small parameters, run at most once for all
    the processes that pass the same ``shared`` folder; returns the executed copy.

    Raises papermill's PapermillExecutionError (naming the failing cell) in the test whose call
    ran the notebook, and a RuntimeError quoting it in every later call.
    """
    shared.mkdir(parents=True, exist_ok=True)
    output = shared / f"{stem}.ipynb"
    done = shared / f"{stem}.done"
    failed = shared / f"{stem}.failed"
    with _locked(shared / f"{stem}.lock"):
        if failed.exists():
            msg = (
                f"{stem}.ipynb failed under papermill earlier in this session "
                f"(see {ARTIFACTS / output.name}): {failed.read_text(encoding='utf-8')}"
            )
            raise RuntimeError(msg)
        if not done.exists():
            try:
                _run_papermill(stem, output)
            except Exception as error:
                failed.write_text(f"{type(error).__name__}: {error}", encoding="utf-8")
                raise
            finally:
                # Papermill writes the copy as it goes, so a failed run is kept for inspection too.
                if output.exists():
                    ARTIFACTS.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(output, ARTIFACTS / output.name)
            done.touch()
    return output


def _run_papermill(stem: str, output: Path) -> None:
    import papermill

    source = NOTEBOOKS / f"{stem}.ipynb"
    work = Path(tempfile.mkdtemp(prefix=f"samza-nb-{stem}-"))
    atexit.register(shutil.rmtree, work, ignore_errors=True)
    parameters = {**SMALL_PARAMETERS, **service_parameters(), "data_dir": str(work / "data")}
    with _kernelspec_on_path(), _services_found_as_a_user_finds_them():
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

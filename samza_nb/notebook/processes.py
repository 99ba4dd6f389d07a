"""Processor processes started from a notebook (or a bench): ``samza-nb run MODULE:APP`` with
one StreamProcessor each, coordinated by the job's distributed coordinator.

Each process writes one log file, runs in a process group of its own (so a kill takes its Spark
JVM too) and dies with the process that started it: on Linux the kernel sends it SIGKILL when
its parent ends (``PR_SET_PDEATHSIG``), and everywhere the processes still running at exit are
killed. (Linux ties the signal to the thread that started the process: start processes from
a thread that lives as long as they should, such as a notebook's main thread.)
``start_processor("jobs:app", {"job.coordinator.factory": "zookeeper", ...},
processor_id="p1", location="host-a")``.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from samza_nb.errors import JobError
from samza_nb.secrecy import mask_value

__all__ = ["ProcessorProcess", "start_processor"]

_PR_SET_PDEATHSIG = 1
_RUNNING: weakref.WeakSet[ProcessorProcess] = weakref.WeakSet()


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class ProcessorProcess:
    """One processor process: ``processor_id``, ``location``, ``pid``, ``log_path``."""

    def __init__(
        self,
        app: str,
        settings: Mapping[str, Any],
        *,
        processor_id: str,
        location: str,
        cwd: str | os.PathLike[str] = ".",
        log_dir: str | os.PathLike[str] | None = None,
        executor: str = "local",
        until: str = "end-of-stream",
    ) -> None:
        self.app = app
        self.processor_id = processor_id
        self.location = location
        self.cwd = Path(cwd)
        logs = Path(log_dir) if log_dir is not None else self.cwd / "processor-logs"
        # Owner only: a log names the job's streams, hosts and failures.
        logs.mkdir(mode=0o700, parents=True, exist_ok=True)
        logs.chmod(0o700)
        self.log_path = logs / f"{processor_id}.log"
        argv = [sys.executable, "-m", "samza_nb.cli", "run", app, "--executor", executor, "--until", until]
        entries = {**settings, "processor.id": processor_id, "processor.locations": location}
        # A command line is readable by every user of the machine (ps, /proc/<pid>/cmdline):
        # secret settings (account keys, SASL passwords …) go in a file only this user reads,
        # removed once the process has ended.
        secret = {key: str(value) for key, value in entries.items() if mask_value(key, str(value)) != str(value)}
        self._secrets_path: Path | None = None
        if secret:
            # A file of its own (mode 0600): a process restarted under the same id, started
            # before the old one ends, must not lose its file when the old one's goes.
            descriptor, name = tempfile.mkstemp(
                prefix=f"{processor_id}.", suffix=".secret-config.json", dir=logs
            )
            self._secrets_path = Path(name)
            with os.fdopen(descriptor, "w", encoding="utf-8") as file:
                json.dump(secret, file)
            argv += ["--config", str(self._secrets_path.resolve())]
        for key, value in entries.items():
            if key not in secret:
                argv += ["--set", f"{key}={value}"]
        # Unsalted string hashes, as PySpark gives its Python workers (and bin/pyspark its
        # driver): the processor may then run its small epochs itself (SparkExecutor).
        env = {"PYTHONHASHSEED": "0", **os.environ} if "PYTHONHASHSEED" not in os.environ else None
        descriptor = os.open(self.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.fchmod(descriptor, 0o600)  # a log left by an older version may be wider
        with os.fdopen(descriptor, "ab") as log, _forgotten_on_failure(self):
            self._process = subprocess.Popen(  # noqa: S603 - our own CLI, no shell
                argv,
                cwd=self.cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,  # noqa: PLW1509
            )
        self.pid = self._process.pid
        _RUNNING.add(self)

    def __repr__(self) -> str:
        state = "running" if self.alive else f"exit {self._process.returncode}"
        return f"ProcessorProcess({self.processor_id!r}, {self.location!r}, pid={self.pid}, {state})"

    @property
    def alive(self) -> bool:
        return self.returncode is None

    @property
    def returncode(self) -> int | None:
        code = self._process.poll()
        if code is not None:
            self._forget_secrets()
        return code

    def _forget_secrets(self) -> None:
        """Remove the secret settings' file once the process has ended."""
        path, self._secrets_path = self._secrets_path, None
        if path is not None:
            path.unlink(missing_ok=True)

    def log(self, tail: int = 4000) -> str:
        """The last ``tail`` characters of the process's log."""
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")[-tail:]
        except FileNotFoundError:
            return ""

    def signal(self, signum: int) -> None:
        """Send ``signum`` to the process group (the processor and its Spark JVM)."""
        if self.alive:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signum)

    def kill(self) -> int:
        """SIGKILL (no goodbye: its session lingers until the session timeout); returns the exit code."""
        self.signal(signal.SIGKILL)
        return self.wait(30)

    def terminate(self, timeout: float = 60) -> int:
        """SIGTERM: stop after the epoch in flight and leave the group at once; the exit code
        (143 for that clean stop, as a JVM's; another one names a failure).

        Only the processor gets the signal: sent to its group, it would stop the Spark JVM
        under the epoch in flight, which then could not commit. The JVM ends with the
        processor (PySpark's gateway exits when its parent's pipe closes)."""
        if self.alive:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)
        return self.wait(timeout)

    def wait(self, timeout: float | None = None) -> int:
        """The exit code; JobError naming the log after ``timeout`` seconds."""
        try:
            code = self._process.wait(timeout)
        except subprocess.TimeoutExpired as error:
            msg = f"processor {self.processor_id!r} (pid {self.pid}) still runs after {timeout} s; log {self.log_path}"
            raise JobError(msg) from error
        self._forget_secrets()
        return code

    def wait_for(self, text: str, timeout: float) -> None:
        """Until ``text`` appears in the log; JobError if the process ends or time runs out."""
        deadline = time.monotonic() + timeout
        while text not in self.log(tail=1_000_000):
            if not self.alive:
                msg = f"processor {self.processor_id!r} ended (exit {self.returncode}):\n{self.log()}"
                raise JobError(msg)
            if time.monotonic() > deadline:
                msg = f"processor {self.processor_id!r} did not log {text!r} within {timeout:g} s"
                raise JobError(msg)
            time.sleep(0.1)


@contextlib.contextmanager
def _forgotten_on_failure(process: ProcessorProcess) -> Iterator[None]:
    """Remove the process's secret settings' file when it could not be started."""
    try:
        yield
    except BaseException:
        process._forget_secrets()
        raise


def start_processor(app: str, settings: Mapping[str, Any], **options: Any) -> ProcessorProcess:
    """Start one processor process of ``app`` (``module:attribute``, importable from ``cwd``)."""
    return ProcessorProcess(app, settings, **options)


@atexit.register
def _kill_running() -> None:
    for process in list(_RUNNING):
        process.signal(signal.SIGKILL)
        process._forget_secrets()

"""What every engine-room service shares: its folder, state file, start/stop/status flow.

A service keeps everything under ``<services dir>/<name>/``: logs, data, and ``state.json``
(its processes, ports and the env-file entries it contributes). ``start`` is idempotent: a
recorded service whose processes live and whose health check passes is reported as running and
left alone. A service whose address is configured by the user (``external_variable``) is never
started; its address goes to the env file instead.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from samza_nb.config import environment
from samza_nb.errors import ServiceError
from samza_nb.services._process import (
    ProcessRecord,
    is_alive,
    port_open,
    stop_processes,
    wait_healthy,
)

__all__ = ["Service", "ServiceInfo", "ServicesHome", "find_services_dir", "repo_engine_dir"]

log = logging.getLogger("samza_nb.services")

ENV_FILE_NAME = "services.env"
SERVICES_DIR_NAME = ".services"
#: Files that mark a project root: where `make services-up` runs and keeps ``.services/``.
PROJECT_MARKERS = ("pyproject.toml", ".git")


def repo_engine_dir() -> Path | None:
    """The ``engine/`` folder of the repository checkout this package runs from, if any."""
    candidate = Path(__file__).resolve().parents[2] / "engine"
    return candidate if candidate.is_dir() else None


def find_services_dir(start: str | os.PathLike[str] | None = None) -> tuple[Path, str]:
    """The services folder every caller shares, and how it was found (for messages).

    In order: ``$SAMZA_NB_SERVICES_DIR``; else, walking up from ``start`` (default: the current
    folder, which is the notebook's folder in a Jupyter kernel), the nearest folder that holds
    ``.services/services.env`` or is a project root (``pyproject.toml`` or ``.git``): its
    ``.services``, so a notebook in ``notebooks/`` finds what ``make services-up`` started in
    the project root and starts nothing of its own in ``notebooks/.services``; else the checkout
    this package runs from (an editable install), when its services run; else
    ``<start>/.services``.
    """
    configured = environment("SAMZA_NB_SERVICES_DIR")
    if configured:
        return Path(configured).resolve(), "$SAMZA_NB_SERVICES_DIR"
    here = Path(start if start is not None else Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / SERVICES_DIR_NAME / ENV_FILE_NAME).is_file():
            return folder / SERVICES_DIR_NAME, f"the services env file of {folder}"
        if any((folder / marker).exists() for marker in PROJECT_MARKERS):
            return folder / SERVICES_DIR_NAME, f"the project root {folder}"
    engine = repo_engine_dir()
    if engine is not None and (engine.parent / SERVICES_DIR_NAME / ENV_FILE_NAME).is_file():
        return engine.parent / SERVICES_DIR_NAME, f"the samza_nb checkout {engine.parent}"
    return here / SERVICES_DIR_NAME, f"the current folder {here} (no project root above it)"


@dataclass(frozen=True)
class ServicesHome:
    """Where services keep their data, logs and pid files, and where the env file goes."""

    root: Path
    env_file: Path
    #: How the folder was found: "$SAMZA_NB_SERVICES_DIR", "the project root …" (messages only).
    found_by: str = field(default="given", compare=False)

    @classmethod
    def resolve(
        cls,
        services_dir: str | os.PathLike[str] | None = None,
        env_file: str | os.PathLike[str] | None = None,
    ) -> ServicesHome:
        """An explicit folder wins over the shared lookup (:func:`find_services_dir`).

        ``$SAMZA_NB_SERVICES_ENV`` only applies to the looked-up folder: a caller that names its
        own folder (a test's temporary one) must never overwrite the suite's env file.
        """
        if services_dir is not None:
            root = Path(services_dir).resolve()
            env = Path(env_file) if env_file is not None else root / ENV_FILE_NAME
            return cls(root, env.resolve())
        root, found_by = find_services_dir()
        default_env = environment("SAMZA_NB_SERVICES_ENV") or root / ENV_FILE_NAME
        return cls(root, Path(env_file or default_env).resolve(), found_by)


@dataclass(frozen=True)
class ServiceInfo:
    """What ``up``/``status`` report about one service. ``env`` may hold secrets: never print it."""

    name: str
    # "running", "started", "stopped", "not running", "external", "unhealthy" (up but not
    # answering) or "failed" (a process died without being stopped: killed or crashed)
    state: str
    address: str = ""
    pids: tuple[int, ...] = ()
    log_files: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    seconds: float | None = None

    @property
    def is_up(self) -> bool:
        return self.state in ("running", "started", "external")

    @property
    def is_failed(self) -> bool:
        """Recorded as started but not working: ``samza-nb services status`` exits 1."""
        return self.state in ("unhealthy", "failed")


class Service(ABC):
    """One engine-room service. Subclasses launch processes and say how to check their health."""

    name: ClassVar[str]
    #: Started by ``up()`` without names; Spark standalone is opt-in because it costs three JVMs.
    default: ClassVar[bool] = True
    #: Environment variable naming a real service to use instead of starting one.
    external_variable: ClassVar[str | None] = None

    def __init__(
        self, home: ServicesHome, *, host: str = "127.0.0.1", directory: Path | None = None
    ) -> None:
        self.home = home
        #: The address the service binds and advertises: 127.0.0.1, or the bridge address of a
        #: simulated cluster (samza_nb.services.cluster) whose hosts must reach it.
        self.bind_host = host
        self._directory = directory
        self._spawned: list[ProcessRecord] = []

    @property
    def directory(self) -> Path:
        return self._directory or self.home.root / self.name

    @property
    def state_file(self) -> Path:
        return self.directory / "state.json"

    def log_file(self, role: str | None = None) -> Path:
        return self.directory / f"{role or self.name}.log"

    # -- what subclasses provide ------------------------------------------------------------

    def install(self) -> None:  # noqa: B027 - an optional hook: most services need nothing
        """Fetch what the service needs to run; the default needs nothing."""

    @abstractmethod
    def _launch(self, timeout: float) -> dict[str, Any]:
        """Spawn the processes (through :meth:`_track`), wait until healthy, return the state.

        The state holds at least ``env`` (env-file entries) and ``address`` (printable, no
        secrets). On failure the caller stops every process tracked so far.
        """

    @abstractmethod
    def _healthy(self, state: Mapping[str, Any]) -> bool:
        """A quick check that a recorded, running service answers."""

    def _external(self, value: str) -> tuple[dict[str, str], str]:
        """Env entries and printable address for a user-configured real service."""
        assert self.external_variable is not None
        return {self.external_variable: value}, value

    def _check_external(self, value: str) -> None:  # noqa: B027 - optional hook, as install
        """Fail early when a configured real service is unreachable; default: no check."""

    # -- the shared flow ----------------------------------------------------------------------

    def _read_state(self) -> dict[str, Any] | None:
        try:
            data = json.loads(self.state_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def _records(self, state: Mapping[str, Any] | None) -> list[ProcessRecord]:
        if not state:
            return []
        return [ProcessRecord.from_json(item) for item in state.get("processes", [])]

    def _write_state(self, records: list[ProcessRecord], state: Mapping[str, Any]) -> None:
        payload = dict(state)
        payload["processes"] = [record.to_json() for record in records]
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = self.state_file.with_suffix(".tmp")
        # The state may hold a connection string: keep it readable by this user only.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(payload, handle, indent=2, sort_keys=True)
        os.replace(tmp, self.state_file)

    def _info(
        self,
        state_name: str,
        state: Mapping[str, Any],
        records: list[ProcessRecord],
        seconds: float | None = None,
    ) -> ServiceInfo:
        return ServiceInfo(
            name=self.name,
            state=state_name,
            address=str(state.get("address", "")),
            pids=tuple(record.pid for record in records),
            log_files=tuple(record.log_file for record in records),
            env=dict(state.get("env", {})),
            seconds=seconds,
        )

    def external_value(self) -> str | None:
        """The user's own service (its variable set in the environment), or None. A value this
        services folder wrote itself (a shell that sourced the env file) is not external: the
        service is still ours to report on and to stop."""
        value = environment(self.external_variable) if self.external_variable else None
        if (
            value is not None
            and (self._read_state() or {}).get("env", {}).get(self.external_variable) == value
        ):
            return None
        return value

    def external_env(self) -> dict[str, str] | None:
        """Env-file entries of the real service the user configured, or None."""
        value = self.external_value()
        return None if value is None else self._external(value)[0]

    def status(self) -> ServiceInfo:
        """Running, unhealthy (processes up but not answering), failed (a recorded process
        died: only :meth:`stop` forgets a service), stopped or external."""
        value = self.external_value()
        if value is not None:
            env, address = self._external(value)
            return ServiceInfo(self.name, "external", address=address, env=env)
        state = self._read_state()
        records = self._records(state)
        if not state or not records:
            return ServiceInfo(self.name, "stopped")
        if not all(is_alive(record) for record in records):
            return self._info("failed", state, records)
        try:
            healthy = self._healthy(state)
        except OSError:
            healthy = False
        return self._info("running" if healthy else "unhealthy", state, records)

    def start(self, timeout: float = 60.0) -> ServiceInfo:
        """Start the service unless it already runs healthy (or a real one is configured)."""
        value = self.external_value()
        if value is not None:
            self._check_external(value)
            env, address = self._external(value)
            return ServiceInfo(self.name, "external", address=address, env=env)
        current = self.status()
        if current.state == "running":
            return current
        # Leftovers of a crashed or half-started run would hold ports and files: clear them.
        self.stop()
        self.install()
        began = time.monotonic()
        self._spawned = []
        try:
            state = self._launch(timeout)
        except BaseException:
            stop_processes(self.name, self._spawned)
            self.state_file.unlink(missing_ok=True)
            raise
        records = list(self._spawned)
        self._write_state(records, state)
        seconds = time.monotonic() - began
        log.info("%s started in %.1f s at %s", self.name, seconds, state.get("address", ""))
        return self._info("started", state, records, seconds)

    def stop(self) -> bool:
        """Stop every recorded process (and its process group); True when something ran."""
        state = self._read_state()
        records = self._records(state)
        ran = any(is_alive(record) for record in records)
        stop_processes(self.name, records)
        self.state_file.unlink(missing_ok=True)
        for folder in self._data_dirs():
            shutil.rmtree(folder, ignore_errors=True)
        return ran

    def _data_dirs(self) -> list[Path]:
        """Folders of data that must not outlive a run; removed by :meth:`stop`."""
        return []

    # -- helpers for subclasses ---------------------------------------------------------------

    def _track(self, record: ProcessRecord) -> ProcessRecord:
        """Remember a spawned process so a failed start can stop it."""
        self._spawned.append(record)
        return record

    def _wait_ports(self, records: list[ProcessRecord], ports: list[int], timeout: float) -> None:
        wait_healthy(
            self.name,
            records,
            lambda: all(port_open(self.bind_host, port) for port in ports),
            timeout=timeout,
        )

    def _fail(self, message: str, log_file: Path | None = None) -> ServiceError:
        return ServiceError(
            f"{self.name}: {message}",
            service=self.name,
            log_file=str(log_file) if log_file else None,
        )

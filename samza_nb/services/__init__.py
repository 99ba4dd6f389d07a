"""The engine room: start, health-check, report and stop the real services on 127.0.0.1.

>>> from samza_nb import services
>>> sorted(services.SERVICES)
['azurite', 'cluster', 'kafka', 'spark', 'zookeeper']

``up()`` starts ZooKeeper, Azurite and the Kafka test broker (Spark standalone only when named)
on free ports (``cluster``, simulated hosts in network namespaces, only when named; see
:mod:`samza_nb.services.cluster`) and writes their addresses to one env file (``KEY='value'`` lines, which both
:func:`read_service_env` and a shell's ``set -a; . services.env`` understand). Every call is
idempotent and serialised by a lock file, so concurrent callers (pytest workers, a notebook and
a terminal) get one instance of each service. A service whose address the user configured
(``SAMZA_NB_ZK_CONNECT``, ``SAMZA_NB_KAFKA_BOOTSTRAP``, ``SAMZA_NB_AZURE_CONNECTION_STRING``) is
not started; that address is written instead. See docs/services.md.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shlex
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from samza_nb.errors import ServiceError
from samza_nb.services._base import Service, ServiceInfo, ServicesHome
from samza_nb.services.azurite import Azurite
from samza_nb.services.cluster import SimCluster
from samza_nb.services.kafka import KafkaBroker
from samza_nb.services.spark import SparkStandalone
from samza_nb.services.zookeeper import ZooKeeper

__all__ = [
    "ENV_KEYS",
    "SERVICES",
    "Service",
    "ServiceInfo",
    "ServicesHome",
    "down",
    "env_file_path",
    "install",
    "read_service_env",
    "service_address",
    "start_hint",
    "status",
    "up",
]

#: Services by name, in start order.
SERVICES: dict[str, type[Service]] = {
    "zookeeper": ZooKeeper,
    "kafka": KafkaBroker,
    "azurite": Azurite,
    "spark": SparkStandalone,
    "cluster": SimCluster,
}

#: Every key the env file may hold.
ENV_KEYS: tuple[str, ...] = (
    "SAMZA_NB_ZK_CONNECT",
    "SAMZA_NB_KAFKA_BOOTSTRAP",
    "SAMZA_NB_AZURE_CONNECTION_STRING",
    "SAMZA_NB_AZURE_BLOB_ENDPOINT",
    "SAMZA_NB_AZURE_TABLE_ENDPOINT",
    "SAMZA_NB_SPARK_MASTER_URL",
    "SAMZA_NB_CLUSTER_MASTER_URL",
)

_LOCK_TIMEOUT = 600.0


def _select(names: Iterable[str] | None, *, default_only: bool) -> list[str]:
    if names is None:
        return [name for name, kind in SERVICES.items() if kind.default or not default_only]
    chosen = list(dict.fromkeys(names))
    unknown = [name for name in chosen if name not in SERVICES]
    if unknown:
        msg = f"unknown service {unknown[0]!r}; known services: {', '.join(SERVICES)}"
        raise ServiceError(msg, service=unknown[0])
    # Keep the registry order so dependencies (if any are added) start first.
    return [name for name in SERVICES if name in chosen]


@contextlib.contextmanager
def _locked(home: ServicesHome, *, wait: bool = True) -> Iterator[bool]:
    """One up/down/install at a time per services folder (bounded wait). Without ``wait``
    yields False at once when another command holds the lock."""
    home.root.mkdir(parents=True, exist_ok=True)
    with open(home.root / ".lock", "a+") as handle:
        deadline = time.monotonic() + (_LOCK_TIMEOUT if wait else 0.0)
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not wait:
                    yield False
                    return
                if time.monotonic() >= deadline:
                    msg = f"another samza-nb services command holds {home.root / '.lock'}"
                    raise ServiceError(msg) from None
                time.sleep(0.2)
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _write_env_file(home: ServicesHome, stopped: Iterable[str] = ()) -> None:
    """Rewrite the env file from what is up now; remove it when nothing is. ``stopped`` were
    just stopped here: their address may linger in this shell's environment (a sourced env
    file) without being a real service of the user's."""
    entries: dict[str, str] = {}
    for name, kind in SERVICES.items():
        if name in stopped:
            continue
        info = kind(home).status()
        if info.is_up:
            entries.update(info.env)
    if not entries:
        home.env_file.unlink(missing_ok=True)
        return
    lines = [
        "# Addresses of the samza_nb engine-room services (written by `samza-nb services up`).",
        "# Read with samza_nb.services.read_service_env() or `set -a; . <this file>; set +a`.",
    ]
    lines += [f"{key}={shlex.quote(value)}" for key, value in sorted(entries.items())]
    home.env_file.parent.mkdir(parents=True, exist_ok=True)
    tmp = home.env_file.with_name(home.env_file.name + ".tmp")
    # It may carry a real Azure connection string: readable by this user only.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    os.replace(tmp, home.env_file)


def install(
    names: Iterable[str] | None = None, *, services_dir: str | os.PathLike[str] | None = None
) -> list[str]:
    """Fetch what the services need (the pinned Azurite npm package); returns their names."""
    home = ServicesHome.resolve(services_dir)
    chosen = _select(names, default_only=False)
    with _locked(home):
        for name in chosen:
            service = SERVICES[name](home)
            if service.external_value() is None:
                service.install()
    return chosen


def up(
    names: Iterable[str] | None = None,
    *,
    services_dir: str | os.PathLike[str] | None = None,
    env_file: str | os.PathLike[str] | None = None,
    timeout: float = 60.0,
    hosts: int | None = None,
) -> list[ServiceInfo]:
    """Start the named services (default: all but Spark standalone and the cluster) unless
    already running. ``hosts`` is the number of simulated hosts of ``cluster`` (default 3).

    Raises :class:`~samza_nb.errors.ServiceError` naming the service and its log file when one
    fails to start within ``timeout`` seconds; services started before it keep running and stay
    in the env file, so ``down()`` stops them.
    """
    home = ServicesHome.resolve(services_dir, env_file)
    chosen = _select(names, default_only=True)
    infos = []
    failed: list[str] = []
    with _locked(home):
        try:
            for name in chosen:
                service = (
                    SimCluster(home, hosts=hosts)
                    if name == "cluster" and hosts
                    else SERVICES[name](home)
                )
                try:
                    infos.append(service.start(timeout=timeout))
                except BaseException:
                    # Not in the env file: an external address that does not answer would
                    # otherwise be handed to every later reader of the file.
                    failed.append(name)
                    raise
        finally:
            _write_env_file(home, stopped=failed)
    return infos


def down(
    names: Iterable[str] | None = None,
    *,
    services_dir: str | os.PathLike[str] | None = None,
    env_file: str | os.PathLike[str] | None = None,
) -> list[ServiceInfo]:
    """Stop the named services (default: all, Spark included); nothing of theirs is left running."""
    home = ServicesHome.resolve(services_dir, env_file)
    chosen = _select(names, default_only=False)
    stopped = []
    with _locked(home):
        try:
            for name in reversed(chosen):
                service = SERVICES[name](home)
                if service.external_value() is not None:
                    stopped.append(service.status())
                    continue
                ran = service.stop()
                stopped.append(ServiceInfo(name, "stopped" if ran else "not running"))
        finally:
            _write_env_file(
                home, stopped=[info.name for info in stopped if info.state != "external"]
            )
    return list(reversed(stopped))


def status(
    names: Iterable[str] | None = None,
    *,
    services_dir: str | os.PathLike[str] | None = None,
    env_file: str | os.PathLike[str] | None = None,
) -> list[ServiceInfo]:
    """Where each service runs (or that it is stopped, unhealthy, failed or external).

    A failed service's address is dropped from the env file at once, so nothing connects to a
    dead address; ``up()`` starts it again.
    """
    home = ServicesHome.resolve(services_dir, env_file)
    infos = [SERVICES[name](home).status() for name in _select(names, default_only=False)]
    if any(info.state == "failed" for info in infos):
        with _locked(home, wait=False) as locked:
            # Busy: an up or down runs now and rewrites the env file itself.
            if locked:
                _write_env_file(home)
    return infos


def env_file_path(
    services_dir: str | os.PathLike[str] | None = None,
    env_file: str | os.PathLike[str] | None = None,
) -> Path:
    """Where the env file is (``$SAMZA_NB_SERVICES_ENV``, else ``<services dir>/services.env``)."""
    return ServicesHome.resolve(services_dir, env_file).env_file


def read_service_env(path: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """The service addresses: the env file's entries, overridden by real services configured
    in the environment. Raises :class:`ServiceError` when there is neither."""
    env_file = Path(path) if path is not None else env_file_path()
    entries: dict[str, str] = {}
    try:
        text = env_file.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = None
    except OSError as error:
        msg = f"cannot read the services env file {env_file}: {error.strerror}"
        raise ServiceError(msg) from error
    for line in (text or "").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, raw = line.partition("=")
        words = shlex.split(raw) if raw else [""]
        entries[key.strip()] = words[0] if words else ""
    home = ServicesHome.resolve()
    for kind in SERVICES.values():
        external = kind(home).external_env()
        if external:
            entries.update(external)
    if text is None and not entries:
        msg = f"no services env file at {env_file}; {start_hint(home)}"
        raise ServiceError(msg)
    return entries


#: The service that writes each env-file key.
_KEY_SERVICE = {
    "SAMZA_NB_ZK_CONNECT": "zookeeper",
    "SAMZA_NB_KAFKA_BOOTSTRAP": "kafka",
    "SAMZA_NB_AZURE_CONNECTION_STRING": "azurite",
    "SAMZA_NB_AZURE_BLOB_ENDPOINT": "azurite",
    "SAMZA_NB_AZURE_TABLE_ENDPOINT": "azurite",
    "SAMZA_NB_SPARK_MASTER_URL": "spark",
    "SAMZA_NB_CLUSTER_MASTER_URL": "cluster",
}


def start_hint(home: ServicesHome | None = None, name: str | None = None) -> str:
    """How to start the services where the shared lookup finds them (a clause for messages):
    ``make services-up`` in a project whose Makefile has that target, else the CLI."""
    home = home or ServicesHome.resolve()
    project = home.root.parent
    named = f" {name}" if name else ""
    cli = f"samza-nb services up{named}"
    try:
        has_target = "services-up:" in (project / "Makefile").read_text(encoding="utf-8")
    except OSError:
        has_target = False
    default = name is None or SERVICES[name].default
    if has_target and default:
        return f"start the services with `make services-up` in {project} (or `{cli}` there)"
    return f"start the services with `{cli}` in {project}"


def service_address(key: str) -> str:
    """One address (``SAMZA_NB_KAFKA_BOOTSTRAP`` …): the environment's, else the env file's of
    the shared services folder (:func:`~samza_nb.services._base.find_services_dir`). Raises a
    one-line :class:`ServiceError` saying where it looked and how to start the service."""
    if key not in _KEY_SERVICE:
        msg = f"unknown service address {key!r}; known: {', '.join(_KEY_SERVICE)}"
        raise ServiceError(msg)
    name = _KEY_SERVICE[key]
    home = ServicesHome.resolve()
    try:
        value = read_service_env(home.env_file).get(key)
    except ServiceError:
        value = None
    if not value:
        msg = (
            f"{name} is not running: no {key} in the environment nor in {home.env_file} "
            f"(services folder from {home.found_by}); {start_hint(home, name)}"
        )
        raise ServiceError(msg, service=name)
    return value

"""A cluster of simulated hosts on this machine: one network and mount namespace per host.

``samza-nb services up cluster [--hosts N]`` (or the ``sim_cluster`` fixture) makes N hosts
``h1..hN``, each a Linux network namespace with its own address on ``10.213.0.0/24`` (joined by
veth pairs to the bridge ``snb-br0`` at ``10.213.0.1`` that the project creates) and its own
private disk: ``<services dir>/cluster/hosts/<host>/disk``, bind-mounted in a private mount
namespace over one path (:attr:`SimCluster.mount_point`), so each host sees its own files there.
On the bridge address the cluster runs its own ZooKeeper, Kafka test broker (advertising that
address), Azurite and a Spark standalone master; each host runs one Spark worker (2 cores, 1 GiB,
``SPARK_LOCAL_IP`` the host's address). Hosts share nothing but these services.

:meth:`SimCluster.run` starts a process on a host (inside its namespaces, with the cluster's
addresses in its environment), :meth:`SimCluster.kill` SIGKILLs everything on a host and
:meth:`SimCluster.restart` brings its worker back (the disk survives). ``down`` removes the
namespaces, veths, bridge and processes it made. Needs root; see docs/services.md.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import samza_nb.services._netns as _netns
from samza_nb.errors import ServiceError
from samza_nb.services._base import Service, ServiceInfo, ServicesHome
from samza_nb.services._java import pyspark_home
from samza_nb.services._process import (
    ProcessRecord,
    free_ports,
    is_alive,
    port_open,
    spawn,
    stop_processes,
    wait_healthy,
)
from samza_nb.services.azurite import Azurite
from samza_nb.services.kafka import KafkaBroker
from samza_nb.services.spark import SparkStandalone, alive_worker_hosts
from samza_nb.services.zookeeper import ZooKeeper

__all__ = ["DEFAULT_HOSTS", "SimCluster", "SimHost"]

DEFAULT_HOSTS = 3
#: Two Spark cores per host: two applications (the processors of one job on two hosts) can each
#: have an executor on every host, so either can run a task where its stores are.
WORKER_CORES = 2
WORKER_MEMORY = "1g"
_WORKER_WAIT = 120.0
# Addresses the hosts' processes get, under the keys samza_nb reads everywhere.
_SUPPORT_KEYS = (
    "SAMZA_NB_ZK_CONNECT",
    "SAMZA_NB_KAFKA_BOOTSTRAP",
    "SAMZA_NB_AZURE_CONNECTION_STRING",
    "SAMZA_NB_AZURE_BLOB_ENDPOINT",
    "SAMZA_NB_AZURE_TABLE_ENDPOINT",
)


@dataclass(frozen=True)
class SimHost:
    """One simulated host: its name, address, network namespace and private disk folder."""

    name: str
    address: str
    netns: str
    disk: Path


class SimCluster(Service):
    """N simulated hosts, each with a Spark worker, under one master on the bridge address."""

    name = "cluster"
    default = False

    def __init__(self, home: ServicesHome, *, hosts: int = DEFAULT_HOSTS) -> None:
        super().__init__(home, host=_netns.BRIDGE_ADDRESS)
        if hosts < 1:
            msg = f"cluster: --hosts must be at least 1, got {hosts}"
            raise ServiceError(msg, service=self.name)
        self.host_count = hosts

    # -- layout -------------------------------------------------------------------------------

    @property
    def mount_point(self) -> Path:
        """The path where every host sees its own private disk (point job.home below it)."""
        return self.directory / "root"

    def _host_dir(self, name: str) -> Path:
        return self.directory / "hosts" / name

    def host_log(self, host: str | SimHost, role: str) -> Path:
        """Where the output of what :meth:`run` started on ``host`` as ``role`` goes."""
        name = host if isinstance(host, str) else host.name
        return self._host_dir(name) / "logs" / f"{role}.log"

    def _support(self) -> list[Service]:
        """ZooKeeper, the Kafka broker and Azurite of the cluster, bound to the bridge address."""
        kinds: list[type[Service]] = [ZooKeeper, KafkaBroker, Azurite]
        return [
            kind(self.home, host=self.bind_host, directory=self.directory / kind.name)
            for kind in kinds
        ]

    def _spark(self) -> SparkStandalone:
        return SparkStandalone(self.home, host=self.bind_host, directory=self.directory / "spark")

    @property
    def hosts(self) -> list[SimHost]:
        """The hosts of the running cluster (empty when it is not up)."""
        return [self._host_from(item) for item in (self._read_state() or {}).get("hosts", [])]

    def host(self, name: str) -> SimHost:
        """The host called ``name`` (``h1``…); ServiceError naming the known hosts otherwise."""
        for host in self.hosts:
            if host.name == name:
                return host
        known = ", ".join(host.name for host in self.hosts) or "none: the cluster is not up"
        msg = f"cluster: no host {name!r}; hosts: {known}"
        raise ServiceError(msg, service=self.name)

    @property
    def master_url(self) -> str:
        return str(self._state()["master_url"])

    def _state(self) -> dict[str, Any]:
        state = self._read_state()
        if not state:
            msg = "cluster: not running; start it with `samza-nb services up cluster`"
            raise ServiceError(msg, service=self.name)
        return state

    def _host_from(self, item: Mapping[str, Any]) -> SimHost:
        name = str(item["name"])
        return SimHost(
            name, str(item["address"]), _netns.PREFIX + name, self._host_dir(name) / "disk"
        )

    # -- running things on a host ------------------------------------------------------------

    def host_environment(self, host: SimHost) -> dict[str, str]:
        """What a process on ``host`` gets on top of the environment: the cluster's service
        addresses, the host's identity and address, and this checkout on PYTHONPATH (Spark's
        Python workers on the host import the same samza_nb)."""
        state = self._state()
        package_root = str(Path(__file__).resolve().parents[2])  # the folder holding samza_nb/
        python_path = os.environ.get("PYTHONPATH")
        env = {key: str(value) for key, value in state.get("host_env", {}).items()}
        env.update(
            {
                "SAMZA_NB_SERVICES_ENV": str(self.directory / "hosts.env"),
                "SAMZA_NB_SPARK_MASTER_URL": str(state["master_url"]),
                # get_spark's default master on the host: the cluster's.
                "SAMZA_NB_SPARK_MASTER": str(state["master_url"]),
                "SAMZA_NB_HOST_NAME": host.name,
                "SAMZA_NB_HOST_ADDRESS": host.address,
                "SAMZA_NB_HOST_ROOT": str(self.mount_point),
                # A processor's location is its host (SAMZA.md §9), named as Spark names the
                # host's executors: the hosts share this machine's host name, not their disks.
                "SAMZA_NB_LOCATION_ID": host.address,
                "SPARK_LOCAL_IP": host.address,
                "SPARK_LOCAL_HOSTNAME": host.address,
                "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON") or sys.executable,
                "PYTHONPATH": package_root + (os.pathsep + python_path if python_path else ""),
            }
        )
        return env

    def command(self, host: SimHost, argv: Sequence[str]) -> list[str]:
        """``argv`` wrapped to run inside ``host``'s network and mount namespaces."""
        return _netns.host_command(host.netns, host.disk, self.mount_point, argv)

    def run(
        self,
        host: str | SimHost,
        argv: Sequence[str],
        *,
        role: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ProcessRecord:
        """Start ``argv`` detached on ``host`` (output to ``<host dir>/logs/<role>.log``); it is
        recorded so :meth:`kill` stops it. ``env`` adds to the host's environment."""
        target = self.host(host) if isinstance(host, str) else host
        role = role or Path(argv[0]).name
        full_env = {**os.environ, **self.host_environment(target), **(env or {})}
        host_dir = self._host_dir(target.name)
        record = spawn(
            f"{target.name}:{role}",
            self.command(target, argv),
            log_file=self.host_log(target, role),
            cwd=host_dir,
            env=full_env,
        )
        self._write_host_records(target, [*self.processes(target), record])
        return record

    def call(
        self,
        host: str | SimHost,
        argv: Sequence[str],
        *,
        timeout: float = 120.0,
        env: Mapping[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` on ``host`` to completion (bounded by ``timeout``), output captured."""
        target = self.host(host) if isinstance(host, str) else host
        full_env = {**os.environ, **self.host_environment(target), **(env or {})}
        return subprocess.run(
            self.command(target, argv),
            env=full_env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def processes(self, host: str | SimHost) -> list[ProcessRecord]:
        """The live processes the project started on ``host`` (its Spark worker included)."""
        target = self.host(host) if isinstance(host, str) else host
        path = self._host_dir(target.name) / "processes.json"
        try:
            items = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        return [record for record in map(ProcessRecord.from_json, items) if is_alive(record)]

    def _write_host_records(self, host: SimHost, records: Sequence[ProcessRecord]) -> None:
        path = self._host_dir(host.name) / "processes.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps([record.to_json() for record in records]), encoding="utf-8")
        os.replace(tmp, path)

    def kill(self, host: str | SimHost, *, timeout: float = 30.0) -> list[int]:
        """SIGKILL every process on ``host`` (its worker, its executors, what :meth:`run`
        started) and wait until the master no longer lists its worker. Returns the pids."""
        target = self.host(host) if isinstance(host, str) else host
        records = self.processes(target)
        for record in records:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(record.pgid, signal.SIGKILL)
        killed = sorted({record.pid for record in records} | set(_netns.kill_netns(target.netns)))
        deadline = time.monotonic() + timeout
        while _netns.netns_pids(target.netns) or any(is_alive(r) for r in records):
            if time.monotonic() >= deadline:
                msg = f"cluster: processes of host {target.name} outlived SIGKILL for {timeout:g} s"
                raise ServiceError(msg, service=self.name)
            time.sleep(0.05)
        self._write_host_records(target, [])
        self._wait_workers(
            lambda hosts: target.address not in hosts, f"{target.name} gone", timeout
        )
        return killed

    def restart(self, host: str | SimHost, *, timeout: float = _WORKER_WAIT) -> ProcessRecord:
        """Start ``host``'s Spark worker again (after :meth:`kill`); its disk is as it was."""
        target = self.host(host) if isinstance(host, str) else host
        if any(record.role.endswith(":spark-worker") for record in self.processes(target)):
            msg = f"cluster: host {target.name} still runs its worker; kill it first"
            raise ServiceError(msg, service=self.name)
        record = self._start_worker(target, self.master_url)
        self._wait_workers(lambda hosts: target.address in hosts, f"{target.name} back", timeout)
        return record

    def alive_worker_addresses(self) -> list[str]:
        """The host addresses whose worker the master lists as ALIVE."""
        return alive_worker_hosts(int(self._state()["webui_port"]), host=self.bind_host)

    def _wait_workers(self, done: Callable[[list[str]], bool], what: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(OSError):
                if done(self.alive_worker_addresses()):
                    return
            if time.monotonic() >= deadline:
                msg = f"cluster: the master did not see {what} within {timeout:g} s"
                raise ServiceError(
                    msg, service=self.name, log_file=str(self.log_file("spark-master"))
                )
            time.sleep(0.2)

    def _start_worker(self, host: SimHost, master_url: str) -> ProcessRecord:
        spark_home = pyspark_home(self.name)
        daemon_env = self._spark().daemon_environment(spark_home, local_ip=host.address)
        argv = [
            str(spark_home / "bin" / "spark-class"), "org.apache.spark.deploy.worker.Worker",
            # Each host has its own ports: fixed ones are free in a fresh namespace.
            "--host", host.address, "--port", "7078", "--webui-port", "8081",
            "--cores", str(WORKER_CORES), "--memory", WORKER_MEMORY,
            "--work-dir", str(self.mount_point / "spark-work"), master_url,
        ]  # fmt: skip
        return self.run(host, argv, role="spark-worker", env=daemon_env)

    # -- the service flow ---------------------------------------------------------------------

    def _launch(self, timeout: float) -> dict[str, Any]:
        _netns.require_namespaces()
        deadline = time.monotonic() + timeout
        try:
            return self._launch_all(deadline)
        except BaseException:
            # Service.start stops the master; the workers, namespaces and services go here.
            self._teardown()
            raise

    def _launch_all(self, deadline: float) -> dict[str, Any]:
        # Marks what this services folder made before it is made, so that only its own `down`
        # (even after a crash) removes the network, never another folder's (a test's own).
        self.directory.mkdir(parents=True, exist_ok=True)
        self._network_marker.touch()
        _netns.create_bridge()
        hosts = []
        for index in range(1, self.host_count + 1):
            host = SimHost(
                f"h{index}", _netns.host_address(index), f"{_netns.PREFIX}h{index}",
                self._host_dir(f"h{index}") / "disk",
            )  # fmt: skip
            host.disk.mkdir(parents=True, exist_ok=True)
            _netns.create_host(host.netns, host.address)
            hosts.append(host)
        self.mount_point.mkdir(parents=True, exist_ok=True)
        host_env: dict[str, str] = {}
        for service in self._support():
            info = service.start(timeout=max(deadline - time.monotonic(), 1.0))
            host_env.update({k: v for k, v in info.env.items() if k in _SUPPORT_KEYS})
        self._write_hosts_env(host_env)

        spark = self._spark()
        spark_home = pyspark_home(self.name)
        port, webui = free_ports(2, self.bind_host)
        master_url = f"spark://{self.bind_host}:{port}"
        master = self._track(
            spawn(
                "spark-master",
                [
                    str(spark_home / "bin" / "spark-class"),
                    "org.apache.spark.deploy.master.Master",
                    "--host",
                    self.bind_host,
                    "--port",
                    str(port),
                    "--webui-port",
                    str(webui),
                ],  # fmt: skip
                log_file=self.log_file("spark-master"),
                cwd=self.directory,
                env=spark.daemon_environment(spark_home),
            )
        )
        self._wait_ports([master], [port, webui], max(deadline - time.monotonic(), 1.0))
        state: dict[str, Any] = {
            "hosts": [{"name": h.name, "address": h.address} for h in hosts],
            "master_url": master_url,
            "port": port,
            "webui_port": webui,
            "host_env": host_env,
            "address": master_url + "; hosts " + ", ".join(f"{h.name} {h.address}" for h in hosts),
            "env": {"SAMZA_NB_CLUSTER_MASTER_URL": master_url},
        }
        # The host API reads the state file: write it before the workers start.
        self._write_state([master], state)
        workers = [self._track(self._start_worker(host, master_url)) for host in hosts]
        wait_healthy(
            self.name,
            [master, *workers],
            lambda: len(alive_worker_hosts(webui, host=self.bind_host)) >= len(hosts),
            timeout=max(deadline - time.monotonic(), 1.0),
        )
        # Started: workers belong to their hosts (killed and restarted there), not to the
        # service's own records, which would report the cluster failed after a host kill.
        self._spawned = [master]
        return state

    def _write_hosts_env(self, entries: Mapping[str, str]) -> None:
        """The env file hosts read (SAMZA_NB_SERVICES_ENV): the cluster's own addresses."""
        lines = ["# Addresses of the simulated cluster's services, as seen from its hosts."]
        lines += [f"{key}={shlex.quote(value)}" for key, value in sorted(entries.items())]
        path = self.directory / "hosts.env"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")

    def _healthy(self, state: Mapping[str, Any]) -> bool:
        return port_open(self.bind_host, int(state["port"])) and len(
            alive_worker_hosts(int(state["webui_port"]), host=self.bind_host)
        ) >= len(state.get("hosts", []))

    def status(self) -> ServiceInfo:
        """As every service, with each host's address and whether its worker is alive."""
        info = super().status()
        hosts = self.hosts
        if not hosts:
            return info
        try:
            alive = set(self.alive_worker_addresses())
        except (OSError, ServiceError):
            alive = set()
        shown = ", ".join(
            f"{h.name} {h.address} {'up' if h.address in alive else 'down'}" for h in hosts
        )
        master = (self._read_state() or {}).get("master_url", "")
        return dataclasses.replace(info, address=f"{master}; hosts {shown}")

    def stop(self) -> bool:
        """Stop the master, every host's processes, the cluster's services; remove the
        namespaces, veths and bridge, and the hosts' disks."""
        ran = super().stop()
        self._teardown()
        return ran

    @property
    def _network_marker(self) -> Path:
        return self.directory / "network-made-here"

    def _teardown(self) -> None:
        if self._network_marker.exists():
            hosts_dir = self.directory / "hosts"
            names = sorted(path.name for path in hosts_dir.iterdir()) if hosts_dir.is_dir() else []
            for name in names:
                stop_processes(self.name, self._host_records_on_disk(name), grace=2.0)
                _netns.delete_host(_netns.PREFIX + name)
            _netns.delete_bridge()
            self._network_marker.unlink()
        for service in reversed(self._support()):
            service.stop()
        for folder in (self.directory / "hosts", self.directory / "spark", self.mount_point):
            shutil.rmtree(folder, ignore_errors=True)
        (self.directory / "hosts.env").unlink(missing_ok=True)

    def _host_records_on_disk(self, name: str) -> list[ProcessRecord]:
        try:
            items = json.loads((self._host_dir(name) / "processes.json").read_text("utf-8"))
        except (OSError, ValueError):
            return []
        return [ProcessRecord.from_json(item) for item in items]

"""Helpers for the ZooKeeper coordination tests: a client per test chroot, job configs with
short timeouts, and a listener that records what a coordinator told its processor."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from samza_nb.config import Config
from samza_nb.coordination.job_model_calculator import JobInputs, JobModelCalculator
from samza_nb.coordination.zk import ZkJobCoordinator, ZkKeyBuilder
from samza_nb.errors import CoordinationError
from samza_nb.metadata.zk_client import ZkClient
from samza_nb.model import JobModel, SystemStreamPartition

#: ZooKeeper's smallest session timeout at tick 2 s.
SESSION_MS = 4000
DEBOUNCE_MS = 500


def job_config(zk_connect: str, **overrides: Any) -> Config:
    entries = {
        "app.name": "zkjob",
        "job.id": "1",
        "job.coordinator.zk.connect": zk_connect,
        "job.coordinator.zk.session.timeout.ms": str(SESSION_MS),
        "job.coordinator.zk.connection.timeout.ms": "10000",
        "job.coordinator.zk.consensus.timeout.ms": "3000",
        "job.debounce.time.ms": str(DEBOUNCE_MS),
        "task.name.grouper.factory": "group-by-container-ids",
        "job.host-affinity.enabled": "true",
    }
    entries.update({key: str(value) for key, value in overrides.items()})
    return Config(entries)


def calculator(config: Config, partitions: int = 6) -> JobModelCalculator:
    ssps = frozenset(SystemStreamPartition("embedded", "in", p) for p in range(partitions))
    return JobModelCalculator(JobInputs(ssps, config=config))


class RecordingListener:
    """A test double of a processor: records every callback and the thread it came on."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []
        self.threads: set[str] = set()
        self.models: list[JobModel] = []
        self.lock = threading.Lock()

    def _record(self, kind: str, value: Any = None) -> None:
        with self.lock:
            self.events.append((kind, value))
            self.threads.add(threading.current_thread().name)

    def on_job_model_expired(self) -> None:
        self._record("expired")

    def on_new_job_model(self, processor_id: str, job_model: JobModel) -> None:
        container = job_model.containers.get(processor_id)
        with self.lock:
            self.models.append(job_model)
        self._record("new", frozenset(container.tasks) if container else frozenset())

    def on_coordinator_stop(self) -> None:
        self._record("stop")

    def on_coordinator_failure(self, error: BaseException) -> None:
        self._record("failure", error)

    def kinds(self) -> list[str]:
        with self.lock:
            return [kind for kind, _ in self.events]

    def tasks(self) -> frozenset[str] | None:
        """The tasks of the last model handed over (None before the first)."""
        with self.lock:
            news = [value for kind, value in self.events if kind == "new"]
        return news[-1] if news else None


def wait_until(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    msg = f"timed out after {timeout:g} s waiting for {what}"
    raise AssertionError(msg)


@pytest.fixture
def zk(zk_connect: str) -> Iterator[ZkClient]:
    client = ZkClient(zk_connect, session_timeout=SESSION_MS / 1000, error=CoordinationError)
    yield client
    client.close()


@pytest.fixture
def keys() -> ZkKeyBuilder:
    return ZkKeyBuilder.for_job(Config({"app.name": "zkjob", "job.id": "1"}))


@pytest.fixture
def coordinators(zk_connect: str) -> Iterator[Callable[..., tuple[ZkJobCoordinator, RecordingListener]]]:
    """``make(pid, location, start=True, **config overrides)`` → (coordinator, listener)."""
    made: list[ZkJobCoordinator] = []

    def make(
        pid: str, location: str, *, start: bool = True, partitions: int = 6, **overrides: Any
    ) -> tuple[ZkJobCoordinator, RecordingListener]:
        config = job_config(zk_connect, **overrides)
        coordinator = ZkJobCoordinator(calculator(config, partitions), config)
        listener = RecordingListener()
        coordinator.attach(pid, location, listener)
        made.append(coordinator)
        if start:
            coordinator.start()
        return coordinator, listener

    yield make
    for coordinator in made:
        coordinator.stop()


def expire_session(client: Any) -> None:
    """Expire a kazoo client's session from outside (kazoo's own test harness does the same)."""
    from kazoo.client import KazooClient

    session_id, password = client.client_id
    hosts = ",".join(f"{host}:{port}" for host, port in client.hosts)
    other = KazooClient(hosts=hosts, client_id=(session_id, password), timeout=SESSION_MS / 1000)
    other.start(timeout=10)
    other.stop()
    other.close()


class TcpProxy:
    """A TCP relay on 127.0.0.1 in front of ZooKeeper that a test can cut and restore, to
    disconnect one client without touching the shared server."""

    def __init__(self, target: tuple[str, int]) -> None:
        import socket

        self.target = target
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.open = threading.Event()
        self.open.set()
        self.sockets: list[Any] = []
        self.lock = threading.Lock()
        self.closed = False
        threading.Thread(target=self._accept, daemon=True, name="test-zk-proxy").start()

    def _accept(self) -> None:
        import socket

        while not self.closed:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            if not self.open.is_set():
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.sockets += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pipe(source: Any, sink: Any) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                try:
                    sock.close()
                except OSError:
                    pass

    def cut(self) -> None:
        """Drop every connection and refuse new ones until :meth:`restore`."""
        import socket

        self.open.clear()
        with self.lock:
            for sock in self.sockets:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            self.sockets.clear()

    def restore(self) -> None:
        self.open.set()

    def close(self) -> None:
        self.closed = True
        self.cut()
        self.server.close()


@pytest.fixture
def proxied_connect(zk_connect: str) -> Iterator[tuple[str, TcpProxy]]:
    """(connect string through a TcpProxy, the proxy)."""
    hosts, _, chroot = zk_connect.partition("/")
    host, _, port = hosts.partition(":")
    proxy = TcpProxy((host, int(port)))
    yield f"127.0.0.1:{proxy.port}/{chroot}", proxy
    proxy.close()

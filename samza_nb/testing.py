"""Test helpers and the samza_nb pytest plugin (registered through the ``pytest11`` entry point).

Fixtures:

- ``spark``: the session-wide SparkSession (``local[2]``) from
  :func:`samza_nb.runtime.executors.spark.get_spark`, stopped at the end of the session.
- ``service_env``: the addresses of the engine-room services (the env file written by
  ``samza-nb services up``). Missing services skip the test locally but fail it under CI
  (``$CI`` set), where they must have been started.
- ``zk_connect``: a ZooKeeper connect string with a fresh chroot per test, deleted afterwards.
- ``kafka_bootstrap`` and ``kafka_topic_prefix``: the broker address and a per-test prefix;
  topics (and consumer groups) named with the prefix are deleted afterwards.
- ``azure_connection_string`` and ``azure_container``: a per-test blob container, deleted
  afterwards.
- ``spark_standalone``: the ``spark://`` URL of a local master with two workers, started for the
  session (and stopped at its end unless it already ran before).
- ``sim_cluster``: a started 3-host :class:`~samza_nb.services.cluster.SimCluster` (hosts in
  network and mount namespaces, each with a Spark worker; ``hosts``, ``master_url``, ``run``,
  ``call``, ``kill``, ``restart``), started again for a test when an earlier one took it down,
  and torn down at the session end unless it already ran. Needs root: skipped locally without
  it, failed under CI.

Importing this module must stay cheap: pytest loads it for every run in an environment where
samza_nb is installed. pyspark, kazoo, azure and confluent_kafka are imported inside fixtures.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

from samza_nb import services
from samza_nb.errors import ServiceError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from samza_nb.services.cluster import SimCluster

__all__ = [
    "AZURE_PROCESS_TIMINGS",
    "KAFKA_TEST_CONSUMER_CONFIG",
    "OwnZooKeeper",
    "azure_connection_string",
    "azure_container",
    "delete_azure_job",
    "kafka_bootstrap",
    "StepClock",
    "kafka_topic_prefix",
    "load_service_env",
    "own_zookeeper",
    "run_local",
    "service_env",
    "sim_cluster",
    "spark",
    "spark_standalone",
    "unique_name",
    "zk_connect",
]

#: Consumer settings that keep group joins and rebalances short against the test broker.
KAFKA_TEST_CONSUMER_CONFIG: dict[str, Any] = {
    "session.timeout.ms": 6000,
    "auto.offset.reset": "earliest",
}

_MARKERS = (
    "services: needs the engine-room services (ZooKeeper, Azurite, Kafka broker)",
    "spark: needs a SparkSession",
    "slow: starts extra processes or JVMs",
)


def pytest_configure(config: pytest.Config) -> None:
    """Declare the markers the fixtures' users put on tests (safe under --strict-markers)."""
    for marker in _MARKERS:
        config.addinivalue_line("markers", marker)


def unique_name(prefix: str = "samza-nb-test") -> str:
    """``<prefix>-<12 hex digits>``: lowercase and hyphenated, valid as a topic, znode or container."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def _missing(message: str) -> NoReturn:
    """Skip locally, fail under CI: there the services must have been started."""
    if os.environ.get("CI"):
        pytest.fail(f"{message} (CI is set, so services are required)", pytrace=False)
    pytest.skip(message)


def load_service_env() -> dict[str, str]:
    """The service addresses for tests: :func:`samza_nb.services.read_service_env`, with a
    missing env file turned into a skip (locally) or a failure (under CI)."""
    try:
        return services.read_service_env()
    except ServiceError as error:
        _missing(f"{error} (or run `make test`, which starts them)")


def _parallel_worker() -> bool:
    """Whether this is one of several pytest-xdist workers: a service another worker may still
    use is left running, and the run's ``samza-nb services down`` (engine/run-tests.sh) stops it."""
    return "PYTEST_XDIST_WORKER" in os.environ


def _require(env: dict[str, str], key: str, service: str) -> str:
    value = env.get(key)
    if not value:
        message = (
            f"{service} is not running: {key} is not in the services env file; "
            f"start it with `samza-nb services up {service}`"
        )
        _missing(message)
    return value


# -- Spark ---------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """The shared ``local[2]`` SparkSession of the test session."""
    from samza_nb.runtime.executors.spark import get_spark, stop_spark

    # Few shuffle partitions: test data is tiny and 200 (Spark's default) costs seconds per query.
    session = get_spark(
        {
            "spark.master": "local[2]",
            "spark.app.name": "samza-nb-tests",
            "spark.sql.shuffle.partitions": "4",
        }
    )
    yield session
    stop_spark()


@pytest.fixture(scope="session")
def spark_standalone() -> Iterator[str]:
    """The URL of a local standalone master with two one-core workers.

    A JVM holds one SparkContext: building a session on this master in the test process replaces
    the shared ``spark`` session, so prefer running the job in a subprocess.
    """
    already_running = services.status(["spark"])[0].state == "running"
    (info,) = services.up(["spark"], timeout=120)
    yield info.env["SAMZA_NB_SPARK_MASTER_URL"]
    if not already_running and not _parallel_worker():
        services.down(["spark"])


def _cluster_up() -> None:
    try:
        services.up(["cluster"], hosts=3, timeout=300)
    except ServiceError as error:
        if os.geteuid() != 0:
            _missing(str(error))
        raise


@pytest.fixture(scope="session")
def _sim_cluster_session() -> Iterator[SimCluster]:
    from samza_nb.services import ServicesHome
    from samza_nb.services.cluster import SimCluster

    cluster = SimCluster(ServicesHome.resolve(), hosts=3)
    already_running = cluster.status().state == "running"
    _cluster_up()
    yield cluster
    if not already_running and not _parallel_worker():
        services.down(["cluster"])


@pytest.fixture
def sim_cluster(_sim_cluster_session: SimCluster) -> SimCluster:
    """Three simulated hosts (h1..h3) with one Spark worker each, under one master: started
    once per session, and again for a test when an earlier one took it down."""
    if _sim_cluster_session.status().state != "running":
        _cluster_up()
    return _sim_cluster_session


# -- the engine-room services --------------------------------------------------------------------


@pytest.fixture(scope="session")
def service_env() -> dict[str, str]:
    """Addresses of the running services (keys as in docs/services.md)."""
    return load_service_env()


@pytest.fixture
def zk_connect(service_env: dict[str, str]) -> Iterator[str]:
    """``host:port/samza-nb-test-<id>``: a chroot of its own, removed after the test."""
    from kazoo.client import KazooClient
    from kazoo.exceptions import NoNodeError

    base = _require(service_env, "SAMZA_NB_ZK_CONNECT", "zookeeper")
    hosts, _, root = base.partition("/")
    chroot = "/".join(part for part in (root.strip("/"), unique_name()) if part)
    client = KazooClient(hosts=hosts, timeout=10.0)
    client.start(timeout=15.0)
    try:
        client.ensure_path(f"/{chroot}")
        yield f"{hosts}/{chroot}"
        with contextlib.suppress(NoNodeError):
            client.delete(f"/{chroot}", recursive=True)
    finally:
        client.stop()
        client.close()


@pytest.fixture(scope="session")
def kafka_bootstrap(service_env: dict[str, str]) -> str:
    """The Kafka bootstrap address (the Tansu test broker, or a real Kafka when configured)."""
    return _require(service_env, "SAMZA_NB_KAFKA_BOOTSTRAP", "kafka")


@pytest.fixture
def kafka_topic_prefix(kafka_bootstrap: str) -> Iterator[str]:
    """``samza-nb-test-<id>-``: name topics and consumer groups with it; they are deleted after
    (so are a job's ``__samza_checkpoint_ver_1_for_<prefix>…`` / ``__samza_coordinator_<prefix>…``)."""
    from confluent_kafka.admin import AdminClient

    prefix = unique_name() + "-"
    yield prefix
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    topics = [
        name
        for name in admin.list_topics(timeout=10).topics
        if name.startswith(prefix) or (name.startswith("__samza_") and f"_{prefix}" in name)
    ]
    if topics:
        for future in admin.delete_topics(topics, operation_timeout=10).values():
            future.result(timeout=15)
    _delete_groups(admin, prefix)


class OwnZooKeeper:
    """A ZooKeeper server of one test alone, which the test stops (SIGKILL, as a crashed host:
    no goodbye to its clients) and starts again by PID on the same port and data."""

    def __init__(self, folder: Path) -> None:
        from samza_nb.services.zookeeper import ZooKeeper

        self.service = ZooKeeper(services.ServicesHome.resolve(folder))
        info = self.service.start(timeout=90)
        self.connect = info.address
        (self.pid,) = info.pids
        self.argv = Path(f"/proc/{self.pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
        self._restarted: subprocess.Popen[bytes] | None = None

    def stop(self) -> None:
        os.kill(self.pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while Path(f"/proc/{self.pid}").exists() and time.monotonic() < deadline:
            stat = Path(f"/proc/{self.pid}/stat")
            if stat.exists() and stat.read_text().split()[2] == "Z":
                break
            time.sleep(0.05)

    def start_again(self) -> None:
        """The same server (argv, port, data folder) in a process of the test's."""
        from samza_nb.services.zookeeper import zookeeper_session_ok

        with (self.service.directory / "restarted.log").open("ab") as log:
            self._restarted = subprocess.Popen(
                [arg.decode() for arg in self.argv], cwd=self.service.directory,
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )
        host, _, port = self.connect.partition(":")
        deadline = time.monotonic() + 60
        while True:
            try:
                if zookeeper_session_ok(host, int(port)):
                    return
            except OSError:
                pass
            assert time.monotonic() < deadline, "the restarted ZooKeeper did not serve in 60 s"
            time.sleep(0.2)

    def close(self) -> None:
        if self._restarted is not None and self._restarted.poll() is None:
            self._restarted.kill()
            self._restarted.wait(30)
        self.service.stop()


@pytest.fixture
def own_zookeeper(tmp_path: Path) -> Iterator[OwnZooKeeper]:
    """A ZooKeeper server of this test alone (:class:`OwnZooKeeper`), stopped after it."""
    server = OwnZooKeeper(tmp_path / "services")
    try:
        yield server
    finally:
        server.close()


def _delete_groups(admin: Any, prefix: str) -> None:
    """Best effort: not every Kafka-protocol broker lists or deletes consumer groups."""
    from confluent_kafka import KafkaException

    try:
        listed = admin.list_consumer_groups(request_timeout=10).result(timeout=15)
        groups = [group.group_id for group in listed.valid if group.group_id.startswith(prefix)]
        if groups:
            for future in admin.delete_consumer_groups(groups, request_timeout=10).values():
                future.result(timeout=15)
    except KafkaException as error:
        warnings.warn(f"could not delete consumer groups {prefix}*: {error}", stacklevel=2)


@pytest.fixture(scope="session")
def azure_connection_string(service_env: dict[str, str]) -> str:
    """The storage connection string (Azurite's development account, or the configured one)."""
    return _require(service_env, "SAMZA_NB_AZURE_CONNECTION_STRING", "azurite")


@pytest.fixture
def azure_container(azure_connection_string: str) -> Iterator[str]:
    """A blob container of the test's own, deleted with its blobs afterwards."""
    from azure.core.exceptions import ResourceNotFoundError
    from azure.storage.blob import BlobServiceClient

    name = unique_name()
    with BlobServiceClient.from_connection_string(azure_connection_string) as client:
        client.create_container(name)
        yield name
        with contextlib.suppress(ResourceNotFoundError):
            client.delete_container(name)


#: The Azure coordinator's protocol clocks shortened for processes under test: Azurite's shortest
#: lease is 15 s, everything else is shortened around it.
AZURE_PROCESS_TIMINGS = {
    "job.debounce.time.ms": "2000",
    "job.coordinator.azure.heartbeat.interval.ms": "500",
    "job.coordinator.azure.liveness.timeout.ms": "8000",
    "job.coordinator.azure.leader.check.interval.ms": "1000",
    "job.coordinator.azure.membership.check.interval.ms": "500",
    "job.coordinator.azure.barrier.check.interval.ms": "300",
    "job.coordinator.azure.barrier.timeout.ms": "5000",
    "job.coordinator.azure.upgrade.check.interval.ms": "300",
    "job.coordinator.azure.lease.duration.ms": "15000",
    "job.coordinator.azure.lease.renew.interval.ms": "3000",
}


def delete_azure_job(app_name: str, connection_string: str) -> None:
    """Delete what an Azure-coordinated job of ``app_name`` left in the storage account: its
    coordination container and table, and its metadata store's container (best effort)."""
    from samza_nb.config import Config
    from samza_nb.coordination.azure import AzureNames
    from samza_nb.metadata.azure import AzureBlobMetadataStore
    from samza_nb.metadata.azure_storage import AzureAccount

    config = Config({"app.name": app_name, "azure.storage.connect": connection_string})
    account = AzureAccount.from_config(config)
    names = AzureNames.for_job(config)
    with account.blob_service() as blobs:
        for container in (names.container, AzureBlobMetadataStore.for_job(config).container):
            with contextlib.suppress(Exception):
                blobs.delete_container(container)
    with account.table_service() as tables:
        tables.delete_table(names.table)


# -- Running applications in tests ----------------------------------------------------------------
class StepClock:
    """A hand-driven processing-time clock for ``run(..., clock=)``: every call (one per
    processor epoch) moves time on by ``step_ms``, from ``start_ms``."""

    def __init__(self, step_ms: int = 1_000, start_ms: int = 1_700_000_000_000) -> None:
        self.step_ms = step_ms
        self.now_ms = start_ms

    def __call__(self) -> int:
        self.now_ms += self.step_ms
        return self.now_ms


def run_local(app: Any, config: Any = None, **options: Any) -> Any:
    """:func:`samza_nb.run` with every task epoch in this process instead of on Spark.

    The same tasks, checkpoints, stores and control messages, without a JVM: operator and
    window semantics are tested in milliseconds. The product path stays Spark.
    """
    from samza_nb.job.launch import run

    return run(app, config, executor="local", **options)

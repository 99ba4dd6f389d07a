"""Helpers for the Azure coordination tests: a job of its own per test (container, table and
metadata container deleted afterwards), short timings, and coordinators with recording
listeners (the ZooKeeper tests' RecordingListener)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from samza_nb.config import Config
from samza_nb.coordination.azure import AzureJobCoordinator, AzureNames
from samza_nb.metadata.azure import AzureBlobMetadataStore
from samza_nb.metadata.azure_storage import AzureAccount
from samza_nb.testing import unique_name

from ..zk.conftest import RecordingListener, calculator, wait_until

__all__ = ["RecordingListener", "azure_config", "wait_until"]

#: Azurite's shortest lease; everything else is shortened around it.
LEASE_MS = 15000
TIMINGS = {
    "job.debounce.time.ms": "300",
    "job.coordinator.azure.heartbeat.interval.ms": "500",
    "job.coordinator.azure.liveness.timeout.ms": "3000",
    "job.coordinator.azure.leader.check.interval.ms": "1000",
    "job.coordinator.azure.membership.check.interval.ms": "500",
    "job.coordinator.azure.barrier.check.interval.ms": "300",
    "job.coordinator.azure.barrier.timeout.ms": "2500",
    "job.coordinator.azure.upgrade.check.interval.ms": "300",
    "job.coordinator.azure.lease.duration.ms": str(LEASE_MS),
    "job.coordinator.azure.lease.renew.interval.ms": "3000",
    "azure.storage.retry.attempts": "2",
    "azure.storage.retry.interval.ms": "200",
    "azure.storage.timeout.ms": "3000",
}


def azure_config(app_name: str, connect: str, **overrides: Any) -> Config:
    entries = {
        "app.name": app_name,
        "job.id": "1",
        "azure.storage.connect": connect,
        "task.name.grouper.factory": "group-by-container-ids",
        "job.host-affinity.enabled": "true",
        **TIMINGS,
    }
    entries.update({key: str(value) for key, value in overrides.items()})
    return Config(entries)


def delete_job_resources(config: Config) -> None:
    """The job's coordination container and table and its metadata container."""
    account = AzureAccount.from_config(config)
    names = AzureNames.for_job(config)
    with account.blob_service() as blobs:
        for container in (names.container, AzureBlobMetadataStore.for_job(config).container):
            with contextlib.suppress(Exception):
                blobs.delete_container(container)
    with account.table_service() as tables:
        with contextlib.suppress(Exception):
            tables.delete_table(names.table)


@pytest.fixture
def app_name() -> str:
    return unique_name()


@pytest.fixture
def job_config(app_name: str, azure_connection_string: str) -> Iterator[Config]:
    config = azure_config(app_name, azure_connection_string)
    yield config
    delete_job_resources(config)


@pytest.fixture
def metadata(job_config: Config) -> Iterator[AzureBlobMetadataStore]:
    store = AzureBlobMetadataStore.for_job(job_config)
    yield store
    store.close()


@pytest.fixture
def coordinators(
    job_config: Config, metadata: AzureBlobMetadataStore
) -> Iterator[Callable[..., tuple[AzureJobCoordinator, RecordingListener]]]:
    """``make(pid, location, start=True, partitions=6, **config overrides)``."""
    made: list[AzureJobCoordinator] = []

    def make(
        pid: str, location: str, *, start: bool = True, partitions: int = 6, **overrides: Any
    ) -> tuple[AzureJobCoordinator, RecordingListener]:
        config = Config({**job_config.to_dict(), **{k: str(v) for k, v in overrides.items()}})
        coordinator = AzureJobCoordinator(calculator(config, partitions), config, metadata=metadata)
        listener = RecordingListener()
        coordinator.attach(pid, location, listener)
        made.append(coordinator)
        if start:
            coordinator.start()
        return coordinator, listener

    yield make
    for coordinator in made:
        coordinator.stop()

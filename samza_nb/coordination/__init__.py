"""Coordination: location ids and the persisted assignments and locality of a job.

The job coordinators (embedded, ZooKeeper, Azure) build on these. ``zookeeper`` is registered
here lazily, so naming it in ``job.coordinator.factory`` works without importing kazoo first.
"""

from typing import Any

from samza_nb.coordination.assignments import (
    PROCESSOR_LOCALITY_NAMESPACE,
    TASK_CONTAINER_NAMESPACE,
    TASK_LOCALITY_NAMESPACE,
    TASK_MODE_NAMESPACE,
    TASK_PARTITION_NAMESPACE,
    LocalityManager,
    TaskAssignmentManager,
    TaskPartitionAssignmentManager,
    grouper_metadata_from_store,
    update_task_assignments,
)
from samza_nb.coordination.coordinator import JobCoordinator, register_job_coordinator
from samza_nb.coordination.locality import (
    DefaultLocationIdProvider,
    FixedLocationIdProvider,
    LocationIdProvider,
    get_location_id_provider,
    host_location_id,
    location_id_provider_names,
    register_location_id_provider,
)


def _zookeeper(**options: Any) -> JobCoordinator:
    # kazoo is imported only by jobs that use ZooKeeper.
    from samza_nb.coordination.zk.factory import zookeeper_job_coordinator

    return zookeeper_job_coordinator(**options)


register_job_coordinator("zookeeper", _zookeeper)

__all__ = [
    "PROCESSOR_LOCALITY_NAMESPACE",
    "TASK_CONTAINER_NAMESPACE",
    "TASK_LOCALITY_NAMESPACE",
    "TASK_MODE_NAMESPACE",
    "TASK_PARTITION_NAMESPACE",
    "DefaultLocationIdProvider",
    "FixedLocationIdProvider",
    "LocalityManager",
    "LocationIdProvider",
    "TaskAssignmentManager",
    "TaskPartitionAssignmentManager",
    "get_location_id_provider",
    "grouper_metadata_from_store",
    "host_location_id",
    "location_id_provider_names",
    "register_location_id_provider",
    "update_task_assignments",
]

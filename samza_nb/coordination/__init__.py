"""Coordination: location ids and the persisted assignments and locality of a job.

The job coordinators (embedded, ZooKeeper, Azure) build on these; coordinator.py names the
built-in ones and imports each on first use (kazoo only for jobs that use ZooKeeper).
"""


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
from samza_nb.coordination.locality import (
    DefaultLocationIdProvider,
    FixedLocationIdProvider,
    LocationIdProvider,
    get_location_id_provider,
    host_location_id,
    location_id_provider_names,
    register_location_id_provider,
)
from samza_nb.coordination.store_locality import STORE_LOCALITY_NAMESPACE, StoreLocality

__all__ = [
    "PROCESSOR_LOCALITY_NAMESPACE",
    "STORE_LOCALITY_NAMESPACE",
    "TASK_CONTAINER_NAMESPACE",
    "TASK_LOCALITY_NAMESPACE",
    "TASK_MODE_NAMESPACE",
    "TASK_PARTITION_NAMESPACE",
    "DefaultLocationIdProvider",
    "FixedLocationIdProvider",
    "LocalityManager",
    "LocationIdProvider",
    "StoreLocality",
    "TaskAssignmentManager",
    "TaskPartitionAssignmentManager",
    "get_location_id_provider",
    "grouper_metadata_from_store",
    "host_location_id",
    "location_id_provider_names",
    "register_location_id_provider",
    "update_task_assignments",
]

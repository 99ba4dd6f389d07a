"""The job model: streams, partitions, tasks, containers and the job (SAMZA.md §0, §3).

Pure Python and immutable; the runtime uses these as dict keys in hot paths.
"""

from samza_nb.model.container import ContainerModel
from samza_nb.model.job import JobModel
from samza_nb.model.location import (
    LocationId,
    check_location_folders,
    check_location_id,
    location_folder,
    path_safe,
)
from samza_nb.model.names import java_sort_key, java_sorted
from samza_nb.model.system_stream import SystemStream, SystemStreamPartition
from samza_nb.model.task import TaskMode, TaskModel

__all__ = [
    "ContainerModel",
    "JobModel",
    "LocationId",
    "SystemStream",
    "SystemStreamPartition",
    "TaskMode",
    "TaskModel",
    "check_location_folders",
    "check_location_id",
    "java_sort_key",
    "java_sorted",
    "location_folder",
    "path_safe",
]

"""Who runs what: SSP groupers (partitions → tasks), task groupers (tasks → processors),
hot standby placement and failover. Pure Python; see docs/grouping.md."""

from samza_nb.grouping.balance import (
    Balance,
    Move,
    balance,
    min_moves,
    moved_tasks,
    task_assignment,
)
from samza_nb.grouping.base import TaskNameGrouper
from samza_nb.grouping.broadcast import parse_broadcast_inputs
from samza_nb.grouping.changelog import assign_changelog_partitions, build_task_models
from samza_nb.grouping.expansion import PartitionMapper, expand_partitions, hash_partition_mapper
from samza_nb.grouping.group_by_container_count import GroupByContainerCount
from samza_nb.grouping.group_by_container_ids import GroupByContainerIds
from samza_nb.grouping.host_affinity import HostAffinityGrouper, previous_location, store_locations
from samza_nb.grouping.metadata import GrouperMetadata
from samza_nb.grouping.registry import (
    get_grouper,
    get_ssp_grouper,
    grouper_for_processors,
    grouper_from_config,
    grouper_names,
    register_grouper,
    register_ssp_grouper,
    ssp_grouper_from_config,
    ssp_grouper_names,
)
from samza_nb.grouping.single_container import SingleContainerGrouper
from samza_nb.grouping.ssp_groupers import (
    AllSspToSingleTask,
    GroupByPartition,
    GroupBySystemStreamPartition,
    SspGrouper,
)
from samza_nb.grouping.standby import (
    active_container_id,
    active_task_name,
    add_standby_containers,
    assign_with_standbys,
    check_standby_invariants,
    failover,
    is_standby_task_name,
    standby_constraints,
    standby_container_id,
    standby_task_name,
)

__all__ = [
    "AllSspToSingleTask",
    "Balance",
    "GroupByContainerCount",
    "GroupByContainerIds",
    "GroupByPartition",
    "GroupBySystemStreamPartition",
    "GrouperMetadata",
    "HostAffinityGrouper",
    "Move",
    "PartitionMapper",
    "SingleContainerGrouper",
    "SspGrouper",
    "TaskNameGrouper",
    "active_container_id",
    "active_task_name",
    "add_standby_containers",
    "assign_changelog_partitions",
    "assign_with_standbys",
    "balance",
    "build_task_models",
    "check_standby_invariants",
    "expand_partitions",
    "failover",
    "get_grouper",
    "grouper_for_processors",
    "get_ssp_grouper",
    "grouper_from_config",
    "grouper_names",
    "hash_partition_mapper",
    "is_standby_task_name",
    "min_moves",
    "moved_tasks",
    "parse_broadcast_inputs",
    "previous_location",
    "store_locations",
    "register_grouper",
    "register_ssp_grouper",
    "ssp_grouper_from_config",
    "ssp_grouper_names",
    "standby_constraints",
    "standby_container_id",
    "standby_task_name",
    "task_assignment",
]

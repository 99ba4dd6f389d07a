"""Changelog partitions and TaskModels from an SSP grouping (SAMZA.md §2.5)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from samza_nb.errors import GroupingError
from samza_nb.model import SystemStreamPartition, TaskModel, java_sorted

__all__ = ["assign_changelog_partitions", "build_task_models"]


def assign_changelog_partitions(
    task_names: Iterable[str], previous: Mapping[str, int] | None = None
) -> dict[str, int]:
    """Task name → changelog partition, keeping every previous mapping.

    New tasks, in task-name order, get ``max(previous partitions, -1) + 1``, ``+ 2`` … so a
    task's state never changes changelog partition while it exists.

    >>> assign_changelog_partitions(["P0", "P1", "P2", "P3"], {"P0": 1, "P1": 0})
    {'P0': 1, 'P1': 0, 'P2': 2, 'P3': 3}
    """
    known = dict(previous or {})
    for name, partition in known.items():
        if isinstance(partition, bool) or not isinstance(partition, int) or partition < 0:
            msg = f"changelog partition of task {name!r} must be an integer >= 0, got {partition!r}"
            raise GroupingError(msg)
    next_partition = max(known.values(), default=-1) + 1
    result: dict[str, int] = {}
    for name in java_sorted(set(task_names)):
        if name in known:
            result[name] = known[name]
        else:
            result[name] = next_partition
            next_partition += 1
    return result


def build_task_models(
    grouped: Mapping[str, Iterable[SystemStreamPartition]],
    previous_changelog_partitions: Mapping[str, int] | None = None,
) -> dict[str, TaskModel]:
    """Active TaskModels for an SSP grouping, with changelog partitions assigned as above."""
    partitions = assign_changelog_partitions(grouped, previous_changelog_partitions)
    return {name: TaskModel(name, grouped[name], partitions[name]) for name in partitions}

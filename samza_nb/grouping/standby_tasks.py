"""What a standby task is: its name and its container's (Samza's naming, §4.1, parsed back by
stripping the prefix and the numeric suffix), its TaskModel, and the replication factor check
(grouping/standby.py)."""

from __future__ import annotations

from samza_nb.errors import GroupingError
from samza_nb.model import (
    TaskMode,
    TaskModel,
)

__all__ = [
    "active_container_id",
    "active_task_name",
    "check_replication_factor",
    "is_standby_task_name",
    "standby_container_id",
    "standby_task_name",
]


_PREFIX = "Standby-"


def standby_task_name(active_task: str, replica: int) -> str:
    """``Standby-<task>-<replica>``.

    >>> standby_task_name("Partition 0", 0)
    'Standby-Partition 0-0'
    """
    return f"{_PREFIX}{active_task}-{replica}"


def standby_container_id(active_container: str, replica: int) -> str:
    """``<container>-<replica>``.

    >>> standby_container_id("0", 1)
    '0-1'
    """
    return f"{active_container}-{replica}"


def _split_standby(name: str) -> tuple[str, int] | None:
    if not name.startswith(_PREFIX):
        return None
    body, dash, replica = name[len(_PREFIX) :].rpartition("-")
    if not dash or not body or not replica.isdigit():
        return None
    return body, int(replica)


def is_standby_task_name(name: str) -> bool:
    """Whether ``name`` has the form ``Standby-<task>-<replica>``."""
    return _split_standby(name) is not None


def active_task_name(standby_task: str) -> str:
    """The active task of a standby task name.

    >>> active_task_name("Standby-SystemStreamPartition [kafka, my-topic, 0]-1")
    'SystemStreamPartition [kafka, my-topic, 0]'
    """
    parts = _split_standby(standby_task)
    if parts is None:
        msg = f"{standby_task!r} is not a standby task name (expected 'Standby-<task>-<replica>')"
        raise GroupingError(msg)
    return parts[0]


def active_container_id(standby_container: str) -> str:
    """The active container of a standby container id (text before the last ``-``).

    >>> active_container_id("0-1")
    '0'
    """
    container, dash, replica = standby_container.rpartition("-")
    if not dash or not container or not replica.isdigit():
        msg = f"{standby_container!r} is not a standby container id (expected '<container>-<replica>')"
        raise GroupingError(msg)
    return container


def check_replication_factor(replication_factor: int, where: str) -> None:
    """A GroupingError naming ``where`` unless the factor is an int of at least 1."""
    if (
        isinstance(replication_factor, bool)
        or not isinstance(replication_factor, int)
        or replication_factor < 1
    ):
        msg = (
            f"{where}: replication factor (job.standbytasks.replication.factor) must be an "
            f"integer >= 1, got {replication_factor!r}"
        )
        raise GroupingError(msg)


def _standby_of(task: TaskModel, replica: int) -> TaskModel:
    return TaskModel(
        standby_task_name(task.name, replica), task.ssps, task.changelog_partition, TaskMode.STANDBY
    )

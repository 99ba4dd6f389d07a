"""Shared builders for the grouping tests."""

from __future__ import annotations

from collections.abc import Iterable

from samza_nb.model import ContainerModel, SystemStreamPartition, TaskModel


def task_name(i: int) -> str:
    return f"Partition {i}"


def task_models(count: int) -> set[TaskModel]:
    """Samza's test tasks: ``Partition i`` reading kafka.PVE partition i, changelog i."""
    return {
        TaskModel(task_name(i), [SystemStreamPartition("kafka", "PVE", i)], i) for i in range(count)
    }


def by_id(containers: Iterable[ContainerModel]) -> dict[str, set[str]]:
    """Processor id → task names."""
    return {c.processor_id: set(c.tasks) for c in containers}


def names(*indexes: int) -> set[str]:
    return {task_name(i) for i in indexes}


def assignment(containers: Iterable[ContainerModel]) -> dict[str, str]:
    """Task name → processor id."""
    return {name: c.processor_id for c in containers for name in c.tasks}

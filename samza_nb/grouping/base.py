"""The task grouper contract: a pure function of (tasks, GrouperMetadata) (SEP host affinity)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from typing import ClassVar

from samza_nb.errors import GroupingError
from samza_nb.grouping.metadata import GrouperMetadata
from samza_nb.model import ContainerModel, TaskModel, java_sorted

__all__ = ["TaskNameGrouper", "task_models_by_name"]


class TaskNameGrouper(ABC):
    """Assigns tasks to processors; the result has one ContainerModel per processor used.

    Implementations are pure: the same tasks and metadata give the same containers, whatever
    the iteration order of the inputs.
    """

    #: The registry name of the grouper (``get_grouper(name)``).
    name: ClassVar[str] = ""

    @abstractmethod
    def group(
        self,
        tasks: Iterable[TaskModel] | Mapping[str, TaskModel],
        metadata: GrouperMetadata | None = None,
    ) -> frozenset[ContainerModel]:
        """Assign ``tasks`` to processors."""


def task_models_by_name(
    tasks: Iterable[TaskModel] | Mapping[str, TaskModel], *, grouper: str
) -> dict[str, TaskModel]:
    """The tasks keyed by name in Java's task-name order; duplicates are an error."""
    values = tasks.values() if isinstance(tasks, Mapping) else tasks
    by_name: dict[str, TaskModel] = {}
    for task in values:
        if not isinstance(task, TaskModel):
            msg = f"{grouper}: expected TaskModels, got {task!r}"
            raise GroupingError(msg)
        if task.name in by_name:
            msg = f"{grouper}: task {task.name!r} is given twice"
            raise GroupingError(msg)
        by_name[task.name] = task
    return {name: by_name[name] for name in java_sorted(by_name)}

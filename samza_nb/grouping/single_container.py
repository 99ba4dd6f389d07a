"""SingleContainerGrouper: every task in one container (SAMZA.md §1.4)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from samza_nb.errors import GroupingError
from samza_nb.grouping.base import TaskNameGrouper, task_models_by_name
from samza_nb.grouping.metadata import GrouperMetadata
from samza_nb.model import ContainerModel, TaskModel

__all__ = ["SingleContainerGrouper"]


class SingleContainerGrouper(TaskNameGrouper):
    """One ContainerModel, id ``processor_id`` (Samza's ``processor.id``), with all tasks.

    >>> from samza_nb.model import TaskModel
    >>> [c.processor_id for c in SingleContainerGrouper("p1").group([TaskModel("t")])]
    ['p1']
    """

    name = "single-container"

    def __init__(self, processor_id: str = "0") -> None:
        if not isinstance(processor_id, str) or not processor_id:
            msg = f"SingleContainerGrouper: processor id must be a non-empty string, got {processor_id!r}"
            raise GroupingError(msg)
        self.processor_id = processor_id

    def __repr__(self) -> str:
        return f"SingleContainerGrouper({self.processor_id!r})"

    def group(
        self,
        tasks: Iterable[TaskModel] | Mapping[str, TaskModel],
        metadata: GrouperMetadata | None = None,
    ) -> frozenset[ContainerModel]:
        by_name = task_models_by_name(tasks, grouper="SingleContainerGrouper")
        location = metadata.processor_locality.get(self.processor_id) if metadata else None
        return frozenset([ContainerModel(self.processor_id, by_name, location)])

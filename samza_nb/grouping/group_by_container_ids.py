"""GroupByContainerIds: Samza's standalone task grouper, exactly as Samza does it (§1.3)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from samza_nb.errors import GroupingError
from samza_nb.grouping.base import TaskNameGrouper, task_models_by_name
from samza_nb.grouping.metadata import GrouperMetadata
from samza_nb.model import ContainerModel, LocationId, TaskModel, java_sort_key, java_sorted

__all__ = ["GroupByContainerIds"]


class GroupByContainerIds(TaskNameGrouper):
    """Round robin over processor ids, or Samza's location-aware variant.

    ``host_affinity=False`` (Samza's ``group(tasks, ids)``): tasks in task-name order go round
    robin over the processor ids — ``processor_ids`` in the given order; else the keys of
    ``metadata.processor_locality`` in their order; else ``"0"`` … ``"container_count-1"``. With
    more ids than tasks only the lexicographically smallest ``len(tasks)`` ids are used.

    ``host_affinity=True`` (Samza's ``group(tasks, metadata)``): processors are sorted by id and
    cut to the task count; quota q = tasks // processors; first each task (in sorted order)
    goes to the first processor at its previous location still under q, then the rest fill
    processors under q in id order, then one each round robin from the smallest id. Previous
    processor ids are not used (the SEP order is :class:`HostAffinityGrouper`). Iterating tasks
    and processors in sorted order settles Samza's hash-order ambiguity (Appendix A #1). Given
    ``processor_ids`` restrict the processors of ``metadata.processor_locality`` to those ids.

    >>> from samza_nb.model import TaskModel
    >>> tasks = [TaskModel(f"Partition {i}", changelog_partition=i) for i in range(5)]
    >>> containers = GroupByContainerIds(["4", "2"]).group(tasks)
    >>> sorted((c.processor_id, len(c)) for c in containers)
    [('2', 2), ('4', 3)]
    """

    name = "group-by-container-ids"

    def __init__(
        self,
        processor_ids: Sequence[str] | None = None,
        *,
        container_count: int = 1,
        host_affinity: bool = False,
    ) -> None:
        if isinstance(container_count, bool) or not isinstance(container_count, int):
            msg = (
                f"GroupByContainerIds: container count must be an integer, got {container_count!r}"
            )
            raise GroupingError(msg)
        if processor_ids is not None:
            if isinstance(processor_ids, str):
                msg = (
                    "GroupByContainerIds: processor_ids must be a sequence of ids, not a string "
                    f"({processor_ids!r}); write [{processor_ids!r}]"
                )
                raise GroupingError(msg)
            processor_ids = list(processor_ids)
            for pid in processor_ids:
                if not isinstance(pid, str) or not pid:
                    msg = (
                        f"GroupByContainerIds: processor ids must be non-empty strings, got {pid!r}"
                    )
                    raise GroupingError(msg)
            if len(set(processor_ids)) != len(processor_ids):
                msg = f"GroupByContainerIds: processor ids repeat: {processor_ids!r}"
                raise GroupingError(msg)
        self.processor_ids = processor_ids
        self.container_count = container_count
        self.host_affinity = host_affinity

    def __repr__(self) -> str:
        return (
            f"GroupByContainerIds({self.processor_ids!r}, container_count={self.container_count}, "
            f"host_affinity={self.host_affinity})"
        )

    def group(
        self,
        tasks: Iterable[TaskModel] | Mapping[str, TaskModel],
        metadata: GrouperMetadata | None = None,
    ) -> frozenset[ContainerModel]:
        by_name = task_models_by_name(tasks, grouper="GroupByContainerIds")
        locality: Mapping[str, LocationId] = metadata.processor_locality if metadata else {}
        if self.host_affinity:
            return self._group_by_locality(by_name, metadata or GrouperMetadata())
        if self.processor_ids is not None:
            ids = self.processor_ids
        elif locality:
            ids = list(locality)
        else:
            ids = [str(i) for i in range(self.container_count)]
        return self._round_robin(by_name, ids, locality)

    @staticmethod
    def _round_robin(
        by_name: dict[str, TaskModel], ids: Sequence[str], locality: Mapping[str, LocationId]
    ) -> frozenset[ContainerModel]:
        if not ids:
            msg = "GroupByContainerIds: must have at least one container (no processor ids given)"
            raise GroupingError(msg)
        if not by_name:
            msg = f"GroupByContainerIds: cannot group an empty set of tasks; processor ids={list(ids)}"
            raise GroupingError(msg)
        if len(ids) > len(by_name):
            ids = java_sorted(ids)[: len(by_name)]
        groups: list[list[TaskModel]] = [[] for _ in ids]
        for index, task in enumerate(by_name.values()):
            groups[index % len(ids)].append(task)
        return frozenset(
            ContainerModel(pid, group, locality.get(pid))
            for pid, group in zip(ids, groups, strict=True)
        )

    def _group_by_locality(
        self, by_name: dict[str, TaskModel], metadata: GrouperMetadata
    ) -> frozenset[ContainerModel]:
        if not by_name:
            msg = (
                "GroupByContainerIds: no tasks found, likely because the job has no input "
                "partitions; a job needs at least one task"
            )
            raise GroupingError(msg)
        locality = dict(metadata.processor_locality)
        if self.processor_ids is not None:
            locality = {pid: locality[pid] for pid in self.processor_ids if pid in locality}
        if not locality:
            msg = (
                "GroupByContainerIds: must have at least one container; host affinity needs "
                "the live processors in metadata.processor_locality"
            )
            raise GroupingError(msg)
        processors = sorted(locality, key=java_sort_key)[: len(by_name)]
        quota = len(by_name) // len(processors)
        at_location: dict[LocationId, list[str]] = {}
        for pid in processors:
            at_location.setdefault(locality[pid], []).append(pid)
        assigned: dict[str, list[TaskModel]] = {pid: [] for pid in processors}
        # Sizes only grow, so a processor at quota stays there: each location's list and the
        # global list are scanned with a cursor that never moves back (linear overall).
        cursor = dict.fromkeys(at_location, 0)
        leftover: list[TaskModel] = []
        task_locality = metadata.task_locality
        for name, task in by_name.items():
            location = task_locality.get(name)
            candidates = at_location.get(location) if location is not None else None
            if candidates:
                index = cursor[location]  # type: ignore[index]
                while index < len(candidates) and len(assigned[candidates[index]]) >= quota:
                    index += 1
                cursor[location] = index  # type: ignore[index]
                if index < len(candidates):
                    assigned[candidates[index]].append(task)
                    continue
            leftover.append(task)
        first_under = 0
        cycle = 0
        for task in leftover:
            while first_under < len(processors) and len(assigned[processors[first_under]]) >= quota:
                first_under += 1
            if first_under < len(processors):
                assigned[processors[first_under]].append(task)
            else:
                assigned[processors[cycle % len(processors)]].append(task)
                cycle += 1
        return frozenset(ContainerModel(pid, assigned[pid], locality[pid]) for pid in processors)

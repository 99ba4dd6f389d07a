"""GroupByContainerCount: Samza's default task grouper, exactly as Samza does it (SAMZA.md §1.2)."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping

from samza_nb.errors import GroupingError
from samza_nb.grouping.base import TaskNameGrouper, task_models_by_name
from samza_nb.grouping.metadata import GrouperMetadata
from samza_nb.model import ContainerModel, TaskModel, java_sorted

__all__ = ["GroupByContainerCount"]


class GroupByContainerCount(TaskNameGrouper):
    """N containers with ids ``"0"`` … ``"N-1"``.

    Without metadata (Samza: host affinity disabled) tasks go round robin in task-name order.
    With metadata (host affinity enabled) Samza's balance algorithm keeps tasks on their
    previous container ids and moves only the surplus of each container, lexicographically
    last tasks first, to the containers below their target size. Locations are ignored.

    One difference from Samza (Appendix A #3): a previous assignment of the same size but
    naming other tasks falls back to round robin instead of failing.

    >>> from samza_nb.model import TaskModel
    >>> tasks = [TaskModel(f"Partition {i}", changelog_partition=i) for i in range(5)]
    >>> containers = GroupByContainerCount(2).group(tasks)
    >>> {c.processor_id: list(c.tasks) for c in containers}["0"]
    ['Partition 0', 'Partition 2', 'Partition 4']
    """

    name = "group-by-container-count"

    def __init__(self, container_count: int) -> None:
        if isinstance(container_count, bool) or not isinstance(container_count, int):
            msg = f"GroupByContainerCount: container count must be an integer, got {container_count!r}"
            raise GroupingError(msg)
        if container_count <= 0:
            msg = (
                f"GroupByContainerCount: must have at least one container, got container count "
                f"{container_count} (job.container.count)"
            )
            raise GroupingError(msg)
        self.container_count = container_count

    def __repr__(self) -> str:
        return f"GroupByContainerCount({self.container_count})"

    def group(
        self,
        tasks: Iterable[TaskModel] | Mapping[str, TaskModel],
        metadata: GrouperMetadata | None = None,
    ) -> frozenset[ContainerModel]:
        by_name = task_models_by_name(tasks, grouper="GroupByContainerCount")
        self._validate(by_name)
        if metadata is None:
            return self._round_robin(by_name)
        return self._balance(by_name, metadata)

    def _validate(self, by_name: dict[str, TaskModel]) -> None:
        if not by_name:
            msg = (
                "GroupByContainerCount: no tasks found, likely because the job has no input "
                "partitions; a job needs at least one task"
            )
            raise GroupingError(msg)
        if len(by_name) < self.container_count:
            msg = (
                f"GroupByContainerCount: container count ({self.container_count}) is larger than "
                f"task count ({len(by_name)}); lower job.container.count to at most "
                f"{len(by_name)}"
            )
            raise GroupingError(msg)

    def _round_robin(self, by_name: dict[str, TaskModel]) -> frozenset[ContainerModel]:
        groups: list[list[TaskModel]] = [[] for _ in range(self.container_count)]
        for index, task in enumerate(by_name.values()):
            groups[index % self.container_count].append(task)
        return frozenset(ContainerModel(str(i), group) for i, group in enumerate(groups))

    def _balance(
        self, by_name: dict[str, TaskModel], metadata: GrouperMetadata
    ) -> frozenset[ContainerModel]:
        previous = metadata.previous_task_to_processor
        if not previous or len(previous) != len(by_name):
            return self._round_robin(by_name)
        if any(name not in by_name for name in previous):
            # Samza dereferences a missing TaskModel here (Appendix A #3); start afresh instead.
            return self._round_robin(by_name)
        grouped: dict[str, list[str]] = {}
        for name, container_id in previous.items():
            grouped.setdefault(container_id, []).append(name)
        previous_count = len(grouped)
        if any(str(i) not in grouped for i in range(previous_count)):
            return self._round_robin(by_name)
        if previous_count == 1 or self.container_count == 1:
            return self._round_robin(by_name)
        containers = [java_sorted(grouped[str(i)]) for i in range(previous_count)]
        if previous_count == self.container_count:
            # Kept as is, even when deliberately unbalanced: custom assignments are preserved.
            return self._build(by_name, containers)

        task_count = len(by_name)
        base, extra = divmod(task_count, self.container_count)
        slots = max(previous_count, self.container_count)
        targets = [
            (base + (1 if i < extra else 0)) if i < self.container_count else 0
            for i in range(slots)
        ]
        to_move: deque[str] = deque()
        for i, names in enumerate(containers):
            while len(names) > targets[i]:
                to_move.append(names.pop())
        if self.container_count > previous_count:
            containers.extend([] for _ in range(self.container_count - previous_count))
        else:
            del containers[self.container_count :]
        for i, names in enumerate(containers):
            while len(names) < targets[i]:
                names.append(to_move.popleft())
        return self._build(by_name, containers)

    @staticmethod
    def _build(
        by_name: dict[str, TaskModel], containers: list[list[str]]
    ) -> frozenset[ContainerModel]:
        return frozenset(
            ContainerModel(str(i), [by_name[name] for name in names])
            for i, names in enumerate(containers)
        )

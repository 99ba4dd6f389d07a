"""How an assignment changed and how even it is: moved tasks, balance, the movement lower bound.

These back the grouper explorer widget and bench/grouping.py; they accept a JobModel, an
iterable of ContainerModels or a plain task name → processor id mapping.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from samza_nb.model import ContainerModel, JobModel, TaskMode, java_sorted

__all__ = ["Balance", "Move", "balance", "min_moves", "moved_tasks", "task_assignment"]

Assignment = JobModel | Iterable[ContainerModel] | Mapping[str, str]


def _containers(value: JobModel | Iterable[ContainerModel]) -> Iterable[ContainerModel]:
    return value.containers.values() if isinstance(value, JobModel) else value


def task_assignment(value: Assignment, *, mode: TaskMode | None = None) -> dict[str, str]:
    """Task name → processor id (only tasks of ``mode`` unless it is None).

    A plain mapping is returned as a copy (it carries no modes).
    """
    if isinstance(value, Mapping):
        return dict(value)
    return {
        name: container.processor_id
        for container in _containers(value)
        for name, task in container.tasks.items()
        if mode is None or task.mode is mode
    }


@dataclass(frozen=True)
class Move:
    """A task that changed processor (``None`` = the task was not assigned on that side)."""

    task: str
    before: str | None
    after: str | None


def moved_tasks(
    before: Assignment, after: Assignment, *, mode: TaskMode | None = TaskMode.ACTIVE
) -> list[Move]:
    """Tasks present in both assignments whose processor changed, in task-name order.

    >>> moved_tasks({"a": "p1", "b": "p2"}, {"a": "p1", "b": "p3", "c": "p1"})
    [Move(task='b', before='p2', after='p3')]
    """
    old = task_assignment(before, mode=mode)
    new = task_assignment(after, mode=mode)
    return [
        Move(name, old[name], new[name])
        for name in java_sorted(old.keys() & new.keys())
        if old[name] != new[name]
    ]


@dataclass(frozen=True)
class Balance:
    """Tasks per processor, and the spread ``max - min`` (balanced when it is at most 1)."""

    counts: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        ordered = {pid: self.counts[pid] for pid in java_sorted(self.counts)}
        object.__setattr__(self, "counts", MappingProxyType(ordered))

    @property
    def min(self) -> int:
        return min(self.counts.values(), default=0)

    @property
    def max(self) -> int:
        return max(self.counts.values(), default=0)

    @property
    def spread(self) -> int:
        return self.max - self.min

    @property
    def is_balanced(self) -> bool:
        return self.spread <= 1


def balance(
    value: JobModel | Iterable[ContainerModel], *, mode: TaskMode | None = TaskMode.ACTIVE
) -> Balance:
    """Task counts per processor (active tasks by default; ``mode=None`` counts all).

    >>> from samza_nb.model import ContainerModel, TaskModel
    >>> balance([ContainerModel("p1", [TaskModel("a"), TaskModel("b")]), ContainerModel("p2")]).spread
    2
    """
    return Balance(
        {
            container.processor_id: sum(
                1 for task in container.tasks.values() if mode is None or task.mode is mode
            )
            for container in _containers(value)
        }
    )


def min_moves(
    previous_task_to_processor: Mapping[str, str],
    processor_ids: Iterable[str],
    task_names: Iterable[str],
) -> int:
    """The fewest tasks that must change processor for *any* balanced assignment.

    Tasks of processors that are gone must move; a live processor can keep at most
    ⌊T/P⌋ of its tasks, or ⌈T/P⌉ for at most T mod P processors. HostAffinityGrouper always
    reaches this bound.

    >>> min_moves({"a": "p1", "b": "p1", "c": "p2"}, ["p1", "p3"], ["a", "b", "c"])
    1
    """
    names = set(task_names)
    processors = set(processor_ids)
    if not processors:
        return sum(1 for name in names if name in previous_task_to_processor)
    quota, extra = divmod(len(names), len(processors))
    owned: dict[str, int] = {}
    had_previous = 0
    for name, pid in previous_task_to_processor.items():
        if name in names:
            had_previous += 1
            if pid in processors:
                owned[pid] = owned.get(pid, 0) + 1
    overfull = sum(1 for count in owned.values() if count > quota)
    stays = sum(min(count, quota) for count in owned.values()) + min(extra, overfull)
    return had_previous - stays

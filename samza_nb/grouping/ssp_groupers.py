"""SSP groupers: input partitions → tasks, and the task-name formats (SAMZA.md §2.2–§2.4)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from typing import ClassVar

from samza_nb.errors import ConfigError, GroupingError
from samza_nb.grouping.broadcast import parse_broadcast_inputs
from samza_nb.model import SystemStreamPartition, java_sorted

__all__ = [
    "AllSspToSingleTask",
    "GroupByPartition",
    "GroupBySystemStreamPartition",
    "SspGrouper",
]


class SspGrouper(ABC):
    """Groups input partitions into tasks: ``group(ssps) -> {task name: frozenset of SSPs}``.

    The result is ordered by task name (Java order).
    """

    #: The registry name (``get_ssp_grouper(name)``).
    name: ClassVar[str] = ""

    @abstractmethod
    def group(
        self, ssps: Iterable[SystemStreamPartition]
    ) -> dict[str, frozenset[SystemStreamPartition]]:
        """Group ``ssps`` into tasks."""

    @property
    def broadcast_inputs(self) -> frozenset[SystemStreamPartition]:
        """SSPs added to every task instead of being grouped (none by default)."""
        return frozenset()


def _broadcast(
    value: Iterable[SystemStreamPartition] | str, grouper: str
) -> frozenset[SystemStreamPartition]:
    if isinstance(value, str):
        return parse_broadcast_inputs(value)
    result = frozenset(value)
    for ssp in result:
        if not isinstance(ssp, SystemStreamPartition):
            msg = f"{grouper}: broadcast inputs must be SystemStreamPartitions, got {ssp!r}"
            raise ConfigError(msg)
    return result


def _elasticity(value: int, grouper: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        msg = f"{grouper}: elasticity factor (job.elasticity.factor) must be an integer >= 1, got {value!r}"
        raise ConfigError(msg)
    return value


def _ordered(
    groups: dict[str, set[SystemStreamPartition]], broadcast: frozenset[SystemStreamPartition]
) -> dict[str, frozenset[SystemStreamPartition]]:
    return {name: frozenset(groups[name] | broadcast) for name in java_sorted(groups)}


def _split(
    ssps: Iterable[SystemStreamPartition], broadcast: frozenset[SystemStreamPartition], grouper: str
) -> tuple[list[SystemStreamPartition], frozenset[SystemStreamPartition]]:
    grouped: list[SystemStreamPartition] = []
    present: set[SystemStreamPartition] = set()
    for ssp in ssps:
        if not isinstance(ssp, SystemStreamPartition):
            msg = f"{grouper}: expected SystemStreamPartitions, got {ssp!r}"
            raise GroupingError(msg)
        if ssp in broadcast:
            present.add(ssp)
        else:
            grouped.append(ssp)
    return grouped, frozenset(present)


class GroupByPartition(SspGrouper):
    """Partition p of every stream goes to task ``Partition p`` (co-partitioning for joins).

    With elasticity factor E > 1, partition p becomes E tasks ``Partition p b`` each reading key
    bucket b. Broadcast SSPs are added to every task; a partition whose SSPs are all broadcast
    makes no task.

    >>> from samza_nb.model import SystemStreamPartition as SSP
    >>> sorted(GroupByPartition().group([SSP("s", "a", 0), SSP("s", "b", 0), SSP("s", "a", 1)]))
    ['Partition 0', 'Partition 1']
    """

    name = "group-by-partition"

    def __init__(
        self,
        broadcast_inputs: Iterable[SystemStreamPartition] | str = (),
        elasticity_factor: int = 1,
    ) -> None:
        self._broadcast = _broadcast(broadcast_inputs, "GroupByPartition")
        self.elasticity_factor = _elasticity(elasticity_factor, "GroupByPartition")

    @property
    def broadcast_inputs(self) -> frozenset[SystemStreamPartition]:
        return self._broadcast

    def __repr__(self) -> str:
        return (
            f"GroupByPartition(broadcast_inputs={sorted(self._broadcast)!r}, "
            f"elasticity_factor={self.elasticity_factor})"
        )

    def group(
        self, ssps: Iterable[SystemStreamPartition]
    ) -> dict[str, frozenset[SystemStreamPartition]]:
        grouped, broadcast = _split(ssps, self._broadcast, "GroupByPartition")
        groups: dict[str, set[SystemStreamPartition]] = {}
        factor = self.elasticity_factor
        for ssp in grouped:
            if factor == 1:
                groups.setdefault(f"Partition {ssp.partition}", set()).add(ssp)
            else:
                for bucket in range(factor):
                    groups.setdefault(f"Partition {ssp.partition} {bucket}", set()).add(
                        ssp.with_key_bucket(bucket)
                    )
        return _ordered(groups, broadcast)


class GroupBySystemStreamPartition(SspGrouper):
    """One task per SSP (per key bucket with elasticity), named by the SSP's ``str()``.

    >>> from samza_nb.model import SystemStreamPartition as SSP
    >>> list(GroupBySystemStreamPartition().group([SSP("kafka", "PVE", 0)]))
    ['SystemStreamPartition [kafka, PVE, 0]']
    """

    name = "group-by-system-stream-partition"

    def __init__(
        self,
        broadcast_inputs: Iterable[SystemStreamPartition] | str = (),
        elasticity_factor: int = 1,
    ) -> None:
        self._broadcast = _broadcast(broadcast_inputs, "GroupBySystemStreamPartition")
        self.elasticity_factor = _elasticity(elasticity_factor, "GroupBySystemStreamPartition")

    @property
    def broadcast_inputs(self) -> frozenset[SystemStreamPartition]:
        return self._broadcast

    def __repr__(self) -> str:
        return (
            f"GroupBySystemStreamPartition(broadcast_inputs={sorted(self._broadcast)!r}, "
            f"elasticity_factor={self.elasticity_factor})"
        )

    def group(
        self, ssps: Iterable[SystemStreamPartition]
    ) -> dict[str, frozenset[SystemStreamPartition]]:
        grouped, broadcast = _split(ssps, self._broadcast, "GroupBySystemStreamPartition")
        groups: dict[str, set[SystemStreamPartition]] = {}
        for ssp in grouped:
            if self.elasticity_factor == 1:
                groups.setdefault(str(ssp), set()).add(ssp)
            else:
                for bucket in range(self.elasticity_factor):
                    copy = ssp.with_key_bucket(bucket)
                    groups.setdefault(str(copy), set()).add(copy)
        return _ordered(groups, broadcast)


class AllSspToSingleTask(SspGrouper):
    """One task ``Task-<processor id>`` per processor, each reading **all** SSPs.

    Meant for consumers that balance partitions themselves. Broadcast inputs make no sense
    here and are not accepted (Samza's factory rejects them too).

    >>> from samza_nb.model import SystemStreamPartition as SSP
    >>> list(AllSspToSingleTask(["p1", "p2"]).group([SSP("kafka", "PVE", 0)]))
    ['Task-p1', 'Task-p2']
    """

    name = "all-ssp-to-single-task"

    def __init__(self, processor_ids: Sequence[str]) -> None:
        if isinstance(processor_ids, str):
            msg = (
                "AllSspToSingleTask: processor_ids must be a sequence of ids, not a string "
                f"({processor_ids!r})"
            )
            raise ConfigError(msg)
        ids = list(processor_ids)
        if not ids:
            msg = "AllSspToSingleTask: needs at least one processor id (processor.list)"
            raise ConfigError(msg)
        for pid in ids:
            if not isinstance(pid, str) or not pid:
                msg = f"AllSspToSingleTask: processor ids must be non-empty strings, got {pid!r}"
                raise ConfigError(msg)
        self.processor_ids = ids

    def __repr__(self) -> str:
        return f"AllSspToSingleTask({self.processor_ids!r})"

    def group(
        self, ssps: Iterable[SystemStreamPartition]
    ) -> dict[str, frozenset[SystemStreamPartition]]:
        everything = frozenset(ssps)
        if not everything:
            msg = (
                "AllSspToSingleTask: cannot process stream task with no input system stream "
                "partitions"
            )
            raise GroupingError(msg)
        for ssp in everything:
            if not isinstance(ssp, SystemStreamPartition):
                msg = f"AllSspToSingleTask: expected SystemStreamPartitions, got {ssp!r}"
                raise GroupingError(msg)
        names = java_sorted(f"Task-{pid}" for pid in self.processor_ids)
        return dict.fromkeys(names, everything)

"""GrouperMetadata: what a task grouper may know about the past and the live processors (§1.6)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from samza_nb.errors import GroupingError
from samza_nb.model import JobModel, LocationId, SystemStreamPartition, TaskMode

__all__ = ["GrouperMetadata"]


def _frozen(mapping: Mapping[str, Any] | None, what: str) -> Mapping[str, Any]:
    if mapping is None:
        return MappingProxyType({})
    if not isinstance(mapping, Mapping):
        msg = f"GrouperMetadata: {what} must be a mapping, got {type(mapping).__name__}"
        raise GroupingError(msg)
    return MappingProxyType(dict(mapping))


def _frozen_stores(mapping: Mapping[LocationId, Mapping[str, int]] | None) -> Mapping[LocationId, Mapping[str, int]]:
    outer = _frozen(mapping, "store_locality")
    frozen: dict[LocationId, Mapping[str, int]] = {}
    for location, tasks in outer.items():
        inner = _frozen(tasks, f"store_locality[{location!r}]")
        for name, epoch in inner.items():
            if not isinstance(epoch, int) or isinstance(epoch, bool):
                msg = (
                    f"GrouperMetadata: store_locality[{location!r}][{name!r}] must be the task's "
                    f"epoch (an int), got {epoch!r}"
                )
                raise GroupingError(msg)
        frozen[location] = inner
    return MappingProxyType(frozen)


@dataclass(frozen=True)
class GrouperMetadata:
    """An immutable holder of six maps.

    - ``processor_locality``: processor id → location of every *live* processor (its order is
      kept: GroupByContainerIds uses it as the processor order);
    - ``task_locality``: task name → location where the task last ran;
    - ``previous_task_to_processor``: task name → processor id of the previous assignment
      (active tasks, as Samza's JobModelHelper builds it: what the task groupers balance);
    - ``previous_task_to_ssps``: task name → SSPs of the previous assignment (stored as
      frozensets);
    - ``previous_standby_to_processor``: standby task name → processor id of the previous
      assignment, so a standby copy returns to its processor (the hot-standby placement);
    - ``store_locality``: location → {task name → the task's epoch when a processor there took
      up its stores}: where each task's stores are (an active's or a standby's), as the
      processors holding them reported it. The highest epoch is the task's last location.
      Only :class:`~samza_nb.grouping.HostAffinityGrouper` reads it; Samza's groupers keep
      ``task_locality``.

    >>> metadata = GrouperMetadata(processor_locality={"p1": "host-a"})
    >>> dict(metadata.processor_locality)
    {'p1': 'host-a'}
    """

    processor_locality: Mapping[str, LocationId] = field(default_factory=dict)
    task_locality: Mapping[str, LocationId] = field(default_factory=dict)
    previous_task_to_processor: Mapping[str, str] = field(default_factory=dict)
    previous_task_to_ssps: Mapping[str, Collection[SystemStreamPartition]] = field(
        default_factory=dict
    )
    previous_standby_to_processor: Mapping[str, str] = field(default_factory=dict)
    store_locality: Mapping[LocationId, Mapping[str, int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "processor_locality", _frozen(self.processor_locality, "processor_locality")
        )
        object.__setattr__(self, "task_locality", _frozen(self.task_locality, "task_locality"))
        object.__setattr__(
            self,
            "previous_task_to_processor",
            _frozen(self.previous_task_to_processor, "previous_task_to_processor"),
        )
        object.__setattr__(
            self,
            "previous_standby_to_processor",
            _frozen(self.previous_standby_to_processor, "previous_standby_to_processor"),
        )
        object.__setattr__(self, "store_locality", _frozen_stores(self.store_locality))
        ssps = _frozen(self.previous_task_to_ssps, "previous_task_to_ssps")
        object.__setattr__(
            self,
            "previous_task_to_ssps",
            MappingProxyType({name: frozenset(value) for name, value in ssps.items()}),
        )

    def __hash__(self) -> int:
        return hash(
            (
                frozenset(self.processor_locality.items()),
                frozenset(self.task_locality.items()),
                frozenset(self.previous_task_to_processor.items()),
                frozenset(self.previous_standby_to_processor.items()),
                frozenset((loc, frozenset(tasks.items())) for loc, tasks in self.store_locality.items()),
            )
        )

    @classmethod
    def from_job_model(
        cls,
        previous: JobModel | None,
        processor_locality: Mapping[str, LocationId],
        task_locality: Mapping[str, LocationId] | None = None,
        store_locality: Mapping[LocationId, Mapping[str, int]] | None = None,
    ) -> GrouperMetadata:
        """Metadata from the previous job model and the live processors (and, when given,
        where the tasks' stores are: ``store_locality``).

        The previous assignment counts **active** tasks only (Samza's JobModelHelper rule), so
        a standby assignment never looks like a previous active placement; standby tasks are
        in ``previous_standby_to_processor``. Without a
        ``task_locality``, every task's location (standby tasks included, so they can return
        to it) is that of its previous container when known.
        """
        if previous is None:
            return cls(
                processor_locality=processor_locality,
                task_locality=task_locality or {},
                store_locality=store_locality or {},
            )
        previous_processor = previous.task_to_processor(mode=TaskMode.ACTIVE)
        if task_locality is None:
            task_locality = {
                name: container.location_id
                for container in previous.containers.values()
                if container.location_id is not None
                for name in container.tasks
            }
        return cls(
            processor_locality=processor_locality,
            task_locality=task_locality,
            previous_task_to_processor=previous_processor,
            previous_task_to_ssps=previous.task_to_ssps(),
            previous_standby_to_processor=previous.task_to_processor(mode=TaskMode.STANDBY),
            store_locality=store_locality or {},
        )

    def with_processors(self, processor_locality: Mapping[str, LocationId]) -> GrouperMetadata:
        """The same history with another set of live processors."""
        return GrouperMetadata(
            processor_locality=processor_locality,
            task_locality=self.task_locality,
            previous_task_to_processor=self.previous_task_to_processor,
            previous_task_to_ssps=self.previous_task_to_ssps,
            previous_standby_to_processor=self.previous_standby_to_processor,
            store_locality=self.store_locality,
        )

    def with_store_locality(self, store_locality: Mapping[LocationId, Mapping[str, int]]) -> GrouperMetadata:
        """The same metadata with another record of where the tasks' stores are."""
        return GrouperMetadata(
            processor_locality=self.processor_locality,
            task_locality=self.task_locality,
            previous_task_to_processor=self.previous_task_to_processor,
            previous_task_to_ssps=self.previous_task_to_ssps,
            previous_standby_to_processor=self.previous_standby_to_processor,
            store_locality=store_locality,
        )

    def stores_by_task(self) -> dict[str, dict[LocationId, int]]:
        """Task name → {location holding its stores → epoch}, inverted from ``store_locality``.

        >>> GrouperMetadata(store_locality={"host-a": {"Partition 0": 3}}).stores_by_task()
        {'Partition 0': {'host-a': 3}}
        """
        result: dict[str, dict[LocationId, int]] = {}
        for location, tasks in self.store_locality.items():
            for name, epoch in tasks.items():
                result.setdefault(name, {})[location] = epoch
        return result

    def without_processors(self, processor_ids: Iterable[str]) -> GrouperMetadata:
        """The same history with ``processor_ids`` removed from the live processors."""
        dead = set(processor_ids)
        return self.with_processors(
            {pid: loc for pid, loc in self.processor_locality.items() if pid not in dead}
        )

"""The SEP's standalone placement of hot standbys: active and standby tasks mixed in every
processor, least loaded first, never an active and its standby on one processor (nor one
location when locations are checked), then rebalanced (grouping/standby.py)."""

from __future__ import annotations

import heapq
import logging
import math
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from samza_nb.errors import GroupingError
from samza_nb.grouping.base import task_models_by_name
from samza_nb.grouping.host_affinity import assign_host_affinity
from samza_nb.grouping.metadata import GrouperMetadata
from samza_nb.grouping.standby_tasks import (
    _standby_of,
    check_replication_factor,
    standby_task_name,
)
from samza_nb.model import (
    ContainerModel,
    LocationId,
    TaskMode,
    TaskModel,
    java_sort_key,
    java_sorted,
)

__all__ = ["assign_with_standbys"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Copy:
    active: str
    replica: int

    @property
    def name(self) -> str:
        return standby_task_name(self.active, self.replica)


class _Placer:
    """Least-loaded placement of standby copies under the invariant.

    Processors are grouped by location (or each on its own when locations are not checked);
    a copy may not go to a group that already holds a copy of the same task. One heap per
    group orders its processors by load; one heap orders the groups by their least load.
    Loads only grow, so stale heap entries are fixed lazily when they surface.
    """

    def __init__(
        self,
        processors: list[str],
        locality: Mapping[str, LocationId],
        check_location: bool,
        loads: dict[str, int],
    ) -> None:
        self.loads = loads
        self.order = {pid: index for index, pid in enumerate(processors)}
        self.group = {pid: (locality[pid] if check_location else pid) for pid in processors}
        self.at_location: dict[LocationId, list[str]] = {}
        for pid in processors:
            self.at_location.setdefault(locality[pid], []).append(pid)
        self.heaps: dict[str, list[tuple[int, int, str]]] = {}
        for pid in processors:
            self.heaps.setdefault(self.group[pid], []).append((loads[pid], self.order[pid], pid))
        for heap in self.heaps.values():
            heapq.heapify(heap)
        group_order = {
            group: index for index, group in enumerate(sorted(self.heaps, key=java_sort_key))
        }
        self.groups = [(heap[0][0], group_order[g], g) for g, heap in self.heaps.items()]
        heapq.heapify(self.groups)

    def _top(self, group: str) -> tuple[int, int, str]:
        heap = self.heaps[group]
        while heap[0][0] != self.loads[heap[0][2]]:
            _, order, pid = heapq.heappop(heap)
            heapq.heappush(heap, (self.loads[pid], order, pid))
        return heap[0]

    def add(self, pid: str) -> None:
        self.loads[pid] += 1

    def least_loaded(self, forbidden_groups: set[str]) -> str | None:
        skipped = []
        chosen: str | None = None
        while self.groups:
            entry = heapq.heappop(self.groups)
            least, order, group = entry
            top = self._top(group)
            if top[0] != least:
                heapq.heappush(self.groups, (top[0], order, group))
                continue
            skipped.append(entry)
            if group not in forbidden_groups:
                chosen = top[2]
                break
        for entry in skipped:
            heapq.heappush(self.groups, entry)
        return chosen

    def least_loaded_at(self, location: LocationId, forbidden_groups: set[str]) -> str | None:
        best: str | None = None
        for pid in self.at_location.get(location, ()):
            if self.group[pid] in forbidden_groups:
                continue
            if best is None or self.loads[pid] < self.loads[best]:
                best = pid
        return best


def _place_copies(
    copies: list[_Copy],
    placer: _Placer,
    holders: dict[str, set[str]],
    placement: dict[str, list[TaskModel]],
    models: Mapping[str, TaskModel],
    metadata: GrouperMetadata,
    live: Mapping[str, LocationId],
    target: int,
    movable: dict[str, list[tuple[_Copy, bool]]],
) -> list[_Copy]:
    """Place ``copies``: previous processor, then previous location, then least loaded.

    Stickiness only holds while the processor stays under ``target`` total tasks, so history
    cannot unbalance the result. Each placed copy is recorded in ``movable`` (with whether it
    returned to its previous place) for :func:`_rebalance`. Returns the copies that had nowhere
    to go.
    """
    unplaced: list[_Copy] = []
    for copy in copies:
        forbidden = {placer.group[pid] for pid in holders[copy.active]}
        chosen: str | None = None
        sticky = True
        previous = metadata.previous_standby_to_processor.get(
            copy.name, metadata.previous_task_to_processor.get(copy.name)
        )
        if (
            previous is not None
            and previous in live
            and placer.group[previous] not in forbidden
            and placer.loads[previous] < target
        ):
            chosen = previous
        if chosen is None:
            location = metadata.task_locality.get(copy.name)
            if location is not None:
                candidate = placer.least_loaded_at(location, forbidden)
                if candidate is not None and placer.loads[candidate] < target:
                    chosen = candidate
        if chosen is None:
            sticky = False
            chosen = placer.least_loaded(forbidden)
        if chosen is None:
            unplaced.append(copy)
            continue
        placer.add(chosen)
        holders[copy.active].add(chosen)
        placement[chosen].append(_standby_of(models[copy.active], copy.replica))
        movable[chosen].append((copy, sticky))
    return unplaced


def _rebalance(
    movable: dict[str, list[tuple[_Copy, bool]]],
    holders: dict[str, set[str]],
    placement: dict[str, list[TaskModel]],
    group: Mapping[str, str],
    loads: dict[str, int],
) -> None:
    """Lower the largest load by chains of standby moves until no chain exists.

    A chain starts at a processor with the largest load M and ends at one with at most M − 2;
    every intermediate processor gives one copy and receives one, so only the ends change.
    When no chain exists, let S be the processors reachable from the most loaded ones: every
    movable copy in S may only go to processors of S, so any placement keeps at least as many
    tasks in S, all of S is at M − 1 or M, and M cannot be lowered. (Checked at each move: a
    chain that would put two copies of one task in one group — possible only with three or more
    copies — is not applied.) Copies that returned to their previous place move last.
    """
    for copies in movable.values():
        copies.sort(key=lambda entry: entry[1])
    processors = list(loads)
    while True:
        highest = max(loads.values())
        sources = [pid for pid in processors if loads[pid] == highest]
        if highest - min(loads.values()) <= 1:
            return
        parent: dict[str, tuple[str, _Copy]] = {}
        visited = set(sources)
        unvisited = [pid for pid in processors if pid not in visited]
        queue = deque(sources)
        found: str | None = None
        while queue and found is None:
            pid = queue.popleft()
            for copy, _sticky in movable[pid]:
                forbidden = {group[h] for h in holders[copy.active] if h != pid}
                remaining: list[str] = []
                for other in unvisited:
                    if found is not None or group[other] in forbidden:
                        remaining.append(other)
                        continue
                    parent[other] = (pid, copy)
                    visited.add(other)
                    if loads[other] <= highest - 2:
                        found = other
                    else:
                        queue.append(other)
                unvisited = remaining
                if found is not None:
                    break
        if found is None:
            return
        chain: list[tuple[str, str, _Copy]] = []
        node = found
        while node in parent:
            source, copy = parent[node]
            chain.append((source, node, copy))
            node = source
        if not _apply_chain(chain, movable, holders, placement, group):
            return
        loads[node] -= 1
        loads[found] += 1


def _apply_chain(
    chain: list[tuple[str, str, _Copy]],
    movable: dict[str, list[tuple[_Copy, bool]]],
    holders: dict[str, set[str]],
    placement: dict[str, list[TaskModel]],
    group: Mapping[str, str],
) -> bool:
    # Validate against the holders as they will be, step by step, before changing anything.
    simulated = {copy.active: set(holders[copy.active]) for _, _, copy in chain}
    for source, target, copy in chain:
        others = simulated[copy.active] - {source}
        if group[target] in {group[h] for h in others}:
            return False
        simulated[copy.active] = others | {target}
    for source, target, copy in chain:
        holders[copy.active] = (holders[copy.active] - {source}) | {target}
        name = copy.name
        moved = next(task for task in placement[source] if task.name == name)
        placement[source] = [task for task in placement[source] if task.name != name]
        placement[target].append(moved)
        movable[source] = [entry for entry in movable[source] if entry[0] != copy]
        movable[target].insert(0, (copy, False))
    return True


def _distinct_groups(live: Mapping[str, LocationId], check_location: bool) -> int:
    return len(set(live.values())) if check_location else len(live)


def assign_with_standbys(
    tasks: Iterable[TaskModel] | Mapping[str, TaskModel],
    metadata: GrouperMetadata,
    replication_factor: int,
    *,
    check_location: bool = True,
    place_fewer: bool = False,
) -> frozenset[ContainerModel]:
    """Active and standby tasks over the live processors of ``metadata.processor_locality``.

    Actives are placed by :class:`HostAffinityGrouper` (balanced, minimal movement). Each of
    the RF − 1 standby copies of a task then goes to its previous processor, else a processor
    at its previous location, else the least-loaded processor (active + standby tasks), always
    avoiding processors — and, with ``check_location``, locations — that hold another copy of
    the same task. Chains of standby moves then lower the most loaded processors until the
    largest total load is as small as the invariant allows for these actives (see
    ``_rebalance``); on regular clusters loads end within 1 of each other (bench/grouping.py).
    Fewer distinct locations (or processors) than the factor is a GroupingError, unless
    ``place_fewer``: then each task gets as many copies as there are distinct groups.

    >>> from samza_nb.model import TaskModel
    >>> metadata = GrouperMetadata(processor_locality={"p1": "a", "p2": "b"})
    >>> out = assign_with_standbys([TaskModel("t0"), TaskModel("t1")], metadata, 2)
    >>> sorted(len(c) for c in out)
    [2, 2]
    """
    check_replication_factor(replication_factor, "assign_with_standbys")
    by_name = task_models_by_name(tasks, grouper="assign_with_standbys")
    if not by_name:
        msg = "assign_with_standbys: no tasks found; a job needs at least one task"
        raise GroupingError(msg)
    standby = [name for name, task in by_name.items() if task.mode is not TaskMode.ACTIVE]
    if standby:
        msg = (
            "assign_with_standbys: give active tasks only; standby tasks are made here "
            f"(got standby {standby[0]!r})"
        )
        raise GroupingError(msg)
    live = dict(metadata.processor_locality)
    if not live:
        msg = (
            "assign_with_standbys: metadata.processor_locality must list the live processors "
            "(processor id → location id); got none"
        )
        raise GroupingError(msg)
    groups = _distinct_groups(live, check_location)
    if groups < replication_factor and place_fewer:
        _log.warning(
            "replication factor %d needs %d distinct %s, the live processors have %d: %d standby "
            "cop%s per task until more join", replication_factor, replication_factor,
            "locations" if check_location else "processors", groups, groups - 1,
            "y" if groups == 2 else "ies",
        )
        replication_factor = groups  # a task's copies each need a group of their own
    if groups < replication_factor:
        where = "locations" if check_location else "processors"
        msg = (
            f"assign_with_standbys: replication factor {replication_factor} needs "
            f"{replication_factor} distinct {where}, but the live processors have {groups}: "
            f"add {'processors on other locations' if check_location else 'processors'} or "
            "lower job.standbytasks.replication.factor"
            + (
                " (a direct call of assign_with_standbys can pass check_location=False to keep "
                "copies on distinct processors of one location)"
                if check_location
                else ""
            )
        )
        raise GroupingError(msg)
    processors = java_sorted(live)
    actives = assign_host_affinity(
        list(by_name),
        live,
        metadata.task_locality,
        metadata.previous_task_to_processor,
        metadata.stores_by_task(),
    )
    placement: dict[str, list[TaskModel]] = {
        pid: [by_name[name] for name in actives[pid]] for pid in processors
    }
    holders = {name: {pid} for pid, names in actives.items() for name in names}
    loads = {pid: len(placement[pid]) for pid in processors}
    placer = _Placer(processors, live, check_location, loads)
    copies = [_Copy(name, replica) for name in by_name for replica in range(replication_factor - 1)]
    target = math.ceil(len(by_name) * replication_factor / len(processors))
    movable: dict[str, list[tuple[_Copy, bool]]] = {pid: [] for pid in processors}
    unplaced = _place_copies(
        copies, placer, holders, placement, by_name, metadata, live, target, movable
    )
    if unplaced:  # Cannot happen once the group count check passed; kept as a guard.
        msg = f"assign_with_standbys: no processor may hold {unplaced[0].name!r}"
        raise GroupingError(msg)
    _rebalance(movable, holders, placement, placer.group, loads)
    return frozenset(ContainerModel(pid, placement[pid], live[pid]) for pid in processors)

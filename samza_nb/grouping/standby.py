"""Hot standby tasks: naming, placement, the placement invariant and failover (SEP hot standby).

A standby task restores its active task's state from the changelog without processing input,
so a failover only promotes it. The invariant: an active task and its standbys never share a
processor, nor a location when locations are checked (they would lose the same disk).

Two placements exist:

* :func:`add_standby_containers` — Samza's YARN style (§4.2): for every active container ``C``,
  containers ``C-0`` … ``C-(RF-2)`` holding standby copies of all of C's tasks. Placing those
  containers on hosts is the cluster manager's job.
* :func:`assign_with_standbys` — the SEP's standalone style: active and standby tasks mixed in
  every processor, spread evenly, invariant enforced here. :func:`failover` promotes standbys
  when processors die.

Naming follows Samza (§4.1): standby task ``Standby-<task>-<replica>``, standby container
``<container>-<replica>``. Samza parses these back by splitting on ``-``, which breaks on names
that contain ``-`` (Appendix A #6); here the prefix and the numeric suffix are stripped instead.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from samza_nb.errors import GroupingError
from samza_nb.grouping.base import task_models_by_name
from samza_nb.grouping.host_affinity import assign_host_affinity
from samza_nb.grouping.metadata import GrouperMetadata
from samza_nb.model import (
    ContainerModel,
    JobModel,
    LocationId,
    TaskMode,
    TaskModel,
    java_sort_key,
    java_sorted,
)

__all__ = [
    "active_container_id",
    "active_task_name",
    "add_standby_containers",
    "assign_with_standbys",
    "check_standby_invariants",
    "failover",
    "is_standby_task_name",
    "standby_constraints",
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


def _check_replication_factor(replication_factor: int, where: str) -> None:
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


def add_standby_containers(
    containers: Iterable[ContainerModel], replication_factor: int
) -> frozenset[ContainerModel]:
    """The active containers plus RF − 1 standby containers per active container (§4.2).

    >>> from samza_nb.model import ContainerModel, TaskModel
    >>> out = add_standby_containers([ContainerModel("0", [TaskModel("Partition 0")])], 3)
    >>> sorted((c.processor_id, list(c.tasks)) for c in out)  # doctest: +NORMALIZE_WHITESPACE
    [('0', ['Partition 0']), ('0-0', ['Standby-Partition 0-0']),
     ('0-1', ['Standby-Partition 0-1'])]
    """
    _check_replication_factor(replication_factor, "add_standby_containers")
    actives = list(containers)
    result = set(actives)
    for container in actives:
        for replica in range(replication_factor - 1):
            result.add(
                ContainerModel(
                    standby_container_id(container.processor_id, replica),
                    [_standby_of(task, replica) for task in container.tasks.values()],
                )
            )
    return frozenset(result)


def standby_constraints(container_id: str, job_model: JobModel) -> list[str]:
    """Containers that must not share a host with ``container_id`` (§4.3).

    Those whose tasks, mapped to their active task names, overlap with this container's.
    """
    given = job_model.containers.get(container_id)
    if given is None:
        msg = f"standby_constraints: the job model has no container {container_id!r}"
        raise GroupingError(msg)

    def actives(container: ContainerModel) -> set[str]:
        return {
            name if task.mode is TaskMode.ACTIVE else active_task_name(name)
            for name, task in container.tasks.items()
        }

    mine = actives(given)
    return [
        other.processor_id
        for other in job_model.containers.values()
        if other.processor_id != container_id and not mine.isdisjoint(actives(other))
    ]


# --------------------------------------------------------------------------------------------
# Standalone placement


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
        previous = metadata.previous_task_to_processor.get(copy.name)
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
) -> frozenset[ContainerModel]:
    """Active and standby tasks over the live processors of ``metadata.processor_locality``.

    Actives are placed by :class:`HostAffinityGrouper` (balanced, minimal movement). Each of
    the RF − 1 standby copies of a task then goes to its previous processor, else a processor
    at its previous location, else the least-loaded processor (active + standby tasks), always
    avoiding processors — and, with ``check_location``, locations — that hold another copy of
    the same task. Chains of standby moves then lower the most loaded processors until the
    largest total load is as small as the invariant allows for these actives (see
    ``_rebalance``); on regular clusters loads end within 1 of each other (bench/grouping.py).

    >>> from samza_nb.model import TaskModel
    >>> metadata = GrouperMetadata(processor_locality={"p1": "a", "p2": "b"})
    >>> out = assign_with_standbys([TaskModel("t0"), TaskModel("t1")], metadata, 2)
    >>> sorted(len(c) for c in out)
    [2, 2]
    """
    _check_replication_factor(replication_factor, "assign_with_standbys")
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
    if groups < replication_factor:
        where = "locations" if check_location else "processors"
        msg = (
            f"assign_with_standbys: replication factor {replication_factor} needs "
            f"{replication_factor} distinct {where}, but the live processors have {groups}"
            + (
                "; pass check_location=False to only keep copies on distinct processors"
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


def failover(
    job_model: JobModel,
    dead_processor_ids: Iterable[str],
    metadata: GrouperMetadata,
    *,
    check_location: bool = True,
) -> JobModel:
    """Promote standbys of the dead processors' active tasks and re-create lost standbys.

    Each active task of a dead processor moves to a live processor holding one of its standbys
    (the one with the fewest active tasks); without a live standby it goes to the processor
    with the fewest active tasks, preferring one at the task's location. Active tasks of live
    processors do not move. Then every task gets back its replication factor (inferred from
    the job model) with new standbys placed as in :func:`assign_with_standbys`; when too few
    locations are left, fewer standbys are placed rather than breaking the invariant.

    The live processors are those of ``metadata.processor_locality`` (or, if it is empty, the
    job model's containers) minus ``dead_processor_ids``; new processors start empty.
    """
    dead = set(dead_processor_ids)
    known = set(job_model.containers) | set(metadata.processor_locality)
    unknown = java_sorted(dead - known)
    if unknown:
        msg = f"failover: unknown processor ids {unknown}; the job model has {job_model.processor_ids}"
        raise GroupingError(msg)
    locality: dict[str, LocationId] = {
        pid: container.location_id
        for pid, container in job_model.containers.items()
        if container.location_id is not None
    }
    locality.update(metadata.processor_locality)
    if metadata.processor_locality:
        live_ids = [pid for pid in metadata.processor_locality if pid not in dead]
    else:
        live_ids = [pid for pid in job_model.containers if pid not in dead]
    if not live_ids:
        msg = f"failover: no live processor is left after removing {java_sorted(dead)}"
        raise GroupingError(msg)
    processors = java_sorted(live_ids)
    # A processor without a known location counts as a location of its own.
    live = {pid: locality.get(pid, f"<unknown location of {pid}>") for pid in processors}

    all_tasks = job_model.task_models()
    actives = {name: task for name, task in all_tasks.items() if task.mode is TaskMode.ACTIVE}
    replicas: dict[str, int] = dict.fromkeys(actives, 0)
    for name, task in all_tasks.items():
        if task.mode is TaskMode.STANDBY:
            owner = _split_standby(name)
            if owner is not None and owner[0] in replicas:
                replicas[owner[0]] += 1
    replication_factor = 1 + max(replicas.values(), default=0)

    placement: dict[str, list[TaskModel]] = {pid: [] for pid in processors}
    holders: dict[str, set[str]] = {name: set() for name in actives}
    standby_at: dict[str, dict[str, int]] = {name: {} for name in actives}  # active → pid → replica
    orphaned: dict[str, str] = {}  # active task of a dead processor → that processor
    for pid, container in job_model.containers.items():
        for name, task in container.tasks.items():
            if pid not in placement:
                if task.mode is TaskMode.ACTIVE:
                    orphaned[name] = pid
                continue
            if task.mode is TaskMode.ACTIVE:
                placement[pid].append(task)
                holders[name].add(pid)
            else:
                owner = _split_standby(name)
                if owner is None or owner[0] not in actives:
                    continue  # a standby whose active task is gone is dropped
                placement[pid].append(task)
                holders[owner[0]].add(pid)
                standby_at[owner[0]][pid] = owner[1]

    active_load = {
        pid: sum(1 for task in placement[pid] if task.mode is TaskMode.ACTIVE) for pid in processors
    }
    group = {pid: (live[pid] if check_location else pid) for pid in processors}
    active_target = math.ceil(len(actives) / len(processors))
    for name in java_sorted(orphaned):
        task = actives[name]
        candidates = java_sorted(standby_at[name])
        if candidates:
            chosen = min(candidates, key=lambda pid: (active_load[pid], len(placement[pid])))
            replica = standby_at[name].pop(chosen)
            standby_name = standby_task_name(name, replica)
            placement[chosen] = [t for t in placement[chosen] if t.name != standby_name]
        else:
            forbidden = {group[pid] for pid in holders[name]}
            allowed = [pid for pid in processors if group[pid] not in forbidden] or processors
            home = (
                metadata.task_locality.get(name)
                or job_model.containers[orphaned[name]].location_id
                or locality.get(orphaned[name])
            )
            chosen = min(
                allowed,
                key=lambda pid: (
                    active_load[pid] >= active_target,
                    live[pid] != home,
                    active_load[pid],
                    java_sort_key(pid),
                ),
            )
            if chosen in standby_at[name]:  # only when every processor holds a copy
                replica = standby_at[name].pop(chosen)
                standby_name = standby_task_name(name, replica)
                placement[chosen] = [t for t in placement[chosen] if t.name != standby_name]
        placement[chosen].append(task)
        holders[name].add(chosen)
        active_load[chosen] += 1

    copies: list[_Copy] = []
    for name in java_sorted(actives):
        present = set(standby_at[name].values())
        copies.extend(
            _Copy(name, replica)
            for replica in range(replication_factor - 1)
            if replica not in present
        )
    loads = {pid: len(placement[pid]) for pid in processors}
    placer = _Placer(processors, live, check_location, loads)
    total = sum(loads.values()) + len(copies)
    target = math.ceil(total / len(processors))
    movable: dict[str, list[tuple[_Copy, bool]]] = {pid: [] for pid in processors}
    _place_copies(copies, placer, holders, placement, actives, metadata, live, target, movable)
    _rebalance(movable, holders, placement, placer.group, loads)
    return JobModel(
        job_model.config,
        [ContainerModel(pid, placement[pid], locality.get(pid)) for pid in processors],
    )


def check_standby_invariants(
    containers: JobModel | Iterable[ContainerModel],
    processor_locality: Mapping[str, LocationId] | None = None,
    *,
    replication_factor: int | None = None,
    check_location: bool = True,
) -> list[str]:
    """Every violation of the standby invariants, as readable sentences (empty when fine).

    Checked: each task is assigned once; each standby names an existing active task and has its
    changelog partition; no two copies of a task share a processor, nor a location when
    ``check_location`` (locations from ``processor_locality``, else the containers'); and, when
    ``replication_factor`` is given, each task has exactly RF − 1 standbys.

    >>> from samza_nb.model import ContainerModel, TaskModel, TaskMode
    >>> bad = [ContainerModel("p1", [TaskModel("t"), TaskModel("Standby-t-0", mode=TaskMode.STANDBY)])]
    >>> check_standby_invariants(bad)
    ["task 't': active and standby 'Standby-t-0' share processor 'p1'"]
    """
    values = list(
        containers.containers.values() if isinstance(containers, JobModel) else containers
    )
    locations: dict[str, LocationId] = {
        c.processor_id: c.location_id for c in values if c.location_id is not None
    }
    if processor_locality:
        locations.update(processor_locality)
    problems: list[str] = []
    seen: dict[str, str] = {}
    copies: dict[str, list[tuple[str, str, TaskModel]]] = {}  # active → (task name, pid, model)
    for container in values:
        pid = container.processor_id
        for name, task in container.tasks.items():
            if name in seen:
                problems.append(
                    f"task {name!r} is assigned twice (processors {seen[name]!r} and {pid!r})"
                )
                continue
            seen[name] = pid
            if task.mode is TaskMode.ACTIVE:
                copies.setdefault(name, []).insert(0, (name, pid, task))
                continue
            owner = _split_standby(name)
            if owner is None:
                problems.append(
                    f"standby task {name!r} on {pid!r} does not follow 'Standby-<task>-<replica>'"
                )
                continue
            copies.setdefault(owner[0], []).append((name, pid, task))
    for active in java_sorted(copies):
        group = copies[active]
        active_entries = [entry for entry in group if entry[2].mode is TaskMode.ACTIVE]
        standbys = [entry for entry in group if entry[2].mode is TaskMode.STANDBY]
        if not active_entries:
            problems.append(
                f"task {active!r}: standby {standbys[0][0]!r} has no active task in the model"
            )
            continue
        active_task = active_entries[0][2]
        for name, _pid, task in standbys:
            if task.changelog_partition != active_task.changelog_partition:
                problems.append(
                    f"task {active!r}: standby {name!r} restores changelog partition "
                    f"{task.changelog_partition}, the active task uses {active_task.changelog_partition}"
                )
        for i, (name_a, pid_a, task_a) in enumerate(group):
            for name_b, pid_b, _ in group[i + 1 :]:
                label = "active and standby" if task_a.mode is TaskMode.ACTIVE else "standbys"
                first = "" if task_a.mode is TaskMode.ACTIVE else f"{name_a!r} and "
                if pid_a == pid_b:
                    problems.append(
                        f"task {active!r}: {label} {first}{name_b!r} share processor {pid_a!r}"
                    )
                elif (
                    check_location
                    and pid_a in locations
                    and pid_b in locations
                    and locations[pid_a] == locations[pid_b]
                ):
                    problems.append(
                        f"task {active!r}: {label} {first}{name_b!r} share location "
                        f"{locations[pid_a]!r} (processors {pid_a!r} and {pid_b!r})"
                    )
        if replication_factor is not None and len(standbys) != replication_factor - 1:
            problems.append(
                f"task {active!r} has {len(standbys)} standby task(s); replication factor "
                f"{replication_factor} needs {replication_factor - 1}"
            )
    return problems

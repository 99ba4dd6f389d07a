"""Failover with hot standbys: promote the standbys of the dead processors' active tasks and
re-create the standbys that were lost (grouping/standby.py)."""

from __future__ import annotations

import math
from collections.abc import Iterable

from samza_nb.errors import GroupingError
from samza_nb.grouping.metadata import GrouperMetadata
from samza_nb.grouping.standby_placement import (
    _Copy,
    _place_copies,
    _Placer,
    _rebalance,
)
from samza_nb.grouping.standby_tasks import _split_standby, standby_task_name
from samza_nb.model import (
    ContainerModel,
    JobModel,
    LocationId,
    TaskMode,
    TaskModel,
    java_sort_key,
    java_sorted,
)

__all__ = ["failover"]


def failover(
    job_model: JobModel,
    dead_processor_ids: Iterable[str],
    metadata: GrouperMetadata,
    *,
    check_location: bool = True,
    replication_factor: int | None = None,
) -> JobModel:
    """Promote standbys of the dead processors' active tasks and re-create lost standbys.

    Each active task of a dead processor moves to a live processor holding one of its standbys
    (the one with the fewest active tasks); without a live standby it goes to the processor
    with the fewest active tasks, preferring one at the task's location. Active tasks of live
    processors do not move. Then every task gets back its replication factor
    (``replication_factor``, else inferred from the job model) with new standbys placed as in :func:`assign_with_standbys`; when too few
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
    if replication_factor is None:  # the job's factor, as far as the model shows it
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

    # A lowered replication factor: copies past it go (after the promotions, which may use
    # any warm copy).
    for name in java_sorted(actives):
        for pid, replica in list(standby_at[name].items()):
            if replica >= replication_factor - 1:
                standby_name = standby_task_name(name, replica)
                placement[pid] = [t for t in placement[pid] if t.name != standby_name]
                holders[name].discard(pid)
                del standby_at[name][pid]

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

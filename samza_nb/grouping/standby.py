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

Naming lives in standby_tasks.py, the standalone placement in standby_placement.py, failover
in standby_failover.py; this module keeps the YARN-style placement and the invariant check,
and every name stays importable from here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from samza_nb.errors import GroupingError
from samza_nb.grouping.standby_failover import failover
from samza_nb.grouping.standby_placement import assign_with_standbys
from samza_nb.grouping.standby_tasks import (
    _split_standby,
    _standby_of,
    active_container_id,
    active_task_name,
    check_replication_factor,
    is_standby_task_name,
    standby_container_id,
    standby_task_name,
)
from samza_nb.model import (
    ContainerModel,
    JobModel,
    LocationId,
    TaskMode,
    TaskModel,
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
    check_replication_factor(replication_factor, "add_standby_containers")
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

"""HostAffinityGrouper: the SEP's order — previous processor, then its location, then any.

The assignment is balanced (every processor gets ⌊T/P⌋ or ⌈T/P⌉ tasks) and, among balanced
assignments, optimal for the lexicographic cost

1. the fewest tasks leaving their previous processor (minimal movement), then
2. the fewest tasks leaving their previous location (state stays local).

Why the construction below is optimal (docs/grouping.md has the long form):

* Let q = T // P and r = T % P: exactly r processors get q + 1 ("bonus" slots). A processor p
  keeps at most ``cap(p)`` of its s_p previous tasks, so the number of tasks that stay is at most
  Σ min(s_p, q) + min(r, |O|), where O is the set of processors with s_p > q. Keeping
  min(s_p, q) on every processor and giving the bonus slots to processors of O reaches this
  bound, so every optimal assignment keeps all previous tasks of processors outside O, keeps
  exactly cap(p) tasks on each p in O, and hands bonuses to O first.
* What is left to decide — which r processors of O get a bonus (when |O| ≥ r), where the other
  r − |O| bonuses go (when |O| < r), and which tasks each p in O gives up — only changes how
  many of the released tasks find a free slot at their previous location. That is a maximum
  flow on a small network (source → processors of O → locations → sink, with one node pooling
  the bonus choices), solved exactly with Dinic's algorithm. Within a location every processor
  is equivalent for the cost, so any filling that respects the per-location counts is optimal.

Everything is iterated in Java's order of task names and processor ids, so the result does not
depend on the order of the inputs. Grouping 10,000 tasks over 1,000 processors takes a few tens
of milliseconds (bench/grouping.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from samza_nb.errors import GroupingError
from samza_nb.grouping._flow import FlowNetwork
from samza_nb.grouping.base import TaskNameGrouper, task_models_by_name
from samza_nb.grouping.metadata import GrouperMetadata
from samza_nb.model import ContainerModel, LocationId, TaskModel, java_sort_key, java_sorted

__all__ = ["HostAffinityGrouper", "previous_location"]


class HostAffinityGrouper(TaskNameGrouper):
    """Balanced, minimal-movement, location-aware grouping (SEP host affinity in standalone).

    The processors are the keys of ``metadata.processor_locality`` (required). Every live
    processor gets a ContainerModel, possibly empty when there are fewer tasks than processors.

    >>> from samza_nb.grouping import GrouperMetadata
    >>> from samza_nb.model import TaskModel
    >>> tasks = [TaskModel(f"Partition {i}", changelog_partition=i) for i in range(4)]
    >>> metadata = GrouperMetadata(
    ...     processor_locality={"p1": "host-a", "p2": "host-a", "p3": "host-b"},
    ...     previous_task_to_processor={"Partition 0": "p1", "Partition 1": "p1",
    ...                                 "Partition 2": "p9", "Partition 3": "p3"},
    ...     task_locality={"Partition 2": "host-a"})
    >>> containers = HostAffinityGrouper().group(tasks, metadata)
    >>> {c.processor_id: sorted(c.tasks) for c in containers}["p2"]
    ['Partition 2']
    """

    name = "host-affinity"

    def __repr__(self) -> str:
        return "HostAffinityGrouper()"

    def group(
        self,
        tasks: Iterable[TaskModel] | Mapping[str, TaskModel],
        metadata: GrouperMetadata | None = None,
    ) -> frozenset[ContainerModel]:
        by_name = task_models_by_name(tasks, grouper="HostAffinityGrouper")
        if not by_name:
            msg = (
                "HostAffinityGrouper: no tasks found, likely because the job has no input "
                "partitions; a job needs at least one task"
            )
            raise GroupingError(msg)
        if metadata is None or not metadata.processor_locality:
            msg = (
                "HostAffinityGrouper: metadata.processor_locality must list the live processors "
                "(processor id → location id); got none. Pass GrouperMetadata(processor_locality="
                "{...}) to group()"
            )
            raise GroupingError(msg)
        assignment = assign_host_affinity(
            list(by_name),
            metadata.processor_locality,
            metadata.task_locality,
            metadata.previous_task_to_processor,
        )
        return frozenset(
            ContainerModel(pid, [by_name[name] for name in names], metadata.processor_locality[pid])
            for pid, names in assignment.items()
        )


def previous_location(
    task_name: str,
    processor_locality: Mapping[str, LocationId],
    task_locality: Mapping[str, LocationId],
    previous_task_to_processor: Mapping[str, str],
) -> LocationId | None:
    """Where a task's state is: its recorded location, else its live previous processor's."""
    location = task_locality.get(task_name)
    if location is None:
        previous = previous_task_to_processor.get(task_name)
        if previous is not None:
            location = processor_locality.get(previous)
    return location


def assign_host_affinity(
    task_names: Sequence[str],
    processor_locality: Mapping[str, LocationId],
    task_locality: Mapping[str, LocationId],
    previous_task_to_processor: Mapping[str, str],
) -> dict[str, list[str]]:
    """Processor id → its task names (every live processor present, Java order throughout).

    ``task_names`` must be unique; they are sorted here. See the module docstring for the
    optimality argument.
    """
    names = java_sorted(task_names)
    processors = java_sorted(processor_locality)
    if not processors:
        msg = "HostAffinityGrouper: there are no live processors to assign tasks to"
        raise GroupingError(msg)
    quota, bonus = divmod(len(names), len(processors))

    own: dict[str, list[str]] = {pid: [] for pid in processors}
    home: dict[str, LocationId | None] = {}
    orphans: list[str] = []
    for name in names:
        previous = previous_task_to_processor.get(name)
        location = task_locality.get(name)
        if previous is not None and previous in own:
            own[previous].append(name)
            if location is None:
                location = processor_locality[previous]
        else:
            orphans.append(name)
        home[name] = location

    at_location: dict[LocationId, list[str]] = {}
    for pid in processors:
        at_location.setdefault(processor_locality[pid], []).append(pid)
    locations = sorted(at_location, key=java_sort_key)
    overfull = [pid for pid in processors if len(own[pid]) > quota]
    overfull_set = set(overfull)
    bonus_to_overfull = len(overfull) >= bonus

    # The flow network deciding bonuses and which released tasks find room at their location.
    source, sink, pool_x, pool_b = 0, 1, 2, 3
    node_of_processor = {pid: 4 + i for i, pid in enumerate(overfull)}
    node_of_location = {loc: 4 + len(overfull) + i for i, loc in enumerate(locations)}
    network = FlowNetwork(4 + len(overfull) + len(locations))
    extra_push_edge: dict[str, int] = {}
    bonus_edge: dict[LocationId, int] = {}
    class_edges: dict[str, list[tuple[LocationId, int]]] = {}
    if bonus_to_overfull:
        network.add_edge(source, pool_x, len(overfull) - bonus)
    else:
        network.add_edge(pool_b, sink, bonus - len(overfull))
    for pid in overfull:
        node = node_of_processor[pid]
        network.add_edge(source, node, len(own[pid]) - quota - 1)
        if bonus_to_overfull:
            extra_push_edge[pid] = network.add_edge(pool_x, node, 1)
        counts: dict[LocationId, int] = {}
        for name in own[pid]:
            location = home[name]
            if location is not None and location in at_location:
                counts[location] = counts.get(location, 0) + 1
        class_edges[pid] = [
            (loc, network.add_edge(node, node_of_location[loc], counts[loc]))
            for loc in sorted(counts, key=java_sort_key)
        ]
    orphan_count: dict[LocationId, int] = {}
    for name in orphans:
        location = home[name]
        if location is not None and location in at_location:
            orphan_count[location] = orphan_count.get(location, 0) + 1
    for loc in locations:
        node = node_of_location[loc]
        if orphan_count.get(loc):
            network.add_edge(source, node, orphan_count[loc])
        room = sum(quota - len(own[pid]) for pid in at_location[loc] if pid not in overfull_set)
        if room:
            network.add_edge(node, sink, room)
        if not bonus_to_overfull:
            eligible = sum(1 for pid in at_location[loc] if pid not in overfull_set)
            if eligible:
                bonus_edge[loc] = network.add_edge(node, pool_b, eligible)
    network.max_flow(source, sink)

    # Capacities: which processors get ⌈T/P⌉.
    capacity = dict.fromkeys(processors, quota)
    if bonus_to_overfull:
        without_bonus = {pid for pid in overfull if network.flow(extra_push_edge[pid])}
        for pid in overfull:
            if len(without_bonus) >= len(overfull) - bonus:
                break
            without_bonus.add(pid)
        for pid in overfull:
            if pid not in without_bonus:
                capacity[pid] += 1
    else:
        for pid in overfull:
            capacity[pid] += 1
        remaining = bonus - len(overfull)
        for loc, edge in bonus_edge.items():
            wanted = network.flow(edge)
            for pid in at_location[loc]:
                if wanted == 0:
                    break
                if pid not in overfull_set:
                    capacity[pid] += 1
                    wanted -= 1
                    remaining -= 1
        for pid in processors:
            if remaining == 0:
                break
            if pid not in overfull_set and capacity[pid] == quota:
                capacity[pid] += 1
                remaining -= 1

    # Which tasks each overfull processor releases: as many of each location class as the flow
    # says (lexicographically last first, like Samza's balancer), then any others.
    assignment: dict[str, list[str]] = {}
    released: list[str] = list(orphans)
    for pid in processors:
        mine = own[pid]
        surplus = len(mine) - capacity[pid]
        if surplus <= 0:
            assignment[pid] = list(mine)
            continue
        leaving: set[str] = set()
        for loc, edge in class_edges.get(pid, []):
            wanted = network.flow(edge)
            for name in reversed(mine):
                if wanted == 0:
                    break
                if home[name] == loc and name not in leaving:
                    leaving.add(name)
                    wanted -= 1
        for name in reversed(mine):
            if len(leaving) >= surplus:
                break
            leaving.add(name)
        assignment[pid] = [name for name in mine if name not in leaving]
        released.extend(name for name in mine if name in leaving)

    # Released tasks go to free slots at their previous location first, then anywhere.
    free = {pid: capacity[pid] - len(assignment[pid]) for pid in processors}
    by_location: dict[LocationId, list[str]] = {}
    anywhere: list[str] = []
    for name in java_sorted(released):
        location = home[name]
        if location is not None and location in at_location:
            by_location.setdefault(location, []).append(name)
        else:
            anywhere.append(name)
    for loc in locations:
        waiting = by_location.get(loc)
        if not waiting:
            continue
        index = 0
        for pid in at_location[loc]:
            while free[pid] and index < len(waiting):
                assignment[pid].append(waiting[index])
                free[pid] -= 1
                index += 1
        anywhere.extend(waiting[index:])
    index = 0
    anywhere = java_sorted(anywhere)
    for pid in processors:
        while free[pid] and index < len(anywhere):
            assignment[pid].append(anywhere[index])
            free[pid] -= 1
            index += 1
    return assignment

"""HostAffinityGrouper: the SEP's order — previous processor, then a location holding the
task's stores (its last location first), then any.

The assignment is balanced (every processor gets ⌊T/P⌋ or ⌈T/P⌉ tasks) and, among balanced
assignments, optimal for the lexicographic cost

1. the fewest tasks leaving their previous processor (minimal movement), then
2. the fewest moved tasks placed where none of their stores is (state stays local);

among those it prefers each moved task's last location to an older copy of its stores. Where
a task's stores are is :func:`store_locations`: the locations the processors reported
(``GrouperMetadata.store_locality``), else its recorded task locality, else its live previous
processor's location.

Why the construction below is optimal (docs/grouping.md has the long form):

* Let q = T // P and r = T % P: exactly r processors get q + 1 ("bonus" slots). A processor p
  keeps at most ``cap(p)`` of its s_p previous tasks, so the number of tasks that stay is at most
  Σ min(s_p, q) + min(r, |O|), where O is the set of processors with s_p > q. Keeping
  min(s_p, q) on every processor and giving the bonus slots to processors of O reaches this
  bound, so every optimal assignment keeps all previous tasks of processors outside O, keeps
  exactly cap(p) tasks on each p in O, and hands bonuses to O first.
* What is left to decide — which r processors of O get a bonus (when |O| ≥ r), where the other
  r − |O| bonuses go (when |O| < r), and which tasks each p in O gives up — only changes how
  many of the released tasks find a free slot at a location holding their stores. That is a
  maximum flow on a small network (source → processors of O → store classes → locations →
  sink, with one node pooling the bonus choices), solved exactly with Dinic's algorithm. Within
  a location every processor is equivalent for the cost, so any filling that respects the
  per-location counts is optimal. The flow runs first with each class joined to its last
  location only, then with its older copies added, so tasks keep their last location unless
  moving one lets another keep its state.

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

__all__ = ["HostAffinityGrouper", "previous_location", "store_locations"]


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
            metadata.stores_by_task(),
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


def store_locations(
    task_name: str,
    processor_locality: Mapping[str, LocationId],
    task_locality: Mapping[str, LocationId],
    previous_task_to_processor: Mapping[str, str],
    stores: Mapping[LocationId, int] | None = None,
) -> tuple[LocationId, ...]:
    """The locations holding a task's stores, its last location first.

    ``stores`` (location → the task's epoch when a processor there took up its stores, from
    ``GrouperMetadata.store_locality``) decides when the processors reported any: the highest
    epoch is the last location, the others hold older copies (or a standby's). Without a
    report, the task's :func:`previous_location` stands for where its stores are.

    >>> store_locations("Partition 0", {}, {"Partition 0": "host-b"}, {}, {"host-a": 4, "host-c": 9})
    ('host-c', 'host-a')
    >>> store_locations("Partition 0", {}, {"Partition 0": "host-b"}, {})
    ('host-b',)
    """
    if stores:
        return tuple(sorted(stores, key=lambda location: (-stores[location], java_sort_key(location))))
    location = previous_location(task_name, processor_locality, task_locality, previous_task_to_processor)
    return () if location is None else (location,)


def assign_host_affinity(
    task_names: Sequence[str],
    processor_locality: Mapping[str, LocationId],
    task_locality: Mapping[str, LocationId],
    previous_task_to_processor: Mapping[str, str],
    stores_by_task: Mapping[str, Mapping[LocationId, int]] | None = None,
) -> dict[str, list[str]]:
    """Processor id → its task names (every live processor present, Java order throughout).

    ``task_names`` must be unique; they are sorted here. ``stores_by_task``: task name →
    {location holding its stores → epoch} (:meth:`GrouperMetadata.stores_by_task`). See the
    module docstring for the optimality argument.
    """
    names = java_sorted(task_names)
    processors = java_sorted(processor_locality)
    if not processors:
        msg = "HostAffinityGrouper: there are no live processors to assign tasks to"
        raise GroupingError(msg)
    quota, bonus = divmod(len(names), len(processors))
    stores_by_task = stores_by_task or {}

    at_location: dict[LocationId, list[str]] = {}
    for pid in processors:
        at_location.setdefault(processor_locality[pid], []).append(pid)
    locations = sorted(at_location, key=java_sort_key)

    own: dict[str, list[str]] = {pid: [] for pid in processors}
    # Where each task's stores are among the live locations, its last location first: a
    # task placed at one of them keeps its state local.
    places: dict[str, tuple[LocationId, ...]] = {}
    orphans: list[str] = []
    for name in names:
        previous = previous_task_to_processor.get(name)
        if previous is not None and previous in own:
            own[previous].append(name)
        else:
            orphans.append(name)
            previous = None  # only a live previous processor locates a task
        recorded = stores_by_task.get(name)
        if recorded:
            found = store_locations(name, processor_locality, task_locality, previous_task_to_processor, recorded)
            places[name] = tuple(location for location in found if location in at_location)
            continue
        # No report: store_locations' fallback, inline (this loop runs once per task).
        location = task_locality.get(name)
        if location is None and previous is not None:
            location = processor_locality[previous]
        places[name] = (location,) if location is not None and location in at_location else ()

    overfull = [pid for pid in processors if len(own[pid]) > quota]
    overfull_set = set(overfull)
    bonus_to_overfull = len(overfull) >= bonus

    # Tasks that may move are grouped into classes by the live locations holding their stores
    # (last location first); tasks without any are left out of the network (anywhere is as
    # good for them).
    releasable: dict[str, dict[tuple[LocationId, ...], int]] = {}
    for pid in overfull:
        counts: dict[tuple[LocationId, ...], int] = {}
        for name in own[pid]:
            if places[name]:
                counts[places[name]] = counts.get(places[name], 0) + 1
        releasable[pid] = counts
    orphan_count: dict[tuple[LocationId, ...], int] = {}
    for name in orphans:
        if places[name]:
            orphan_count[places[name]] = orphan_count.get(places[name], 0) + 1
    classes = sorted(
        {kind for counts in releasable.values() for kind in counts} | set(orphan_count),
        key=lambda kind: [java_sort_key(loc) for loc in kind],
    )

    # The flow network deciding bonuses and which released tasks find room where their stores
    # are: source → overfull processors / orphans → store classes → locations → sink.
    source, sink, pool_x, pool_b = 0, 1, 2, 3
    node_of_processor = {pid: 4 + i for i, pid in enumerate(overfull)}
    first_class = 4 + len(overfull)
    node_of_class = {kind: first_class + i for i, kind in enumerate(classes)}
    first_location = first_class + len(classes)
    node_of_location = {loc: first_location + i for i, loc in enumerate(locations)}
    network = FlowNetwork(first_location + len(locations))
    extra_push_edge: dict[str, int] = {}
    bonus_edge: dict[LocationId, int] = {}
    class_edges: dict[str, list[tuple[tuple[LocationId, ...], int]]] = {}
    spread_edges: dict[tuple[LocationId, ...], list[tuple[LocationId, int]]] = {}
    if bonus_to_overfull:
        network.add_edge(source, pool_x, len(overfull) - bonus)
    else:
        network.add_edge(pool_b, sink, bonus - len(overfull))
    for pid in overfull:
        node = node_of_processor[pid]
        network.add_edge(source, node, len(own[pid]) - quota - 1)
        if bonus_to_overfull:
            extra_push_edge[pid] = network.add_edge(pool_x, node, 1)
        counts = releasable[pid]
        class_edges[pid] = [
            (kind, network.add_edge(node, node_of_class[kind], counts[kind]))
            for kind in classes
            if kind in counts
        ]
    most = len(names)
    for kind in classes:
        node = node_of_class[kind]
        if orphan_count.get(kind):
            network.add_edge(source, node, orphan_count[kind])
        spread_edges[kind] = [(kind[0], network.add_edge(node, node_of_location[kind[0]], most))]
    for loc in locations:
        node = node_of_location[loc]
        room = sum(quota - len(own[pid]) for pid in at_location[loc] if pid not in overfull_set)
        if room:
            network.add_edge(node, sink, room)
        if not bonus_to_overfull:
            eligible = sum(1 for pid in at_location[loc] if pid not in overfull_set)
            if eligible:
                bonus_edge[loc] = network.add_edge(node, pool_b, eligible)
    # First every class to its last location only, then to its older copies too: the second
    # pass reaches the maximum, rerouting a task from its last location only when that lets
    # one more task keep its state.
    network.max_flow(source, sink)
    for kind in classes:
        spread_edges[kind] += [
            (loc, network.add_edge(node_of_class[kind], node_of_location[loc], most)) for loc in kind[1:]
        ]
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

    # Which tasks each overfull processor releases: as many of each store class as the flow
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
        for kind, edge in class_edges.get(pid, []):
            wanted = network.flow(edge)
            for name in reversed(mine):
                if wanted == 0:
                    break
                if places[name] == kind and name not in leaving:
                    leaving.add(name)
                    wanted -= 1
        for name in reversed(mine):
            if len(leaving) >= surplus:
                break
            leaving.add(name)
        assignment[pid] = [name for name in mine if name not in leaving]
        released.extend(name for name in mine if name in leaving)

    # Released tasks go where the flow sends their class, each to its last location when the
    # flow leaves room there, else to another location holding its stores; the rest anywhere.
    quota_at: dict[tuple[LocationId, ...], dict[LocationId, int]] = {
        kind: {loc: network.flow(edge) for loc, edge in edges} for kind, edges in spread_edges.items()
    }
    by_location: dict[LocationId, list[str]] = {}
    anywhere: list[str] = []
    waiting: list[str] = []
    for name in java_sorted(released):
        shares = quota_at.get(places[name]) if places[name] else None
        if shares and shares.get(places[name][0], 0) > 0:
            shares[places[name][0]] -= 1
            by_location.setdefault(places[name][0], []).append(name)
        elif shares:
            waiting.append(name)
        else:
            anywhere.append(name)
    for name in waiting:
        shares = quota_at[places[name]]
        target = next((loc for loc in places[name] if shares.get(loc, 0) > 0), None)
        if target is None:
            anywhere.append(name)
        else:
            shares[target] -= 1
            by_location.setdefault(target, []).append(name)
    free = {pid: capacity[pid] - len(assignment[pid]) for pid in processors}
    for loc in locations:
        arriving = java_sorted(by_location.get(loc, []))
        index = 0
        for pid in at_location[loc]:
            while free[pid] and index < len(arriving):
                assignment[pid].append(arriving[index])
                free[pid] -= 1
                index += 1
        anywhere.extend(arriving[index:])
    index = 0
    anywhere = java_sorted(anywhere)
    for pid in processors:
        while free[pid] and index < len(anywhere):
            assignment[pid].append(anywhere[index])
            free[pid] -= 1
            index += 1
    return assignment

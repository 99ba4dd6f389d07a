"""Input partition expansion for stateful jobs (SAMZA.md §2.6, SEP-5).

When an input stream of a stateful job gains partitions, keys must keep reaching the task
that holds their state. After an expansion by an integer multiple, new partition p carries the
keys that partition ``p mod old_count`` carried, so it joins that partition's previous task.
The caller applies this only when the job has persistent stores and a previous assignment.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from samza_nb.errors import GroupingError
from samza_nb.model import SystemStream, SystemStreamPartition, java_sorted

__all__ = ["PartitionMapper", "expand_partitions", "hash_partition_mapper"]

#: (current SSP, previous partition count, current partition count) → the SSP it came from.
PartitionMapper = Callable[[SystemStreamPartition, int, int], SystemStreamPartition]


def hash_partition_mapper(
    ssp: SystemStreamPartition, previous_count: int, current_count: int
) -> SystemStreamPartition:
    """Samza's default mapper: partition ``p`` came from ``p mod previous_count``.

    Only expansion by an integer multiple keeps keys together; anything else is an error
    (Appendix A #18), as in Samza.

    >>> from samza_nb.model import SystemStreamPartition as SSP
    >>> hash_partition_mapper(SSP("kafka", "PVE", 5), 4, 8).partition
    1
    """
    if previous_count <= 0 or current_count % previous_count != 0:
        msg = (
            f"{ssp.system_stream}: partition count changed from {previous_count} to "
            f"{current_count}; only expansion by an integer multiple keeps keys on their tasks"
        )
        raise GroupingError(msg)
    return SystemStreamPartition(ssp.system, ssp.stream, ssp.partition % previous_count)


def _partition_counts(
    groups: Iterable[Iterable[SystemStreamPartition]],
    broadcast: frozenset[SystemStreamPartition],
) -> dict[SystemStream, int]:
    # Distinct SSPs per stream. Samza counts occurrences, broadcast copies included, so a
    # broadcast partition of a stream that is also grouped changes the count with the task count.
    seen: dict[SystemStream, set[SystemStreamPartition]] = {}
    for ssps in groups:
        for ssp in ssps:
            if ssp not in broadcast:
                seen.setdefault(ssp.system_stream, set()).add(ssp)
    return {stream: len(members) for stream, members in seen.items()}


def expand_partitions(
    grouped: Mapping[str, Iterable[SystemStreamPartition]],
    previous_task_to_ssps: Mapping[str, Iterable[SystemStreamPartition]],
    *,
    broadcast_inputs: Iterable[SystemStreamPartition] = (),
    mapper: PartitionMapper = hash_partition_mapper,
) -> dict[str, frozenset[SystemStreamPartition]]:
    """Move SSPs back to the tasks that held their keys before (Samza's SSPGrouperProxy).

    For every non-broadcast SSP of ``grouped``: if its stream existed before with another
    partition count, its previous task is that of ``mapper(ssp, old, new)``; otherwise that of
    the SSP itself. The SSP moves there when the task differs. Tasks left without SSPs (or
    with broadcast SSPs only) are dropped. Brand-new streams keep the grouper's assignment.

    >>> from samza_nb.model import SystemStreamPartition as SSP
    >>> current = {f"Partition {p}": [SSP("kafka", "PVE", p)] for p in range(4)}
    >>> previous = {f"Partition {p}": [SSP("kafka", "PVE", p)] for p in range(2)}
    >>> sorted(p.partition for p in expand_partitions(current, previous)["Partition 1"])
    [1, 3]
    """
    broadcast = frozenset(broadcast_inputs)
    current = {name: set(ssps) for name, ssps in grouped.items()}
    if not previous_task_to_ssps:
        return {name: frozenset(current[name]) for name in java_sorted(current)}
    previous_owner: dict[SystemStreamPartition, str] = {}
    for name in java_sorted(previous_task_to_ssps):
        for ssp in previous_task_to_ssps[name]:
            if ssp not in broadcast:
                previous_owner[ssp] = name
    previous_counts = _partition_counts(previous_task_to_ssps.values(), broadcast)
    current_counts = _partition_counts(current.values(), broadcast)
    moves: list[tuple[SystemStreamPartition, str, str]] = []
    for name in java_sorted(current):
        for ssp in sorted(current[name]):
            if ssp in broadcast:
                continue
            stream = ssp.system_stream
            before = previous_counts.get(stream, 0)
            now = current_counts.get(stream, 0)
            try:
                origin = mapper(ssp, before, now) if before > 0 and before != now else ssp
            except GroupingError as error:
                msg = (
                    f"partition expansion: {error}. Restore the previous partition count, or "
                    "regroup from scratch (drop the previous task → partition assignment)"
                )
                raise GroupingError(msg) from error
            owner = previous_owner.get(origin)
            if owner is not None and owner != name:
                moves.append((ssp, name, owner))
    for ssp, source, target in moves:
        if target not in current:
            msg = (
                f"partition expansion: {ssp} belonged to task {target!r}, which the current "
                "grouping no longer has; regroup from scratch (drop the previous task → "
                "partition assignment) or keep the grouper that made it"
            )
            raise GroupingError(msg)
        current[source].discard(ssp)
        current[target].add(ssp)
    # A task left with broadcast partitions only is dropped too (Samza keeps it, although its
    # groupers never create such a task).
    return {
        name: frozenset(current[name])
        for name in java_sorted(current)
        if any(ssp not in broadcast for ssp in current[name])
    }

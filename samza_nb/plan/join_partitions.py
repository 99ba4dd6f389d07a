"""Partition counts of joined streams (SAMZA.md §11.4 steps 4, 5 and 7).

The streams that reach a join without crossing a shuffle form its group (send_to(table) leads
to every stream-table join on that table, whose side inputs join the group too). Intermediate
streams of a group take the count of a known member, to a fixpoint; in the end every group
must have one count, since joined streams must be co-partitioned.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping

from samza_nb.errors import PlanError
from samza_nb.plan.operators import (
    InputOperatorSpec,
    JoinOperatorSpec,
    OperatorSpec,
    StreamTableJoinOperatorSpec,
    declared_at,
)
from samza_nb.plan.stages import within_stage

__all__ = [
    "check_co_partitioned",
    "infer_join_partitions",
    "join_groups",
    "table_joins",
]

_JOINS = JoinOperatorSpec | StreamTableJoinOperatorSpec


def table_joins(operators: list[OperatorSpec]) -> dict[str, list[StreamTableJoinOperatorSpec]]:
    """The stream-table joins of each table, by table id."""
    result: dict[str, list[StreamTableJoinOperatorSpec]] = {}
    for spec in operators:
        if isinstance(spec, StreamTableJoinOperatorSpec) and spec.table is not None:
            result.setdefault(spec.table.table_id, []).append(spec)
    return result


def join_groups(
    operators: list[OperatorSpec],
    input_ops: Mapping[str, InputOperatorSpec],
    joins_of_tables: Mapping[str, list[StreamTableJoinOperatorSpec]],
    side_inputs: Mapping[str, list[str]],
) -> dict[str, dict[str, None]]:
    """Per join op id, the streams reaching it without crossing a shuffle (ordered set)."""
    joins: dict[str, dict[str, None]] = {
        spec.op_id: {} for spec in operators if isinstance(spec, _JOINS)
    }
    for stream_id, start in input_ops.items():
        for spec in within_stage(start, joins_of_tables):
            if isinstance(spec, _JOINS):
                joins[spec.op_id][stream_id] = None
    for specs in joins_of_tables.values():
        for spec in specs:
            assert spec.table is not None
            for stream_id in side_inputs.get(spec.table.table_id, ()):
                joins[spec.op_id][stream_id] = None
    return joins


def infer_join_partitions(
    join_streams: Mapping[str, Mapping[str, None]], counts: dict[str, int], unknown_ok: set[str]
) -> None:
    """Give unknown intermediate streams of a join group the count of a known member,
    re-queuing the other groups of every stream so set: an order-independent fixpoint."""
    groups = [list(streams) for streams in join_streams.values()]
    groups_of: dict[str, list[int]] = {}
    for index, group in enumerate(groups):
        for stream_id in group:
            groups_of.setdefault(stream_id, []).append(index)
    queue = deque(range(len(groups)))
    while queue:
        index = queue.popleft()
        group = groups[index]
        known = next((counts[s] for s in group if s in counts), None)
        if known is None:
            continue
        for stream_id in group:
            if stream_id not in counts and stream_id in unknown_ok:
                counts[stream_id] = known
                queue.extend(i for i in groups_of[stream_id] if i != index)


def check_co_partitioned(
    join_streams: Mapping[str, Mapping[str, None]],
    counts: Mapping[str, int],
    by_id: Mapping[str, OperatorSpec],
) -> None:
    """Raise PlanError naming the first join whose streams have different partition counts."""
    for op_id, streams in join_streams.items():
        expected: int | None = None
        for stream_id in streams:
            actual = counts[stream_id]
            if expected is None:
                expected = actual
            elif actual != expected:
                spec = by_id[op_id]
                msg = (
                    f"Unable to resolve input partitions of stream {stream_id!r} for the join "
                    f"{op_id!r}{declared_at(spec)}. Expected: {expected}, Actual: {actual}; joined "
                    "streams must be co-partitioned: repartition a side with "
                    "partition_by(..., op_id=...) or give the streams the same partition count"
                )
                raise PlanError(msg)

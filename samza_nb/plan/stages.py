"""Stages: the operators split at every shuffle, and what a stage's walk reaches.

A partition_by or broadcast has no ``next_ops``: its intermediate stream is read by a separate
input operator, so the weakly connected components of the operator edges are the stages
(SAMZA.md §11.3), and a walk from an input that stops at the first shuffle finds what one
stage reads and feeds.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from samza_nb.plan.execution_plan import Stage
from samza_nb.plan.operators import (
    BroadcastOperatorSpec,
    InputOperatorSpec,
    OperatorSpec,
    OutputOperatorSpec,
    PartitionByOperatorSpec,
    SendToTableOperatorSpec,
    StreamTableJoinOperatorSpec,
)
from samza_nb.plan.tables import LocalTable

__all__ = ["SHUFFLES", "intermediate_producers", "split_stages", "within_stage"]

#: The operators that end a stage by writing an intermediate stream.
SHUFFLES = PartitionByOperatorSpec | BroadcastOperatorSpec


def split_stages(operators: list[OperatorSpec]) -> tuple[list[Stage], dict[str, int]]:
    """Weakly connected components of the ``next_ops`` edges, ordered by first operator.

    A partition_by/broadcast has no ``next_ops``: its intermediate stream is read by a
    separate input operator, which is what splits stages at every shuffle.
    """
    parent = {spec.op_id: spec.op_id for spec in operators}

    def find(op_id: str) -> str:
        while parent[op_id] != op_id:
            parent[op_id] = parent[parent[op_id]]
            op_id = parent[op_id]
        return op_id

    for spec in operators:
        for nxt in spec.next_ops:
            a, b = find(spec.op_id), find(nxt.op_id)
            if a != b:
                parent[b] = a
    members: dict[str, list[OperatorSpec]] = {}
    for spec in operators:  # creation order: the first member of each component comes first
        members.setdefault(find(spec.op_id), []).append(spec)
    stages: list[Stage] = []
    stage_of: dict[str, int] = {}
    for index, specs in enumerate(members.values()):
        inputs: list[str] = []
        outputs: list[str] = []
        tables: list[str] = []
        for spec in specs:
            stage_of[spec.op_id] = index
            if isinstance(spec, InputOperatorSpec):
                inputs.append(spec.stream_id)
            elif isinstance(
                spec, OutputOperatorSpec | PartitionByOperatorSpec | BroadcastOperatorSpec
            ):
                if spec.stream_id not in outputs:
                    outputs.append(spec.stream_id)
            elif isinstance(spec, SendToTableOperatorSpec | StreamTableJoinOperatorSpec):
                table = spec.table
                if isinstance(table, LocalTable) and table.table_id not in tables:
                    tables.append(table.table_id)
        stages.append(
            Stage(
                id=index,
                operators=tuple(spec.op_id for spec in specs),
                input_streams=tuple(inputs),
                output_streams=tuple(outputs),
                tables=tuple(tables),
            )
        )
    return stages, stage_of


def intermediate_producers(
    input_ops: Mapping[str, InputOperatorSpec],
    shuffles: Mapping[str, PartitionByOperatorSpec | BroadcastOperatorSpec],
) -> dict[str, frozenset[str]]:
    """Intermediate stream → input streams feeding it (SAMZA.md §5.5): traverse from every
    input operator through ``next_ops``, stopping at the first partition_by/broadcast."""
    feeding: dict[str, set[str]] = {stream_id: set() for stream_id in shuffles}
    for stream_id, start in input_ops.items():
        for spec in within_stage(start):
            if isinstance(spec, SHUFFLES):
                feeding[spec.stream_id].add(stream_id)
    return {stream_id: frozenset(sources) for stream_id, sources in feeding.items()}


def within_stage(
    start: OperatorSpec,
    table_joins: Mapping[str, list[StreamTableJoinOperatorSpec]] | None = None,
) -> Iterator[OperatorSpec]:
    """Every operator reachable from ``start`` without crossing a shuffle (the shuffle itself
    is yielded, not followed). With ``table_joins``, send_to(table) also leads to every
    stream-table join on that table (SAMZA.md §11.4 step 4)."""
    seen: set[int] = set()
    stack: list[OperatorSpec] = [start]
    while stack:
        spec = stack.pop()
        if id(spec) in seen:
            continue
        seen.add(id(spec))
        yield spec
        if isinstance(spec, SHUFFLES):
            continue
        following = list(spec.next_ops)
        if table_joins and isinstance(spec, SendToTableOperatorSpec) and spec.table is not None:
            following.extend(table_joins.get(spec.table.table_id, ()))
        stack.extend(reversed(following))

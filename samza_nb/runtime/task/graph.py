"""The operator graph of one task: an implementation per operator spec, wired as in the plan.

A shuffle (partition_by, broadcast) ends a stage inside the task: the operators after it hang
off the intermediate stream's input operator, whose messages arrive through the stream.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from samza_nb.plan.operators import (
    BroadcastOperatorSpec,
    FilterOperatorSpec,
    FlatMapOperatorSpec,
    InputOperatorSpec,
    JoinOperatorSpec,
    MapOperatorSpec,
    OperatorSpec,
    OutputOperatorSpec,
    PartitionByOperatorSpec,
    SendToTableOperatorSpec,
    SinkOperatorSpec,
    StreamTableJoinOperatorSpec,
    WindowOperatorSpec,
)
from samza_nb.runtime.task.joins import JoinImpl, SendToTableImpl, TableJoinImpl
from samza_nb.runtime.task.operators import InputImpl, OperatorImpl
from samza_nb.runtime.task.stateless import FilterImpl, FlatMapImpl, MapImpl, SinkImpl
from samza_nb.runtime.task.stream_writers import BroadcastImpl, OutputImpl, PartitionByImpl
from samza_nb.runtime.task.windows import WindowImpl

if TYPE_CHECKING:
    from samza_nb.runtime.task.context import TaskContext

__all__ = ["build_operator_graph"]

_IMPLS: dict[type[OperatorSpec], type[OperatorImpl]] = {
    InputOperatorSpec: InputImpl,
    MapOperatorSpec: MapImpl,
    FlatMapOperatorSpec: FlatMapImpl,
    FilterOperatorSpec: FilterImpl,
    SinkOperatorSpec: SinkImpl,
    OutputOperatorSpec: OutputImpl,
    PartitionByOperatorSpec: PartitionByImpl,
    BroadcastOperatorSpec: BroadcastImpl,
    WindowOperatorSpec: WindowImpl,
    JoinOperatorSpec: JoinImpl,
    StreamTableJoinOperatorSpec: TableJoinImpl,
    SendToTableOperatorSpec: SendToTableImpl,
}


def build_operator_graph(
    input_specs: dict[str, InputOperatorSpec],
    context: TaskContext,
    task_streams: set[str],
) -> tuple[dict[str, OperatorImpl], dict[str, OperatorImpl]]:
    """Implementations for every operator reachable from the inputs; returns (impls by op id,
    input impls by stream id). ``task_streams`` are the streams this task has SSPs of."""
    impls: dict[str, OperatorImpl] = {}

    def impl_for(spec: OperatorSpec) -> OperatorImpl:
        existing = impls.get(spec.op_id)
        if existing is not None:
            return existing
        factory = _IMPLS.get(type(spec), OperatorImpl)
        impl = factory(spec, context)
        impls[spec.op_id] = impl
        if isinstance(spec, PartitionByOperatorSpec | BroadcastOperatorSpec):
            # A shuffle ends the stage: its consumers hang off the intermediate stream's input.
            return impl
        for next_spec in spec.next_ops:
            next_impl = impl_for(next_spec)
            impl.next_ops.append(next_impl)
            next_impl.prev_ops.append(impl)
        return impl

    inputs = {stream_id: impl_for(spec) for stream_id, spec in sorted(input_specs.items())}

    def mark(impl: OperatorImpl, stream_id: str) -> None:
        if stream_id in impl.input_streams:
            return
        impl.input_streams.add(stream_id)
        if stream_id in task_streams:
            impl.used_in_task = True
        for next_impl in impl.next_ops:
            mark(next_impl, stream_id)

    for stream_id, impl in inputs.items():
        mark(impl, stream_id)
    return impls, inputs

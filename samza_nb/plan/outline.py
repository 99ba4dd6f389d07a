"""The text outline of an ExecutionPlan, for terminals and papermill logs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from samza_nb.plan._drawing_parts import _partitions
from samza_nb.plan.operators import (
    BroadcastOperatorSpec,
    InputOperatorSpec,
    OutputOperatorSpec,
    PartitionByOperatorSpec,
    SendToTableOperatorSpec,
    StreamTableJoinOperatorSpec,
)

if TYPE_CHECKING:
    from samza_nb.plan.execution_plan import ExecutionPlan

__all__ = ["render_text"]


def render_text(plan: ExecutionPlan) -> str:
    """A readable outline for terminals and papermill logs."""
    lines = [
        f"ExecutionPlan {plan.app_name!r} (job {plan.job_id}): {len(plan.stages)} "
        f"stage{'s' if len(plan.stages) != 1 else ''}, {len(plan.operators)} operators"
    ]

    def stream_line(title: str, stream_ids: Mapping[str, int]) -> None:
        if not stream_ids:
            return
        entries = []
        for stream_id, count in stream_ids.items():
            info = plan.streams[stream_id]
            kind = " broadcast" if info.is_broadcast else ""
            entries.append(f"{stream_id} [{info.system_name}, {_partitions(count)}{kind}]")
        lines.append(f"  {title:<13} " + ", ".join(entries))

    stream_line("inputs:", plan.inputs)
    stream_line("side inputs:", plan.side_inputs)
    stream_line("intermediate:", plan.intermediate_streams)
    stream_line("outputs:", plan.outputs)
    if plan.tables:
        lines.append(f"  {'tables:':<13} " + ", ".join(plan.tables))
    if plan.window_ms is not None:
        lines.append(f"  {'window:':<13} task.window.ms={plan.window_ms}")
    prefix = f"{plan.app_name}-{plan.job_id}-"
    for stage in plan.stages:
        reads = ", ".join(stage.input_streams) or "-"
        writes = ", ".join(stage.output_streams) or "-"
        lines.append(f"  stage {stage.id}: reads {reads}; writes {writes}")
        for op_id in stage.operators:
            spec = plan.operators[op_id]
            name = op_id[len(prefix) :] if op_id.startswith(prefix) else op_id
            targets = [
                nxt.op_id[len(prefix) :] if nxt.op_id.startswith(prefix) else nxt.op_id
                for nxt in spec.next_ops
            ]
            text = f"    {name}"
            if isinstance(spec, InputOperatorSpec):
                text += f" ⇐ {spec.stream_id}"
            if isinstance(
                spec, OutputOperatorSpec | PartitionByOperatorSpec | BroadcastOperatorSpec
            ):
                text += f" ⇒ {spec.stream_id}"
            if isinstance(spec, PartitionByOperatorSpec) and spec.combine_into is not None:
                window = spec.combine_into.op_id
                window = window[len(prefix) :] if window.startswith(prefix) else window
                text += f" (partial aggregates for {window})"
            if (
                isinstance(spec, SendToTableOperatorSpec | StreamTableJoinOperatorSpec)
                and spec.table
            ):
                text += f" ({'⇒' if isinstance(spec, SendToTableOperatorSpec) else '⋈'} table {spec.table.table_id})"
            if targets:
                text += " → " + ", ".join(targets)
            lines.append(text)
    return "\n".join(lines)

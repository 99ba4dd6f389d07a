"""What an application declares and never uses: warned about when it is planned.

An input no operator reads, an output no operator sends to and a table no operator sends to or
joins with are allowed (a notebook is often mid-edit), but probably unintended: each gives a
:class:`PlanWarning` naming it and where it was declared.
"""

from __future__ import annotations

import warnings

from samza_nb.plan.graph import SpecGraph
from samza_nb.plan.operators import (
    InputOperatorSpec,
    OperatorSpec,
    OutputOperatorSpec,
    SendToTableOperatorSpec,
    StreamTableJoinOperatorSpec,
    declared_at,
)

__all__ = ["PlanWarning", "warn_unused"]


class PlanWarning(UserWarning):
    """Something in the application is allowed but probably unintended (an unused input …)."""


def warn_unused(graph: SpecGraph, operators: list[OperatorSpec]) -> None:
    """A :class:`PlanWarning` for each input no operator reads, output no operator sends to,
    and table no operator uses (the warnings point at the caller of ``app.plan()``)."""
    written = {spec.stream_id for spec in operators if isinstance(spec, OutputOperatorSpec)}
    used_tables = {
        spec.table.table_id
        for spec in operators
        if isinstance(spec, SendToTableOperatorSpec | StreamTableJoinOperatorSpec)
        and spec.table is not None
    }
    for spec in operators:
        if (
            isinstance(spec, InputOperatorSpec)
            and not spec.is_intermediate
            and not spec.next_ops
        ):
            msg = (
                f"app {graph.app_name!r}: input {spec.stream_id!r}{declared_at(spec)} is declared "
                "but no operator reads it"
            )
            warnings.warn(msg, PlanWarning, stacklevel=5)
    for stream_id, decl in graph.outputs.items():
        if stream_id not in written:
            place = f" (at {decl.user_location})" if decl.user_location else ""
            msg = (
                f"app {graph.app_name!r}: output {stream_id!r}{place} is declared but no "
                "operator sends to it"
            )
            warnings.warn(msg, PlanWarning, stacklevel=5)
    for table_id, table_decl in graph.tables.items():
        if table_id not in used_tables and not table_decl.side_inputs:
            msg = (
                f"app {graph.app_name!r}: table {table_id!r} is registered but no operator "
                "sends to or joins with it"
            )
            warnings.warn(msg, PlanWarning, stacklevel=5)

"""The spec graph: everything an application declared, handed from the API to the planner.

``samza_nb.api.StreamApplication`` builds a :class:`SpecGraph` (its inputs, outputs, tables and
operator specs in creation order) and :func:`samza_nb.plan.planner.plan_application` turns it
into an :class:`~samza_nb.plan.execution_plan.ExecutionPlan`. The planner never imports the
API or the systems: streams are described by :class:`StreamDeclaration`, whose ``system`` only
has to satisfy :class:`~samza_nb.plan.operators.StreamSystemLike`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from samza_nb.config import Config
from samza_nb.plan.operators import OperatorSpec, StreamSystemLike
from samza_nb.plan.serdes import KVSerde, Serde
from samza_nb.plan.tables import LocalTable

__all__ = ["SpecGraph", "StreamDeclaration", "TableDeclaration"]


@dataclass(frozen=True, eq=False)
class StreamDeclaration:
    """One declared input, output or side-input stream (serde already resolved)."""

    stream_id: str
    system: StreamSystemLike
    partitions: int | None
    serde: Serde | KVSerde
    user_location: str | None = None


@dataclass(frozen=True, eq=False)
class TableDeclaration:
    """A table registered with ``app.table(...)`` and its resolved side-input streams."""

    table: LocalTable
    side_inputs: tuple[StreamDeclaration, ...] = ()
    user_location: str | None = None


@dataclass(frozen=True, eq=False)
class SpecGraph:
    """What the planner reads: the declarations and the operator specs in creation order.

    ``operators`` holds every spec including the input operators of declared inputs and the
    hidden input operators of intermediate streams; creation order is a topological order of
    the ``next_ops`` edges because an operator can only be attached to a stream that exists.
    """

    app_name: str
    job_id: str
    config: Config
    inputs: Mapping[str, StreamDeclaration]
    outputs: Mapping[str, StreamDeclaration]
    tables: Mapping[str, TableDeclaration]
    operators: Sequence[OperatorSpec]

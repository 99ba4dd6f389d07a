"""The ExecutionPlan: what the planner produces and the runtime and the drawings read.

An :class:`ExecutionPlan` is a value: the planner copies the application's operator specs, so
operators added to the application after planning do not change a plan already made (plan
again to see them). Stages are the operators between shuffles: every partition_by or
broadcast ends a stage and its intermediate stream starts another.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

from samza_nb.config import Config
from samza_nb.errors import UnknownOperatorError
from samza_nb.plan.operators import (
    BroadcastOperatorSpec,
    InputOperatorSpec,
    JoinOperatorSpec,
    OperatorSpec,
    OutputOperatorSpec,
    PartitionByOperatorSpec,
    SendToTableOperatorSpec,
    StreamSystemLike,
    StreamTableJoinOperatorSpec,
    WindowOperatorSpec,
)
from samza_nb.plan.serdes import KVSerde, Serde
from samza_nb.plan.store_names import operator_store_names
from samza_nb.plan.stream_names import changelog_stream_id
from samza_nb.plan.tables import LocalTable
from samza_nb.plan.windows import (
    AnyTrigger,
    CountTrigger,
    RepeatingTrigger,
    TimeSinceFirstMessageTrigger,
    TimeSinceLastMessageTrigger,
    TimeTrigger,
    Trigger,
)

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["ExecutionPlan", "Stage", "StreamInfo", "StreamKind", "register_renderers"]

StreamKind = Literal["input", "output", "intermediate", "side_input"]


@dataclass(frozen=True)
class StreamInfo:
    """Everything the runtime needs about one stream of the plan.

    ``system`` is the system object of the descriptor; intermediate streams live in the job's
    default system (``job.default.system``, else the system of the first input).
    ``physical_name`` is the stream's name in its system: the stream id, with ``-<app.run.id>``
    appended for intermediate streams in BATCH mode (SAMZA.md §11.3).
    """

    stream_id: str
    kind: StreamKind
    system: StreamSystemLike = field(compare=False)
    partitions: int
    serde: Serde | KVSerde = field(compare=False)
    is_broadcast: bool = False
    physical_name: str = ""

    def __post_init__(self) -> None:
        if not self.physical_name:
            object.__setattr__(self, "physical_name", self.stream_id)

    @property
    def system_name(self) -> str:
        return self.system.name

    @property
    def is_intermediate(self) -> bool:
        return self.kind == "intermediate"


@dataclass(frozen=True)
class Stage:
    """Operators between shuffles, with the streams they read and write.

    ``operators`` are op ids in creation order (a topological order); ``input_streams`` are
    the streams whose input operators belong to the stage; ``output_streams`` the outputs and
    intermediate streams its send_to, partition_by and broadcast operators write; ``tables``
    the tables its operators write or join against.
    """

    id: int
    operators: tuple[str, ...]
    input_streams: tuple[str, ...]
    output_streams: tuple[str, ...]
    tables: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return f"stage {self.id}"


@dataclass(frozen=True, eq=False, repr=False)
class ExecutionPlan:
    """A planned application: streams with partition counts, stages, operators and config.

    Built by :func:`samza_nb.plan.planner.plan_application` (``app.plan()``); read by the
    runtime and drawn by :mod:`samza_nb.plan.drawing`. Dictionaries keep declaration order.
    """

    app_name: str
    job_id: str
    config: Config
    inputs: dict[str, int]
    outputs: dict[str, int]
    intermediate_streams: dict[str, int]
    side_inputs: dict[str, int]
    side_input_tables: dict[str, tuple[str, ...]]
    streams: dict[str, StreamInfo]
    input_operators: dict[str, InputOperatorSpec]
    operators: dict[str, OperatorSpec]
    tables: dict[str, LocalTable]
    stages: list[Stage]
    join_streams: dict[str, tuple[str, ...]]
    window_ms: int | None
    #: The system of intermediate streams and changelogs: ``job.default.system``, else the
    #: system of the first declared stream (None for an app without streams).
    default_system: StreamSystemLike | None = None
    _producers: dict[str, frozenset[str]] = field(default_factory=dict)
    _stage_of: dict[str, int] = field(default_factory=dict)

    # -- lookups ---------------------------------------------------------------------------
    @property
    def operator_ids(self) -> list[str]:
        """Every operator id in creation order (hidden input operators included)."""
        return list(self.operators)

    def producer_streams(self, stream_id: str) -> set[str]:
        """The input streams whose messages reach the partition_by/broadcast writing
        ``stream_id`` without crossing another shuffle (SAMZA.md §5.5). Empty for sources."""
        return set(self._producers.get(stream_id, ()))

    def operator(self, op_id: str) -> OperatorSpec | InputOperatorSpec:
        """An operator by its full op id or by the short id the outline and drawings show
        (``window-count`` for ``page-views-1-window-count``)."""
        specs: dict[str, OperatorSpec | InputOperatorSpec] = {**self.input_operators, **self.operators}
        if op_id in specs:
            return specs[op_id]
        matches = [spec for spec in specs.values() if spec.short_id == op_id]
        if len(matches) == 1:
            return matches[0]
        msg = f"no operator {op_id!r} in the plan of {self.app_name!r}; operators: {sorted(specs)}"
        raise UnknownOperatorError(msg)

    @property
    def store_names(self) -> list[str]:
        """Every store a task of this plan has: windows (op id), joins (op id -L/-R), tables."""
        names: set[str] = set(self.tables)
        for spec in self.operators.values():
            names.update(operator_store_names(spec))
        return sorted(names)

    def changelog_stream_id(self, store: str) -> str:
        """The changelog stream of ``store``, in the default system (one partition per task)."""
        return changelog_stream_id(self.app_name, self.job_id, store)

    @property
    def consumed_streams(self) -> dict[str, StreamInfo]:
        """The streams tasks read: inputs, side inputs and intermediate streams."""
        return {sid: info for sid, info in self.streams.items() if info.kind != "output"}

    @property
    def task_count(self) -> int:
        """Tasks of the default grouping (the largest consumed partition count): the
        changelog streams' partition count."""
        return max((info.partitions for info in self.consumed_streams.values()), default=1)

    def stage_of(self, op_id: str) -> Stage:
        """The stage an operator (full or short op id) belongs to."""
        return self.stages[self._stage_of[self.operator(op_id).op_id]]

    @cached_property
    def graph(self) -> nx.DiGraph:
        """A networkx DiGraph of operators, streams and tables.

        Operator nodes are keyed by op id (attributes ``kind="operator"``, ``opcode``,
        ``stage``); streams by ``"stream:<id>"`` (``kind="stream"``, ``stream_kind``,
        ``partitions``, ``stage`` of the writer for intermediate streams); tables by
        ``"table:<id>"``. Edges follow the data: stream → input op → … → partition_by →
        intermediate stream → its input op; send_to → output stream or table; table →
        join_table; side-input stream → table.
        """
        import networkx as nx

        graph: nx.DiGraph = nx.DiGraph(app_name=self.app_name, job_id=self.job_id)
        for info in self.streams.values():
            graph.add_node(
                f"stream:{info.stream_id}",
                kind="stream",
                id=info.stream_id,
                stream_kind=info.kind,
                partitions=info.partitions,
                system=info.system_name,
                is_broadcast=info.is_broadcast,
            )
        for table_id in self.tables:
            graph.add_node(f"table:{table_id}", kind="table", id=table_id)
        for op_id, spec in self.operators.items():
            graph.add_node(
                op_id,
                kind="operator",
                id=op_id,
                opcode=spec.opcode.value,
                stage=self._stage_of[op_id],
            )
        for op_id, spec in self.operators.items():
            for nxt in spec.next_ops:
                graph.add_edge(op_id, nxt.op_id)
            if isinstance(spec, InputOperatorSpec):
                graph.add_edge(f"stream:{spec.stream_id}", op_id)
            elif isinstance(
                spec, PartitionByOperatorSpec | BroadcastOperatorSpec | OutputOperatorSpec
            ):
                graph.add_edge(op_id, f"stream:{spec.stream_id}")
                if spec.stream_id in self.intermediate_streams:
                    graph.nodes[f"stream:{spec.stream_id}"]["stage"] = self._stage_of[op_id]
            elif isinstance(spec, SendToTableOperatorSpec) and spec.table is not None:
                graph.add_edge(op_id, f"table:{spec.table.table_id}")
            elif isinstance(spec, StreamTableJoinOperatorSpec) and spec.table is not None:
                graph.add_edge(f"table:{spec.table.table_id}", op_id)
        for stream_id, table_ids in self.side_input_tables.items():
            for table_id in table_ids:
                graph.add_edge(f"stream:{stream_id}", f"table:{table_id}")
        return graph

    # -- serialisation ---------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description (no user functions; secrets in the config masked)."""
        return {
            "app_name": self.app_name,
            "job_id": self.job_id,
            "config": dict(sorted(self.config.masked().items())),
            "window_ms": self.window_ms,
            "streams": [_stream_dict(info, self._producers) for info in self.streams.values()],
            "tables": [_table_dict(table) for table in self.tables.values()],
            "stages": [
                {
                    "id": stage.id,
                    "operators": list(stage.operators),
                    "input_streams": list(stage.input_streams),
                    "output_streams": list(stage.output_streams),
                    "tables": list(stage.tables),
                }
                for stage in self.stages
            ],
            "operators": [
                _operator_dict(spec, self._stage_of[op_id])
                for op_id, spec in self.operators.items()
            ],
            "joins": {op_id: list(streams) for op_id, streams in self.join_streams.items()},
        }

    def to_json(self, *, indent: int | None = 2) -> str:
        """:meth:`to_dict` as JSON text."""
        return json.dumps(self.to_dict(), indent=indent)

    # -- display ---------------------------------------------------------------------------
    # A plan draws itself with the renderers plan/drawing.py registers (the plan package
    # does so on import): the value does not depend on its views.
    def __repr__(self) -> str:
        return _RENDERERS["text"](self)

    def _repr_svg_(self) -> str:
        return _RENDERERS["svg"](self)

    def _repr_html_(self) -> str:
        return _RENDERERS["html"](self)


#: How plans draw themselves: "text", "svg" and "html" renderers (see :func:`register_renderers`).
_RENDERERS: dict[str, Callable[[ExecutionPlan], str]] = {}


def register_renderers(**renderers: Callable[[ExecutionPlan], str]) -> None:
    """Set the functions that draw plans (``text=``, ``svg=``, ``html=``)."""
    _RENDERERS.update(renderers)


def _serde_name(serde: Any) -> str:
    return str(getattr(serde, "name", type(serde).__name__))


def _stream_dict(info: StreamInfo, producers: Mapping[str, frozenset[str]]) -> dict[str, Any]:
    result: dict[str, Any] = {
        "stream_id": info.stream_id,
        "kind": info.kind,
        "system": info.system_name,
        "partitions": info.partitions,
        "serde": _serde_name(info.serde),
        "is_broadcast": info.is_broadcast,
        "physical_name": info.physical_name,
    }
    if info.kind == "intermediate":
        result["producer_streams"] = sorted(producers.get(info.stream_id, ()))
    return result


def _table_dict(table: LocalTable) -> dict[str, Any]:
    return {
        "table_id": table.table_id,
        "key_serde": _serde_name(table.key_serde),
        "value_serde": _serde_name(table.value_serde),
        "side_inputs": [str(getattr(d, "stream_id", d)) for d in table.side_inputs],
    }


def trigger_dict(trigger: Trigger | None) -> dict[str, Any] | None:
    """A JSON-ready description of a trigger spec."""
    if trigger is None:
        return None
    if isinstance(trigger, CountTrigger):
        return {"type": "count", "count": trigger.count}
    if isinstance(trigger, TimeTrigger):
        return {"type": "time", "duration_ms": trigger.duration_ms}
    if isinstance(trigger, TimeSinceFirstMessageTrigger):
        return {"type": "time_since_first_message", "duration_ms": trigger.duration_ms}
    if isinstance(trigger, TimeSinceLastMessageTrigger):
        return {"type": "time_since_last_message", "duration_ms": trigger.duration_ms}
    if isinstance(trigger, AnyTrigger):
        return {"type": "any", "triggers": [trigger_dict(t) for t in trigger.triggers]}
    if isinstance(trigger, RepeatingTrigger):
        return {"type": "repeat", "trigger": trigger_dict(trigger.trigger)}
    return {"type": type(trigger).__name__}


def _operator_dict(spec: OperatorSpec, stage: int) -> dict[str, Any]:
    result: dict[str, Any] = {
        "op_id": spec.op_id,
        "opcode": spec.opcode.value,
        "stage": stage,
        "next": [nxt.op_id for nxt in spec.next_ops],
        "user_location": spec.user_location,
    }
    if isinstance(spec, InputOperatorSpec):
        result.update(stream_id=spec.stream_id, is_intermediate=spec.is_intermediate)
    elif isinstance(spec, OutputOperatorSpec | PartitionByOperatorSpec | BroadcastOperatorSpec):
        result.update(stream_id=spec.stream_id)
        if isinstance(spec, PartitionByOperatorSpec) and spec.combine_into is not None:
            # Partial aggregates for this window cross the shuffle (plan/combining.py).
            result["combines_for"] = spec.combine_into.op_id
    elif isinstance(spec, SendToTableOperatorSpec | StreamTableJoinOperatorSpec):
        result.update(table=spec.table.table_id if spec.table is not None else None)
    elif isinstance(spec, JoinOperatorSpec):
        result.update(
            left=spec.left.op_id if spec.left is not None else None,
            right=spec.right.op_id if spec.right is not None else None,
            ttl_ms=spec.ttl_ms,
        )
        if spec.keep_all:
            result["keep"] = "all"
    elif isinstance(spec, WindowOperatorSpec) and spec.window is not None:
        window = spec.window
        result["window"] = {
            "type": window.window_type.value,
            "keyed": window.key_fn is not None,
            "size_ms": window.size_ms,
            "aggregating": window.is_aggregating,
            "default_trigger": trigger_dict(window.default_trigger),
            "early_trigger": trigger_dict(window.early_trigger),
            "accumulation_mode": window.accumulation_mode.value,
            "merge": window.merge is not None,
        }
        if window.slide_ms is not None:
            result["window"]["slide_ms"] = window.slide_ms
    return result

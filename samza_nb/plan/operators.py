"""Operator specs: the nodes of an application's operator DAG (SAMZA.md §11.1–11.2).

The API (samza_nb.api) builds these; the planner reads them into an ExecutionPlan; the runtime
turns each spec into an operator implementation inside every task. Each spec knows its
downstream specs (``next_ops``, in registration order). User functions are plain callables;
Spark ships them to executors with its own closure serializer — they are never written to a
stream, store or metadata store.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from samza_nb.plan.serdes import KVSerde, Serde
from samza_nb.plan.tables import LocalTable
from samza_nb.plan.windows import WindowSpec

__all__ = [
    "BroadcastOperatorSpec",
    "FilterOperatorSpec",
    "FlatMapOperatorSpec",
    "InputOperatorSpec",
    "JoinOperatorSpec",
    "MapOperatorSpec",
    "MergeOperatorSpec",
    "OpCode",
    "OperatorSpec",
    "OutputOperatorSpec",
    "PartitionByOperatorSpec",
    "SendToTableOperatorSpec",
    "SinkOperatorSpec",
    "StreamSystemLike",
    "StreamTableJoinOperatorSpec",
    "WindowOperatorSpec",
    "declared_at",
]


class OpCode(StrEnum):
    """Samza's operator codes (lower-case names appear in op ids)."""

    INPUT = "input"
    MAP = "map"
    FLAT_MAP = "flat_map"
    FILTER = "filter"
    SINK = "sink"
    SEND_TO = "send_to"
    JOIN = "join"
    WINDOW = "window"
    MERGE = "merge"
    PARTITION_BY = "partition_by"
    BROADCAST = "broadcast"


class StreamSystemLike(Protocol):
    """What the planner needs of a stream system (samza_nb.systems implements it)."""

    @property
    def name(self) -> str: ...

    def partition_count(self, stream_id: str) -> int | None:
        """The stream's partition count, or None if the stream does not exist yet."""
        ...


@dataclass(eq=False)
class OperatorSpec:
    """Base of every operator spec. Identity-compared: two specs are never "equal"."""

    op_id: str
    opcode: OpCode
    next_ops: list[OperatorSpec] = field(default_factory=list, init=False, repr=False)
    # Where the user called the operator ("<cell 3>:4"), for error messages.
    user_location: str | None = field(default=None, init=False, repr=False)

    def register_next(self, spec: OperatorSpec) -> None:
        self.next_ops.append(spec)

    @property
    def short_id(self) -> str:
        """The op id without the ``{app}-{job_id}-`` prefix (for drawings)."""
        marker = f"-{self.opcode.value}-"
        index = self.op_id.rfind(marker)
        return self.op_id[index + 1 :] if index >= 0 else self.op_id



def declared_at(spec: OperatorSpec) -> str:
    """`` (at FILE:LINE)`` where the user declared ``spec``, for messages ("" when unknown)."""
    return f" (at {spec.user_location})" if spec.user_location else ""

@dataclass(eq=False)
class InputOperatorSpec(OperatorSpec):
    """Entry of the DAG for one input stream (a source or an intermediate stream)."""

    stream_id: str = ""
    system_name: str = ""
    serde: Serde | KVSerde | None = None
    is_intermediate: bool = False


@dataclass(eq=False)
class MapOperatorSpec(OperatorSpec):
    fn: Callable[[Any], Any] | None = None


@dataclass(eq=False)
class FlatMapOperatorSpec(OperatorSpec):
    fn: Callable[[Any], Any] | None = None


@dataclass(eq=False)
class FilterOperatorSpec(OperatorSpec):
    fn: Callable[[Any], bool] | None = None


@dataclass(eq=False)
class SinkOperatorSpec(OperatorSpec):
    fn: Callable[..., Any] | None = None


@dataclass(eq=False)
class MergeOperatorSpec(OperatorSpec):
    pass


@dataclass(eq=False)
class OutputOperatorSpec(OperatorSpec):
    """send_to(output stream): writes the message (a KV is split into key and value)."""

    stream_id: str = ""
    system_name: str = ""
    serde: Serde | KVSerde | None = None


@dataclass(eq=False)
class PartitionByOperatorSpec(OperatorSpec):
    """Re-keys messages and writes them to the intermediate stream named by ``stream_id``."""

    key_fn: Callable[[Any], Any] | None = None
    value_fn: Callable[[Any], Any] | None = None
    serde: KVSerde | None = None
    stream_id: str = ""
    #: The window this partition_by folds its messages for before the shuffle, sending
    #: partial aggregates (plan/combining.py); set by the planner, None when not combined.
    combine_into: WindowOperatorSpec | None = None


@dataclass(eq=False)
class BroadcastOperatorSpec(OperatorSpec):
    """Writes every message to the one-partition intermediate stream ``stream_id``."""

    serde: Serde | KVSerde | None = None
    stream_id: str = ""


@dataclass(eq=False)
class WindowOperatorSpec(OperatorSpec):
    window: WindowSpec | None = None


@dataclass(eq=False)
class JoinOperatorSpec(OperatorSpec):
    """Stream-stream join. Registered as the next op of both ``left`` and ``right``; the runtime
    tells the sides apart by which upstream spec delivers a message."""

    left: OperatorSpec | None = None
    right: OperatorSpec | None = None
    join_fn: Callable[[Any, Any], Any] | None = None
    left_key_fn: Callable[[Any], Any] | None = None
    right_key_fn: Callable[[Any], Any] | None = None
    ttl_ms: int = 0
    #: Keep every message per key and side within the TTL (``join(keep="all")``), not only
    #: the latest.
    keep_all: bool = False


@dataclass(eq=False)
class StreamTableJoinOperatorSpec(OperatorSpec):
    """join_table: ``join_fn(message, KV(key, value) or None)``; a None result is dropped."""

    table: LocalTable | None = None
    join_fn: Callable[[Any, Any], Any] | None = None
    key_fn: Callable[[Any], Any] | None = None


@dataclass(eq=False)
class SendToTableOperatorSpec(OperatorSpec):
    """send_to(table): puts KV messages into the table."""

    table: LocalTable | None = None

"""Combining before a shuffle: a partition_by whose only reader is an aggregating window with
``merge=`` sends partial aggregates instead of every message.

A task folds the messages it shuffles per (partition key, window key) within its epoch, as the
window would, starting from the window's ``initial()``, and appends one record per group to
the intermediate stream: the group's first value, its aggregate and how many messages it
folded. The window merges that aggregate into its pane with ``merge(pane_aggregate,
partial_aggregate)`` and counts the group's messages. This is Spark's map-side combine
(``reduceByKey``), Beam's combiner lifting and Flink's local-global aggregation; the shuffle
stays durable and checkpointed, it only carries fewer records.

What the user promises with ``merge=``: merging two aggregates gives what folding the second
one's messages after the first's would, and ``merge(initial(), a) == a``; and the aggregate
does not depend on the order of the messages (a partial aggregate holds one key's messages of
one task epoch, so a window collecting several partition keys folds them in another order).
Counts, sums, minima and maxima do; a list of messages in arrival order does not.

What differs from the same job without ``merge=``, beyond fewer shuffled records:
- a pane's processing time is the epoch's in which a partial aggregate arrives. Partial
  aggregates are few, so when the shuffle has a backlog (more than ``task.max.epoch.messages``
  waiting) they reach the window sooner than the messages would have, and a processing-time
  window may put them in an earlier pane; the totals are the same;
- views of the stream (``job.show``, the stream's latest messages) show the partial
  aggregates, and the stream's message counts are records, not messages;
- the partial aggregates hold what the window's ``fold`` computed when they were written:
  changing ``fold`` does not recompute what is already shuffled.

A partial aggregate is a record of its own kind on the stream: its value starts with a NUL
byte, which no JSON text does, so a stream written before ``merge=`` was given (plain
messages) still reads, and a message the combiner cannot group (a key that is not a str or an
int) goes as a plain message among partial aggregates. Only JSON values, with JSON or string
keys, are combined. A job
changed so that its window no longer combines fails on a partial aggregate left in its stream
with an error that says so (and ``task.errors.skip`` counts all its messages as skipped).

Where a window is combined (:func:`combined_window`): a processing-time tumbling window
(keyed or not) with ``initial=``, ``fold=`` and ``merge=``, no early trigger, reading the
intermediate stream of exactly one partition_by and nothing else, and that stream read by
nothing else; ``job.shuffle.combine.enabled=false`` turns it off. Its panes fire as they would
(the window's end on the timer, end of stream, drain).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from samza_nb.errors import SerdeError
from samza_nb.plan.execution_plan import StreamInfo
from samza_nb.plan.kv import from_storable, to_storable
from samza_nb.plan.operators import (
    InputOperatorSpec,
    OperatorSpec,
    PartitionByOperatorSpec,
    WindowOperatorSpec,
)
from samza_nb.plan.serdes import JsonSerde, KVSerde, StringSerde
from samza_nb.plan.windows import TimeTrigger, WindowType

__all__ = [
    "CombinedValueSerde",
    "PartialAggregate",
    "combine_shuffles",
    "combined_window",
    "partial_aggregate_error",
    "partial_message_count",
]

_MARK = b"\x00"
_pack = msgspec.msgpack.Encoder().encode
_unpack = msgspec.msgpack.Decoder().decode


class PartialAggregate:
    """What a combined shuffle carries for one (partition key, window key) group of a task
    epoch: the group's first value (``sample``; the window computes its key from
    ``KV(key, sample)``), the group's aggregate and how many messages it folded."""

    __slots__ = ("aggregate", "count", "sample")

    def __init__(self, sample: Any, aggregate: Any, count: int) -> None:
        self.sample = sample
        self.aggregate = aggregate
        self.count = count

    def __repr__(self) -> str:
        return (
            f"PartialAggregate(count={self.count}, aggregate={self.aggregate!r:.60}, "
            f"first={self.sample!r:.60})"
        )

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, PartialAggregate)
            and (self.sample, self.aggregate, self.count)
            == (other.sample, other.aggregate, other.count)
        )

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True)
class CombinedValueSerde:
    """The value serde of a combined shuffle: plain values as ``inner`` (JSON) writes them,
    partial aggregates as a NUL byte and a msgpack array (sample bytes, aggregate, count)."""

    inner: JsonSerde

    @property
    def name(self) -> str:
        return f"{self.inner.name} + partial aggregates"

    def to_bytes(self, value: Any) -> bytes:
        if isinstance(value, PartialAggregate):
            return self.partial_bytes(self.inner.to_bytes(value.sample), value.aggregate, value.count)
        return self.inner.to_bytes(value)

    @staticmethod
    def partial_bytes(sample: bytes, aggregate: Any, count: int) -> bytes:
        """A partial aggregate's record value (its sample already encoded by the inner serde);
        raises SerdeError when the aggregate is not a value a store holds."""
        try:
            return _MARK + _pack((sample, to_storable(aggregate), count))
        except (TypeError, ValueError, OverflowError) as error:
            msg = (
                f"a partial aggregate ({type(aggregate).__name__} {aggregate!r:.80}) cannot be "
                f"written to the shuffle: {error}; initial= and fold= must return None, bool, "
                "int, float, str, bytes, lists, dicts or KVs of them"
            )
            raise SerdeError(msg) from error

    def from_bytes(self, data: bytes) -> Any:
        if data[:1] != _MARK:
            return self.inner.from_bytes(data)
        try:
            sample, aggregate, count = _unpack(memoryview(data)[1:])
        except (msgspec.DecodeError, TypeError, ValueError) as error:
            msg = f"a partial aggregate does not decode: {bytes(data)[:60]!r}: {error}"
            raise SerdeError(msg) from error
        return PartialAggregate(self.inner.from_bytes(sample), from_storable(aggregate), count)


def partial_message_count(data: bytes | None) -> int:
    """How many messages a stored value stands for: a partial aggregate's count, else 1."""
    if data is None or data[:1] != _MARK:
        return 1
    try:
        return int(_unpack(memoryview(data)[1:])[2])
    except (msgspec.DecodeError, TypeError, ValueError, IndexError):
        return 1


def partial_aggregate_error(data: bytes) -> SerdeError | None:
    """The error for a partial aggregate read where plain JSON messages are expected (the
    job changed so that its window no longer combines), or None for any other bytes."""
    if data[:1] != _MARK:
        return None
    msg = (
        f"a partial aggregate of {partial_message_count(data)} messages, written by a partition_by "
        "that combined them for a window with merge=, where plain JSON messages are expected: "
        "the job changed so its window no longer combines (merge= removed, an early trigger or "
        "another reader added, job.shuffle.combine.enabled=false); run the job as it was until "
        "the stream is read, or reset the job"
    )
    return SerdeError(msg)


def combine_shuffles(
    shuffles: Mapping[str, OperatorSpec],
    input_ops: Mapping[str, InputOperatorSpec],
    streams: dict[str, StreamInfo],
) -> None:
    """Mark every partition_by whose messages can be combined for its window (the planner's
    copies of the specs) and give its stream the value serde of partial aggregates."""
    for stream_id, shuffle in shuffles.items():
        if not isinstance(shuffle, PartitionByOperatorSpec):
            continue
        window_op = combined_window(shuffle, input_ops, shuffles)
        serde = shuffle.serde
        if window_op is None or not isinstance(serde, KVSerde):
            continue
        shuffle.combine_into = window_op
        combined = KVSerde(serde.key_serde, CombinedValueSerde(serde.value_serde))  # type: ignore[arg-type]
        streams[stream_id] = dataclasses.replace(streams[stream_id], serde=combined)


def combined_window(
    shuffle: PartitionByOperatorSpec,
    input_ops: Mapping[str, InputOperatorSpec],
    shuffles: Mapping[str, OperatorSpec],
) -> WindowOperatorSpec | None:
    """The window ``shuffle``'s messages can be combined for, or None (module docstring)."""
    serde = shuffle.serde
    if (
        not isinstance(serde, KVSerde)
        or type(serde.value_serde) is not JsonSerde
        # Keys a JSON or string serde reads back as they were: the window's functions run
        # upstream on the key itself.
        or type(serde.key_serde) not in (JsonSerde, StringSerde)
    ):
        return None
    reader = input_ops.get(shuffle.stream_id)
    if reader is None or shuffles.get(shuffle.stream_id) is not shuffle or len(reader.next_ops) != 1:
        return None
    window_op = reader.next_ops[0]
    if not isinstance(window_op, WindowOperatorSpec) or window_op.window is None:
        return None
    if _upstream_count(window_op, input_ops) != 1:
        return None
    window = window_op.window
    combinable = (
        window.merge is not None
        and window.fold is not None
        and window.initial is not None
        and window.window_type is WindowType.TUMBLING
        and window.event_time is None
        and window.early_trigger is None
        and isinstance(window.default_trigger, TimeTrigger)
    )
    return window_op if combinable else None


def _upstream_count(target: OperatorSpec, input_ops: Mapping[str, InputOperatorSpec]) -> int:
    """How many operators hand their messages to ``target``."""
    seen: set[int] = set()
    count = 0
    pending: list[OperatorSpec] = list(input_ops.values())
    while pending:
        spec = pending.pop()
        if id(spec) in seen:
            continue
        seen.add(id(spec))
        for following in spec.next_ops:
            if following is target:
                count += 1
            pending.append(following)
    return count


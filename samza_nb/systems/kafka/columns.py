"""Consumed Kafka messages handed over by columns, as the embedded log hands over its batches.

A read of an input topic (records written by plain producers: no headers) gets the messages'
keys and values as lists, each taken by one ``map`` over the messages, instead of one record
tuple per message: the task's fast path decodes the values column in one pass
(runtime/task/decoding.py). The timestamps are read from the messages only when a reader asks
for them (a task does not: event time comes from the message itself), since confluent-kafka
builds a tuple for each (about 90 ns a message, as much as the other four fields together).
A read that meets a header (a control message, an idempotent append) goes record by record
(systems/kafka/system.py), which admits or drops each one.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, overload

from samza_nb.systems.batch_format import StoredBatch

__all__ = ["plain_batches"]


def plain_batches(messages: Sequence[Any]) -> list[tuple[int, StoredBatch]] | None:
    """``(first offset, batch)`` per run of consecutive offsets of ``messages`` (consumed
    messages of one partition, in offset order), or None when any message has headers."""
    if not messages:
        return None
    kind: Any = type(messages[0])  # confluent_kafka.Message: its methods, unbound
    headers = list(map(kind.headers, messages))
    if headers.count(None) != len(headers):
        return None
    offsets = list(map(kind.offset, messages))
    starts = [0]
    if offsets[-1] - offsets[0] != len(offsets) - 1:  # gaps: transaction markers, compaction
        starts += [i for i in range(1, len(offsets)) if offsets[i] != offsets[i - 1] + 1]
    starts.append(len(messages))
    return [
        (offsets[start], _columns(messages[start:end], kind))
        for start, end in zip(starts, starts[1:], strict=False)
    ]


def _columns(messages: Sequence[Any], kind: Any) -> StoredBatch:
    return StoredBatch(
        bytes(len(messages)),  # every one a user message (kind 0)
        list(map(kind.key, messages)),
        list(map(kind.value, messages)),
        ConsumedTimestamps(messages),  # type: ignore[arg-type]  # a sequence read when asked
    )


class ConsumedTimestamps(Sequence[int | None]):
    """The timestamps of consumed messages (None where the broker gave none), read from the
    messages as they are asked for."""

    __slots__ = ("_messages",)

    def __init__(self, messages: Sequence[Any]) -> None:
        self._messages = messages

    def __len__(self) -> int:
        return len(self._messages)

    @overload
    def __getitem__(self, index: int) -> int | None: ...

    @overload
    def __getitem__(self, index: slice) -> ConsumedTimestamps: ...

    def __getitem__(self, index: int | slice) -> int | None | ConsumedTimestamps:
        if isinstance(index, slice):
            return ConsumedTimestamps(self._messages[index])
        stamp_type, stamp = self._messages[index].timestamp()
        return stamp if stamp_type else None

    def __iter__(self) -> Iterator[int | None]:
        stamps = map(type(self._messages[0]).timestamp, self._messages) if self._messages else ()
        return iter([stamp if stamp_type else None for stamp_type, stamp in stamps])

"""Consumed Kafka messages handed over by columns, as the embedded log hands over its batches.

A read of an input topic (records written by plain producers: no headers) gets the messages'
keys, values and timestamps as lists, each taken by one ``map`` over the messages, instead of
one record tuple per message: the task's fast path decodes the values column in one pass
(runtime/task/decoding.py). A read that meets a header (a control message, an idempotent
append) goes record by record (systems/kafka/system.py), which admits or drops each one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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
    stamps = list(map(kind.timestamp, messages))
    return StoredBatch(
        bytes(len(messages)),  # every one a user message (kind 0)
        list(map(kind.key, messages)),
        list(map(kind.value, messages)),
        [stamp if stamp_type else None for stamp_type, stamp in stamps],
    )

"""What a user's ``write`` of plain values to a stream becomes: placed, encoded records.

Both systems place values alike (DESIGN.md, "Partitioning"): ``partition`` if given, else
Kafka's murmur2 of the serialized key when a ``key_fn`` is given or the value is a ``KV``
(a None key goes to partition 0), else round robin; values and keys are JSON unless a serde
says otherwise. A ``KV`` is a keyed message: its key is the message's key (``key_fn``, if
given, is called with the KV instead) and its value the message.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import msgspec

from samza_nb.errors import SerdeError, StreamSystemError
from samza_nb.model.keys import check_written_key
from samza_nb.model.kv import KV
from samza_nb.systems.base import MessageKind, Record
from samza_nb.systems.partitioning import partition_for_key

__all__ = ["placed_records"]

_json_encode = msgspec.json.Encoder().encode


def _checked_timestamps(stream_id: str, timestamps: Iterable[Any] | None, count: int) -> list[int] | None:
    """One int (epoch milliseconds) per value, or None."""
    if timestamps is None:
        return None
    stamps = list(timestamps)
    if len(stamps) != count:
        msg = f"write to stream {stream_id!r}: {count} values but {len(stamps)} timestamps"
        raise StreamSystemError(msg)
    for index, stamp in enumerate(stamps):
        if not isinstance(stamp, int) or isinstance(stamp, bool):
            msg = (
                f"write to stream {stream_id!r}: timestamp {index} is {stamp!r}; timestamps are "
                f"ints (milliseconds since the epoch)"
            )
            raise StreamSystemError(msg)
    return stamps


def placed_records(
    stream_id: str,
    values: Iterable[Any],
    *,
    partitions: int,
    rotation: itertools.count[int],
    key_fn: Callable[[Any], Any] | None = None,
    partition: int | None = None,
    timestamps: Iterable[int] | None = None,
    serde: Any = None,
    key_serde: Any = None,
) -> list[tuple[int, Record]]:
    """(partition, record) for every value, in order; ``rotation`` is the stream's round-robin
    counter (kept by the system across writes)."""
    if partition is not None and not 0 <= partition < partitions:
        msg = f"stream {stream_id!r} has partitions 0..{partitions - 1}, not {partition}"
        raise StreamSystemError(msg)
    if isinstance(values, (str, bytes, bytearray, Mapping)) or not isinstance(values, Iterable):
        msg = (
            f"write to stream {stream_id!r} takes an iterable of messages, got "
            f"{type(values).__name__} {values!r:.60}; to write one message, pass [message]"
        )
        raise StreamSystemError(msg)
    for given, option in ((serde, "serde"), (key_serde, "key_serde")):
        if given is not None and not callable(getattr(given, "to_bytes", None)):
            msg = (
                f"write to stream {stream_id!r}: {option}= takes a serde of values (an object "
                f"with to_bytes), got {given!r:.80}; for a KV serde pass its value serde as "
                f"serde= and its key serde as key_serde="
            )
            raise StreamSystemError(msg)
    encode_value = serde.to_bytes if serde is not None else _json_encode
    encode_key = key_serde.to_bytes if key_serde is not None else _json_encode
    values = list(values)
    stamps = _checked_timestamps(stream_id, timestamps, len(values))
    placed = []
    for index, value in enumerate(values):
        keyed = isinstance(value, KV)  # a keyed message: its key and its value
        try:
            key = key_fn(value) if key_fn is not None else value.key if keyed else None
        except Exception as error:
            msg = f"key_fn failed on value {index} written to stream {stream_id!r} ({value!r:.80}): {error!r}"
            raise StreamSystemError(msg) from error
        if key_serde is None:  # JSON: a key without stable bytes would split or merge keys
            check_written_key(key, f"write to stream {stream_id!r}: value {index}")
        try:
            key_bytes = encode_key(key) if key is not None else None
            value_bytes = encode_value(value.value if keyed else value)
        except Exception as error:
            msg = f"write to stream {stream_id!r}: value {index} ({value!r:.80}) cannot be encoded: {error}"
            raise SerdeError(msg) from error
        if partition is not None:
            target = partition
        elif key_fn is not None or keyed:
            target = partition_for_key(key_bytes, partitions)
        else:
            target = next(rotation) % partitions
        stamp = stamps[index] if stamps is not None else None
        placed.append((target, Record(MessageKind.USER, key_bytes, value_bytes, stamp)))
    return placed

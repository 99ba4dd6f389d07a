"""A store's changelog records: how a task store's updates travel in its changelog and come back.

A put is the key with ``b"\\x01"`` + the value; a delete (a tombstone) is the key with
``b"\\x00"`` and the time it was written, so compaction can drop it after a retention
(runtime/processor/compaction.py). A restore applies a fetched chunk to one RocksDB write
batch, stopping before the records of epochs it must not apply (``held_back``,
runtime/task/stores.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from samza_nb.systems.base import MessageKind, Record

__all__ = ["apply_changelog", "changelog_records", "is_tombstone"]

_PUT = b"\x01"
_DELETE = b"\x00"


def is_tombstone(value: bytes) -> bool:
    """Whether a changelog value deletes its key (what compaction may drop after retention)."""
    return value[:1] == _DELETE


def changelog_records(updates: Mapping[bytes, bytes | None], now_ms: int) -> list[Record]:
    """The changelog records of an epoch's updates (None: the key was deleted at ``now_ms``)."""
    return [
        Record(MessageKind.USER, key, _PUT + value, None)
        if value is not None
        else Record(MessageKind.USER, key, _DELETE, now_ms)
        for key, value in updates.items()
    ]


def apply_changelog(
    batch: Any, batches: Sequence[tuple[int, Sequence[Record]]], held_back: int | None
) -> tuple[int, int]:
    """Put or delete each record of ``batches`` (``(first offset, records)``) in the RocksDB
    write ``batch``, stopping at offset ``held_back``; returns (records applied, their bytes)."""
    applied = applied_bytes = 0
    for first, records in batches:
        if held_back is not None and first >= held_back:
            break
        if held_back is not None and first + len(records) > held_back:
            records = records[: held_back - first]
        for _kind, key, value, _ts in records:
            if key is None:
                continue
            if value[:1] == _PUT:
                batch.put(key, value[1:])
            else:
                batch.delete(key)
            applied += 1
            applied_bytes += len(key) + len(value)
    return applied, applied_bytes

"""Log compaction of the embedded log: the latest record per key, offsets unchanged.

A compacted changelog costs a full restore its live state, not its history (the hot standby
SEP). Compaction rewrites the batches of a partition's prefix ``[oldest, upto)`` — only what is
committed — into rows that keep, per key, the record with the highest offset; unkeyed records
are kept as they are. A tombstone (a delete) is kept while it is younger than the retention and
dropped after it: a reader that stopped below a dropped tombstone must start over, so the log
remembers the offset below which tombstones are gone.

Offsets stay stable: a compacted row still spans its whole range of offsets and lists the
offset of each record it kept; readers skip the holes (:func:`compacted_runs`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import msgspec

__all__ = ["CompactionResult", "compact_records", "compacted_runs", "compacted_rows"]

RawRecord = tuple[int, bytes | None, bytes, int | None]
#: Records per compacted row (one SQLite row is read whole).
ROW_RECORDS = 20_000

_encode_offsets = msgspec.msgpack.Encoder().encode
decode_offsets = msgspec.msgpack.Decoder(list[int]).decode


def encode_offsets(offsets: list[int]) -> bytes:
    return _encode_offsets(offsets)


@dataclass(frozen=True)
class CompactionResult:
    """One compaction of one partition: how many records it read and kept, and where."""

    stream: str
    partition: int
    upto: int
    records_before: int
    records_after: int
    tombstones_dropped: int
    seconds: float


def compacted_runs(
    offsets: list[int], records: Sequence[RawRecord], start: int, end: int
) -> list[tuple[int, list[RawRecord]]]:
    """The records of a compacted row with offsets in ``[start, end)``, as runs of
    consecutive offsets ((first offset, records) each, as every reader expects batches).

    >>> compacted_runs([2, 3, 7], [(0, b"a", b"1", None), (0, b"b", b"2", None), (0, b"a", b"3", None)], 0, 10)
    [(2, [(0, b'a', b'1', None), (0, b'b', b'2', None)]), (7, [(0, b'a', b'3', None)])]
    """
    runs: list[tuple[int, list[RawRecord]]] = []
    previous = -2
    for offset, record in zip(offsets, records, strict=True):
        if offset < start or offset >= end:
            continue
        if offset == previous + 1:
            runs[-1][1].append(record)
        else:
            runs.append((offset, [record]))
        previous = offset
    return runs


def compact_records(
    entries: Iterable[tuple[int, RawRecord]],
    *,
    is_tombstone: Callable[[bytes], bool] | None,
    drop_tombstones_before_ms: int | None,
) -> tuple[list[tuple[int, RawRecord]], int, int]:
    """(kept (offset, record) in offset order, tombstones dropped, offset below which
    tombstones were dropped). A tombstone is dropped when ``drop_tombstones_before_ms`` is
    given and its timestamp is older (tombstones without a timestamp are kept)."""
    latest: dict[bytes, tuple[int, RawRecord]] = {}
    unkeyed: list[tuple[int, RawRecord]] = []
    for offset, record in entries:
        key = record[1]
        if key is None:
            unkeyed.append((offset, record))
        else:
            latest[key] = (offset, record)
    kept = unkeyed
    dropped = 0
    horizon = 0
    for offset, record in latest.values():
        if (
            is_tombstone is not None
            and drop_tombstones_before_ms is not None
            and is_tombstone(record[2])
            and record[3] is not None
            and record[3] < drop_tombstones_before_ms
        ):
            dropped += 1
            horizon = max(horizon, offset + 1)
            continue
        kept.append((offset, record))
    kept.sort(key=lambda entry: entry[0])
    return kept, dropped, horizon


def compacted_rows(
    kept: list[tuple[int, RawRecord]], start: int, stop: int, per_row: int = ROW_RECORDS
) -> list[tuple[int, int, list[int], list[RawRecord]]]:
    """Rows (first offset, span, offsets, records) that together span ``[start, stop)``
    without a gap, each holding at most ``per_row`` kept records (one empty row when nothing
    is kept), so a read of any offset range in it finds the rows covering it."""
    if not kept:
        return [(start, stop - start, [], [])]
    rows = []
    for index in range(0, len(kept), per_row):
        chunk = kept[index : index + per_row]
        first = start if index == 0 else chunk[0][0]
        following = index + per_row
        last = stop if following >= len(kept) else kept[following][0]
        rows.append((first, last - first, [o for o, _ in chunk], [r for _, r in chunk]))
    return rows

"""Appending stored batches to the embedded log's tables, inside the caller's transaction.

A batch takes the next offsets of its partition, and a batch its producer already appended at
the same sequence number (a retried task epoch) is skipped, as is one of a producer retired at
or above it (systems/embedded/retention.py). A task epoch appends a batch to every partition
its shuffle reached, so with 64 partitions an epoch of 64 tasks appends 4,096 of them:
:func:`insert_batches` appends a task epoch's batches with three queries per stream (per 500
of its partitions) and one statement per table, where one batch at a time took five
statements each.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence

from samza_nb.systems.embedded.retention import producer_name

__all__ = ["EncodedBatch", "insert_batch", "insert_batches"]

#: (stream, partition, stored payload, records, indexes of its control messages).
EncodedBatch = tuple[str, int, bytes, int, Sequence[int]]
#: The error for a partition the stream does not have (raised by the caller's system).
MissingPartition = Callable[[str, int], Exception]

#: Partitions per ``IN (...)`` list (SQLite allows 32,766 variables a statement).
_IN_CHUNK = 500

_INSERT_BATCH = (
    "INSERT INTO batches (stream, partition, first_offset, count, payload, producer, producer_seq) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_MOVE_NEXT_OFFSET = "UPDATE partitions SET next_offset = ? WHERE stream = ? AND partition = ?"
_INSERT_CONTROL = "INSERT OR IGNORE INTO control_offsets (stream, partition, offset) VALUES (?, ?, ?)"


def insert_batch(
    db: sqlite3.Connection,
    batch: EncodedBatch,
    producer: str | None,
    producer_seq: int | None,
    missing: MissingPartition,
) -> bool:
    """One batch; False when it is a producer's repeat."""
    return insert_batches(db, [batch], producer, producer_seq, missing) == 1


def insert_batches(
    db: sqlite3.Connection,
    batches: Sequence[EncodedBatch],
    producer: str | None,
    producer_seq: int | None,
    missing: MissingPartition,
) -> int:
    """``batches``, in order; how many were appended. With a producer, a batch it already
    appended at ``producer_seq`` is skipped (a second batch to the same partition in the call
    is the first one's repeat), as is one of a producer retired at or above it. Nothing is
    written when a partition does not exist."""
    partitions: dict[str, set[int]] = {}
    for stream_id, partition, _payload, _count, _controls in batches:
        partitions.setdefault(stream_id, set()).add(partition)
    next_offsets: dict[tuple[str, int], int] = {}
    repeats: set[tuple[str, int]] = set()
    for stream_id, wanted in partitions.items():
        ordered = sorted(wanted)
        for start in range(0, len(ordered), _IN_CHUNK):
            chunk = ordered[start : start + _IN_CHUNK]
            among = f"stream = ? AND partition IN ({','.join('?' * len(chunk))})"
            rows = db.execute(f"SELECT partition, next_offset FROM partitions WHERE {among}", (stream_id, *chunk))  # noqa: S608
            next_offsets.update(((stream_id, int(partition)), int(offset)) for partition, offset in rows)
            if producer is None:
                continue
            repeated = db.execute(
                f"SELECT partition FROM batches WHERE {among} AND producer = ? AND producer_seq = ?",  # noqa: S608
                (stream_id, *chunk, producer, producer_seq),
            )
            repeats.update((stream_id, int(partition)) for (partition,) in repeated)
            # The batch may be gone: a processor killed after appending an epoch's
            # intermediate batches leaves its plan pending; before its tasks fail over,
            # their consumers read those batches, commit, and retention deletes them. The
            # new owner replays the plan, and without this refusal the repeat would be
            # read again, counted twice (test_zookeeper_processes.py, crashed epoch).
            retired = db.execute(
                f"SELECT partition, max_seq FROM retired_producers WHERE {among} AND name = ?",  # noqa: S608
                (stream_id, *chunk, producer_name(producer)),
            )
            repeats.update(
                (stream_id, int(partition))
                for partition, max_seq in retired
                if producer_seq is not None and producer_seq <= max_seq
            )
        for partition in ordered:
            if (stream_id, partition) not in next_offsets:
                raise missing(stream_id, partition)
    appended: list[tuple[str, int, int, int, bytes, str | None, int | None]] = []
    controls_at: list[tuple[str, int, int]] = []
    for stream_id, partition, payload, count, controls in batches:
        where = (stream_id, partition)
        if where in repeats:
            continue
        if producer is not None:
            repeats.add(where)
        first = next_offsets[where]
        next_offsets[where] = first + count
        appended.append((stream_id, partition, first, count, payload, producer, producer_seq))
        controls_at.extend((stream_id, partition, first + index) for index in controls)
    db.executemany(_INSERT_BATCH, appended)
    db.executemany(_MOVE_NEXT_OFFSET, [(next_offsets[(s, p)], s, p) for s, p, *_rest in appended])
    if controls_at:
        db.executemany(_INSERT_CONTROL, controls_at)
    return len(appended)

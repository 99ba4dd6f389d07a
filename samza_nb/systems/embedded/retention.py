"""Retention and compaction of the embedded log: deleting committed batches (remembering, per
producer, the highest sequence number deleted so a late or replayed epoch cannot append again)
and compacting a committed prefix to the latest record per key (systems/compaction.py)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence

from samza_nb.systems.batch_format import decode_batch, encode_batch
from samza_nb.systems.compaction import (
    CompactionResult,
    compact_records,
    compacted_rows,
    decode_offsets,
    encode_offsets,
)
from samza_nb.systems.embedded.sqlite import transaction

__all__ = ["EmbeddedRetention", "producer_name"]


def producer_name(producer: str) -> str:
    """The producer up to its last ``@`` (the runtime's ``<job>/<task>@<epoch plan>``)."""
    return producer.rpartition("@")[0] or producer


#: Whether a partition holds a batch or a control message's offset below an offset.
_ANYTHING_BELOW = (
    "SELECT EXISTS (SELECT 1 FROM batches WHERE stream = ?1 AND partition = ?2 AND first_offset + count <= ?3) "
    "OR EXISTS (SELECT 1 FROM control_offsets WHERE stream = ?1 AND partition = ?2 AND offset < ?3)"
)


class EmbeddedRetention:
    """Retention and compaction of the log that ``db()`` opens (this process's connection)."""

    def __init__(self, db: Callable[[], sqlite3.Connection]) -> None:
        self._db = db

    def delete_before(self, stream_id: str, partition: int, offset: int) -> int:
        return self.delete_before_all([(stream_id, partition, offset)])

    def delete_before_all(self, deletions: Sequence[tuple[str, int, int]]) -> int:
        """:meth:`delete_before` for each (stream, partition, offset), in one write
        transaction (each is one the tasks' appends wait for: with 64 partitions, the
        commits of one per partition held the log's lock for tens of milliseconds a pass)."""
        db = self._db()
        # Nothing to delete: no write transaction.
        wanted = [d for d in deletions if db.execute(_ANYTHING_BELOW, d).fetchone()[0]]
        if not wanted:
            return 0
        deleted = 0
        with transaction(db):
            for stream_id, partition, offset in wanted:
                deleted += _delete_below(db, stream_id, partition, offset)
        return deleted

    # -- compaction (systems/compaction.py) ---------------------------------------------------
    def compact(
        self,
        stream_id: str,
        partition: int,
        upto: int,
        *,
        is_tombstone: Callable[[bytes], bool] | None = None,
        tombstone_retention_ms: int | None = None,
    ) -> CompactionResult | None:
        """Keep the latest record per key among the whole batches below ``upto`` (give only
        committed offsets); tombstones older than the retention are dropped. Reading and
        deciding run outside any transaction; only the rewrite holds the log's write lock.
        None when there was nothing to compact or the prefix changed meanwhile."""
        started = time.perf_counter()
        db = self._db()
        rows = db.execute(
            "SELECT first_offset, count, payload, offsets FROM batches WHERE stream = ? "
            "AND partition = ? AND first_offset + count <= ? ORDER BY first_offset",
            (stream_id, partition, upto),
        ).fetchall()
        if not rows:
            return None
        start = int(rows[0][0])
        stop = int(rows[-1][0]) + int(rows[-1][1])

        def entries() -> Iterable[tuple[int, tuple[int, bytes | None, bytes, int | None]]]:
            for first, _count, payload, offsets in rows:
                records = decode_batch(payload)
                numbers = decode_offsets(offsets) if offsets is not None else range(first, first + len(records))
                yield from zip(numbers, records, strict=True)

        before = sum(
            len(decode_offsets(offsets)) if offsets is not None else int(count)
            for _first, count, _payload, offsets in rows
        )
        drop_before = (
            None
            if tombstone_retention_ms is None
            else int(time.time() * 1000) - int(tombstone_retention_ms)
        )
        kept, dropped, horizon = compact_records(
            entries(), is_tombstone=is_tombstone, drop_tombstones_before_ms=drop_before
        )
        new_rows = compacted_rows(kept, start, stop)
        with transaction(db):
            check = db.execute(
                "SELECT COUNT(*), MIN(first_offset), MAX(first_offset + count) FROM batches "
                "WHERE stream = ? AND partition = ? AND first_offset + count <= ?",
                (stream_id, partition, stop),
            ).fetchone()
            if tuple(check) != (len(rows), start, stop):
                return None  # retention or another compaction changed the prefix meanwhile
            # The rewritten rows carry no producer: without this, a processor that froze before
            # its changelog append and resumed after its task's new owner committed that epoch
            # would append it again at the tail, rolling the task's state back.
            _retire_producers(db, stream_id, partition, stop)
            db.execute(
                "DELETE FROM batches WHERE stream = ? AND partition = ? AND first_offset + count <= ?",
                (stream_id, partition, stop),
            )
            db.executemany(
                "INSERT INTO batches (stream, partition, first_offset, count, payload, offsets) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (stream_id, partition, first, span, encode_batch(records), encode_offsets(offsets))
                    for first, span, offsets, records in new_rows
                ],
            )
            db.execute(
                "INSERT INTO compaction (stream, partition, compacted_below, live, tombstones_below) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (stream, partition) DO UPDATE SET "
                "compacted_below = excluded.compacted_below, live = excluded.live, "
                "tombstones_below = MAX(tombstones_below, excluded.tombstones_below)",
                (stream_id, partition, stop, len(kept), horizon),
            )
        return CompactionResult(
            stream_id, partition, stop, before, len(kept), dropped, time.perf_counter() - started
        )

    def compaction_state(self, stream_id: str, partition: int) -> tuple[int, int]:
        """(offset the last compaction reached, records it kept); (0, 0) before any."""
        row = self._db().execute(
            "SELECT compacted_below, live FROM compaction WHERE stream = ? AND partition = ?",
            (stream_id, partition),
        ).fetchone()
        return (0, 0) if row is None else (int(row[0]), int(row[1]))

    def tombstones_dropped_below(self, stream_id: str, partition: int) -> int:
        row = self._db().execute(
            "SELECT tombstones_below FROM compaction WHERE stream = ? AND partition = ?",
            (stream_id, partition),
        ).fetchone()
        return 0 if row is None else int(row[0])


def _delete_below(db: sqlite3.Connection, stream_id: str, partition: int, offset: int) -> int:
    """Delete the batches of a partition below ``offset`` (inside the caller's transaction),
    remembering the highest producer sequence deleted (a late repeat is refused)."""
    row = db.execute(
        "SELECT COALESCE(SUM(count), 0) FROM batches WHERE stream = ? AND partition = ? "
        "AND first_offset + count <= ?",
        (stream_id, partition, offset),
    ).fetchone()
    _retire_producers(db, stream_id, partition, offset)
    db.execute(
        "DELETE FROM batches WHERE stream = ? AND partition = ? AND first_offset + count <= ?",
        (stream_id, partition, offset),
    )
    db.execute(
        "DELETE FROM control_offsets WHERE stream = ? AND partition = ? AND offset < ?",
        (stream_id, partition, offset),
    )
    oldest = db.execute(
        "SELECT MIN(first_offset) FROM batches WHERE stream = ? AND partition = ?",
        (stream_id, partition),
    ).fetchone()[0]
    db.execute(
        "UPDATE partitions SET oldest_offset = COALESCE(?, next_offset) "
        "WHERE stream = ? AND partition = ?",
        (oldest, stream_id, partition),
    )
    return int(row[0])


def _retire_producers(db: sqlite3.Connection, stream_id: str, partition: int, below: int) -> None:
    """Remember, per producer name, the highest sequence number among the batches of a
    partition below ``below`` that are about to go (deleted or rewritten by compaction), so
    a late repeat of one of them is refused (embedded_appends.insert_batches)."""
    deleted = db.execute(
        "SELECT producer, MAX(producer_seq) FROM batches WHERE stream = ? AND partition = ? "
        "AND first_offset + count <= ? AND producer IS NOT NULL GROUP BY producer",
        (stream_id, partition, below),
    ).fetchall()
    highest: dict[str, int] = {}
    for producer, seq in deleted:
        if seq is None:
            continue
        name = producer_name(producer)
        highest[name] = max(highest.get(name, seq), seq)
    db.executemany(
        "INSERT INTO retired_producers (stream, partition, name, max_seq) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (stream, partition, name) DO UPDATE SET max_seq = MAX(max_seq, excluded.max_seq)",
        [(stream_id, partition, name, seq) for name, seq in highest.items()],
    )

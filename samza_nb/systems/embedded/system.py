"""The embedded system: a durable partitioned log in SQLite (WAL), stored in batches.

One SQLite row holds one produced batch of messages (msgpack of ``[kind, key, value, ts]``
lists), so appending and reading cost a few microseconds per *batch*, not per message. Offsets
count messages. Several processes (the notebook driver and Spark's Python workers) may use the
same log at once: every write runs in an ``IMMEDIATE`` transaction and SQLite serializes them.

Appends may carry a ``(producer, producer_seq)`` pair — the runtime passes (task, epoch) — and
a repeated pair is ignored, so a retried or restarted epoch does not append twice. Deleting
committed batches (``delete_before``) keeps, per partition and producer name (the producer up
to its last ``@``: the runtime's task, whatever the epoch plan), the highest sequence number
deleted; an append at or below it is such a repeat too, so a late writer of an epoch already
replayed and consumed (a processor that froze past its session), or the replay of a killed
processor's pending epoch whose first attempt was consumed and deleted, cannot append it again.

The offsets of control messages (watermarks, end-of-stream, drain) are also kept in a table of
their own, so lag counts messages, not markers (:meth:`EmbeddedSystem.control_messages`).

The SQLite file itself (schema, connections, transactions) lives in sqlite.py; the system
holds its retention and compaction (retention.py) and the notebook's direct writes and reads
(notebook.py) as parts.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from samza_nb.config import environment
from samza_nb.errors import StreamNotFoundError, StreamSystemError
from samza_nb.systems.base import Fetched, Record, StreamSystem, validate_stream_id
from samza_nb.systems.batch_format import (
    DecodedBatchCache,
    control_indexes,
    encode_batch,
)
from samza_nb.systems.compaction import CompactionResult, compacted_runs, decode_offsets
from samza_nb.systems.embedded.appends import EncodedBatch, insert_batch, insert_batches
from samza_nb.systems.embedded.notebook import EmbeddedNotebookIO
from samza_nb.systems.embedded.retention import EmbeddedRetention
from samza_nb.systems.embedded.sqlite import Connections, transaction

__all__ = ["EmbeddedSystem", "default_data_dir"]

def default_data_dir() -> Path:
    """``$SAMZA_NB_HOME`` or the per-user data folder (``~/.local/share/samza_nb``)."""
    home = environment("SAMZA_NB_HOME")
    if home:
        return Path(home).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "samza_nb"


class EmbeddedSystem(StreamSystem):
    """A durable partitioned log on local disk; the default system of samza_nb.

    >>> import tempfile
    >>> folder = tempfile.TemporaryDirectory()
    >>> system = EmbeddedSystem("embedded", path=folder.name)
    >>> system.create_stream("clicks", partitions=2)
    True
    >>> system.write("clicks", [{"page": "a"}, {"page": "b"}], key_fn=lambda v: v["page"])
    2
    >>> sorted(system.read("clicks")["value"].map(lambda v: v["page"]))
    ['a', 'b']
    >>> folder.cleanup()
    """

    def __init__(self, name: str = "embedded", *, path: str | os.PathLike[str] | None = None):
        super().__init__(name)
        self._path = Path(path).expanduser() if path is not None else None
        self._parts()

    def _parts(self) -> None:
        self._lock = threading.RLock()
        self._decoded = DecodedBatchCache()
        self._notebook = EmbeddedNotebookIO(self, self._db, self._require_partitions)
        self._retention = EmbeddedRetention(self._db)

    def __getstate__(self) -> dict[str, Any]:
        # Shipped to Spark executors: locks, counters and parts stay behind.
        return {"_name": self._name, "_path": self.path}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._name = state["_name"]
        self._path = state["_path"]
        self._parts()

    def __repr__(self) -> str:
        return f"EmbeddedSystem({self.name!r}, path={str(self.path)!r})"

    @property
    def path(self) -> Path:
        """The folder of this system's log (``<data dir>/<name>`` by default)."""
        if self._path is None:
            self._path = default_data_dir() / self.name
        return self._path

    @property
    def log_file(self) -> Path:
        return self.path / "log.sqlite3"

    def _db(self) -> sqlite3.Connection:
        return Connections.get(self.log_file)

    def close(self) -> None:
        Connections.close(self.log_file)

    # -- what a notebook writes and reads directly (EmbeddedNotebookIO) -------------------
    def write(
        self,
        stream_id: str,
        values: Iterable[Any],
        *,
        key_fn: Callable[[Any], Any] | None = None,
        partition: int | None = None,
        timestamps: Iterable[int] | None = None,
        serde: Any = None,
        key_serde: Any = None,
    ) -> int:
        """Write values to a stream; returns how many were written.

        Placement: ``partition`` if given, else murmur2 of the serialized key when ``key_fn`` is
        given or the value is a ``KV`` (a keyed message: its key and its value; a None key goes to
        partition 0), else round robin. Values and keys are JSON unless
        ``serde``/``key_serde`` (objects with ``to_bytes``) say otherwise.
        """
        return self._notebook.write(
            stream_id, values, key_fn=key_fn, partition=partition, timestamps=timestamps,
            serde=serde, key_serde=key_serde,
        )

    def write_watermark(self, stream_id: str, partition: int, timestamp: int) -> None:
        """Append a source watermark (null task name) to one partition."""
        self._notebook.write_watermark(stream_id, partition, timestamp)

    def end_stream(self, stream_id: str) -> None:
        """Mark a bounded stream as ended: an end-of-stream message on every partition. Ending
        an ended stream does nothing; writing to it is an error."""
        self._notebook.end_stream(stream_id)

    def is_ended(self, stream_id: str) -> bool:
        """Whether :meth:`end_stream` ended this stream."""
        return self._notebook.is_ended(stream_id)

    def read(self, stream_id: str, *, serde: Any = None, key_serde: Any = None) -> Any:
        """Every user message of the stream as a pandas DataFrame with columns partition,
        offset, key, value and timestamp. Values and keys are decoded by ``serde`` and
        ``key_serde`` when given, else as JSON where the bytes are JSON (so a string-serde
        stream's ``"123"`` reads as 123: pass ``serde=serdes.string()``)."""
        return self._notebook.read_frame(stream_id, serde=serde, key_serde=key_serde)

    def read_frame(self, stream_id: str, *, serde: Any = None, key_serde: Any = None) -> Any:
        return self._notebook.read_frame(stream_id, serde=serde, key_serde=key_serde)

    # -- retention and compaction (EmbeddedRetention) -------------------------------------------
    def delete_before(self, stream_id: str, partition: int, offset: int) -> int:
        return self._retention.delete_before(stream_id, partition, offset)

    def delete_before_all(self, deletions: Sequence[tuple[str, int, int]]) -> int:
        return self._retention.delete_before_all(deletions)

    def compact(
        self,
        stream_id: str,
        partition: int,
        upto: int,
        *,
        is_tombstone: Callable[[bytes], bool] | None = None,
        tombstone_retention_ms: int | None = None,
    ) -> CompactionResult | None:
        """Keep the latest record per key among the whole batches below ``upto``; see
        :meth:`EmbeddedRetention.compact`."""
        return self._retention.compact(
            stream_id, partition, upto, is_tombstone=is_tombstone, tombstone_retention_ms=tombstone_retention_ms
        )

    def compaction_state(self, stream_id: str, partition: int) -> tuple[int, int]:
        """(offset the last compaction reached, records it kept); (0, 0) before any."""
        return self._retention.compaction_state(stream_id, partition)

    def tombstones_dropped_below(self, stream_id: str, partition: int) -> int:
        return self._retention.tombstones_dropped_below(stream_id, partition)

    # -- admin -----------------------------------------------------------------------------
    def partition_count(self, stream_id: str) -> int | None:
        if self._path is None and not self.log_file.exists():
            return None
        row = self._db().execute(
            "SELECT partitions FROM streams WHERE stream = ?", (stream_id,)
        ).fetchone()
        return None if row is None else int(row[0])

    def _require_partitions(self, stream_id: str) -> int:
        count = self.partition_count(stream_id)
        if count is None:
            msg = (
                f"stream {stream_id!r} does not exist in system {self.name!r} ({self.log_file}); "
                f"create it first with {self.name}.create_stream({stream_id!r}, partitions=N)"
            )
            raise StreamNotFoundError(msg)
        return count

    def create_stream(self, stream_id: str, partitions: int, *, compacted: bool = False) -> bool:
        validate_stream_id(stream_id)  # the ids an application's input() and output() accept
        if not isinstance(partitions, int) or partitions <= 0:
            msg = f"create_stream({stream_id!r}): partitions must be a positive int, got {partitions!r}"
            raise StreamSystemError(msg)
        db = self._db()
        with transaction(db):
            row = db.execute(
                "SELECT partitions FROM streams WHERE stream = ?", (stream_id,)
            ).fetchone()
            if row is not None:
                if int(row[0]) != partitions:
                    msg = (
                        f"stream {stream_id!r} already exists in system {self.name!r} with "
                        f"{row[0]} partitions, not {partitions}"
                    )
                    raise StreamSystemError(msg)
                return False
            db.execute(
                "INSERT INTO streams (stream, partitions, created) VALUES (?, ?, ?)",
                (stream_id, partitions, time.time()),
            )
            db.executemany(
                "INSERT INTO partitions (stream, partition) VALUES (?, ?)",
                [(stream_id, p) for p in range(partitions)],
            )
            return True

    def delete_stream(self, stream_id: str) -> None:
        db = self._db()
        with transaction(db):
            for table in (
                "streams", "partitions", "batches", "control_offsets", "compaction",
                "retired_producers", "ended_streams",
            ):
                db.execute(f"DELETE FROM {table} WHERE stream = ?", (stream_id,))  # noqa: S608

    def list_streams(self) -> dict[str, int]:
        if self._path is None and not self.log_file.exists():
            return {}
        rows = self._db().execute("SELECT stream, partitions FROM streams ORDER BY stream")
        return {str(stream): int(count) for stream, count in rows}

    def newest_offsets(self, stream_id: str) -> dict[int, int]:
        self._require_partitions(stream_id)
        rows = self._db().execute(
            "SELECT partition, next_offset FROM partitions WHERE stream = ?", (stream_id,)
        )
        return {int(p): int(o) for p, o in rows}

    def incarnation(self, stream_id: str) -> str | None:
        """The stream's row and creation time: a stream deleted and made again gets new ones."""
        if self._path is None and not self.log_file.exists():
            return None
        row = self._db().execute("SELECT rowid, created FROM streams WHERE stream = ?", (stream_id,)).fetchone()
        return None if row is None else f"{int(row[0])}@{float(row[1])!r}"

    def oldest_offsets(self, stream_id: str) -> dict[int, int]:
        self._require_partitions(stream_id)
        rows = self._db().execute(
            "SELECT partition, oldest_offset FROM partitions WHERE stream = ?", (stream_id,)
        )
        return {int(p): int(o) for p, o in rows}

    # -- data ------------------------------------------------------------------------------
    def append(
        self,
        stream_id: str,
        partition: int,
        records: Sequence[Record],
        *,
        producer: str | None = None,
        producer_seq: int | None = None,
    ) -> bool:
        if not records:
            return True
        # Records are tuples (plain or Record): msgspec encodes both as arrays, in one call.
        payload = encode_batch(records)
        return self.append_encoded(
            stream_id, partition, payload, len(records), producer=producer,
            producer_seq=producer_seq, controls=control_indexes(records),
        )

    def append_encoded(
        self,
        stream_id: str,
        partition: int,
        payload: bytes,
        count: int,
        *,
        producer: str | None = None,
        producer_seq: int | None = None,
        controls: Sequence[int] = (),
    ) -> bool:
        """Append an already msgpack-encoded batch of ``count`` records (the runtime's path);
        ``controls`` are the indexes of its control messages in the batch."""
        db = self._db()
        with transaction(db):
            batch = (stream_id, partition, payload, count, controls)
            return insert_batch(db, batch, producer, producer_seq, self._missing_partition)

    def append_all(
        self,
        batches: Sequence[tuple[str, int, Sequence[Record]]],
        *,
        producer: str,
        producer_seq: int,
    ) -> None:
        """Append a task epoch's batches, ``(stream, partition, records)`` each, in one
        transaction: all of them become visible, or none (a partition that does not exist
        fails the whole epoch's writes, not the ones after it). A batch the producer already
        appended at ``producer_seq`` is skipped, as :meth:`append` does."""
        encoded: list[EncodedBatch] = []
        for stream_id, partition, records in batches:
            if records:
                controls = control_indexes(records)
                encoded.append((stream_id, partition, encode_batch(records), len(records), controls))
        if not encoded:
            return
        db = self._db()
        with transaction(db):
            insert_batches(db, encoded, producer, producer_seq, self._missing_partition)

    def _missing_partition(self, stream_id: str, partition: int) -> Exception:
        self._require_partitions(stream_id)  # a stream that does not exist says so
        return StreamSystemError(f"stream {stream_id!r} of system {self.name!r} has no partition {partition}")

    def control_messages(self, stream_id: str, partition: int, start: int, end: int) -> int:
        if end <= start:
            return 0
        row = self._db().execute(
            "SELECT COUNT(*) FROM control_offsets WHERE stream = ? AND partition = ? "
            "AND offset >= ? AND offset < ?",
            (stream_id, partition, start, end),
        ).fetchone()
        return int(row[0])

    def read_batches(
        self,
        stream_id: str,
        partition: int,
        offset: int,
        max_messages: int,
        *,
        producer_seq_below: int | None = None,
    ) -> list[tuple[int, Sequence[tuple[int, bytes | None, bytes, int | None]]]]:
        """Stored batches covering [offset, offset + max_messages), trimmed to that range;
        each as (offset of its first record, records). The runtime's fast read path.

        ``producer_seq_below`` keeps only batches appended with a producer sequence number below
        it (changelog restore skips the batches of epochs that never committed)."""
        return self._read_rows(
            stream_id, partition, offset, max_messages, producer_seq_below=producer_seq_below
        )[0]

    def _read_rows(
        self,
        stream_id: str,
        partition: int,
        offset: int,
        max_messages: int,
        *,
        producer_seq_below: int | None = None,
    ) -> tuple[list[tuple[int, Sequence[tuple[int, bytes | None, bytes, int | None]]]], int | None]:
        """:meth:`read_batches` plus the end of the offsets the rows read cover (None when no
        row was read): compacted rows have holes, so the records alone do not say it."""
        end = offset + max_messages
        query = (
            "SELECT first_offset, count, payload, offsets FROM batches WHERE stream = ? "
            "AND partition = ? AND first_offset < ? AND first_offset + count > ?"
        )
        arguments: tuple[Any, ...] = (stream_id, partition, end, offset)
        if producer_seq_below is not None:
            query += " AND (producer_seq IS NULL OR producer_seq < ?)"
            arguments += (producer_seq_below,)
        rows = self._db().execute(query + " ORDER BY first_offset", arguments).fetchall()
        batches: list[tuple[int, Sequence[tuple[int, bytes | None, bytes, int | None]]]] = []
        covered: int | None = None
        decoded = self._decoded
        for first, count, payload, offsets in rows:
            covered = min(end, first + count)
            records = decoded.get(stream_id, partition, first, payload)
            if offsets is not None:
                batches.extend(compacted_runs(decode_offsets(offsets), records, offset, end))
                continue
            start = max(0, offset - first)
            stop = min(count, end - first)
            if start or stop < count:
                records = records[start:stop]
            batches.append((first + start, records))
        return batches, covered

    def fetch(
        self,
        stream_id: str,
        partition: int,
        offset: int,
        bound: int,
        max_messages: int,
        *,
        producer_seq_below: int | None = None,
    ) -> Fetched:
        # The log numbers messages without gaps, so a batch's records have consecutive offsets
        # and whatever lies below the oldest stored offset was deleted by retention.
        limit = min(max_messages, bound - offset)
        if limit <= 0:
            return Fetched([], offset)
        batches, covered = self._read_rows(
            stream_id, partition, offset, limit, producer_seq_below=producer_seq_below
        )
        if producer_seq_below is not None:
            # Filtered-out batches are gaps of this read: the read covered [offset, offset +
            # limit) of what is stored, returned or not.
            oldest = self.oldest_offsets(stream_id).get(partition, 0)
            newest = self.newest_offsets(stream_id).get(partition, 0)
            start = max(offset, oldest)
            (held_back,) = self._db().execute(
                "SELECT MIN(MAX(first_offset, ?)) FROM batches WHERE stream = ? AND partition = ? "
                "AND first_offset < ? AND first_offset + count > ? AND producer_seq >= ?",
                (offset, stream_id, partition, offset + limit, offset, producer_seq_below),
            ).fetchone()
            next_offset = max(offset, min(start + limit, newest))
            return Fetched(batches, next_offset, held_back=held_back)  # type: ignore[arg-type]
        if covered is None or (batches and batches[0][0] > offset):  # nothing at ``offset``: deleted?
            oldest = self.oldest_offsets(stream_id).get(partition, 0)
            if offset < oldest:
                from_oldest = self.fetch(stream_id, partition, oldest, bound, max_messages)
                return from_oldest._replace(deleted_below=oldest)
            if covered is None:
                return Fetched([], offset)
        return Fetched(batches, covered)  # type: ignore[arg-type]

    def read_records(
        self, stream_id: str, partition: int, offset: int, max_messages: int
    ) -> list[tuple[int, Record]]:
        result: list[tuple[int, Record]] = []
        for first, records in self.read_batches(stream_id, partition, offset, max_messages):
            result.extend((first + index, Record(*record)) for index, record in enumerate(records))
        return result

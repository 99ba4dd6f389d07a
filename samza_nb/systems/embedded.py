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
"""

from __future__ import annotations

import itertools
import operator
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import msgspec

from samza_nb.config import environment
from samza_nb.errors import StreamNotFoundError, StreamSystemError
from samza_nb.secrecy import private_file
from samza_nb.systems.base import Fetched, MessageKind, Record, StreamSystem
from samza_nb.systems.batch_format import decode_batch, encode_batch
from samza_nb.systems.compaction import (
    CompactionResult,
    compact_records,
    compacted_rows,
    compacted_runs,
    decode_offsets,
    encode_offsets,
)
from samza_nb.systems.writes import placed_records

__all__ = ["EmbeddedSystem", "default_data_dir"]

_json_encode = msgspec.json.Encoder().encode
_json_decode = msgspec.json.Decoder().decode

#: A record's kind (0 for a user message), read in C.
_kind = operator.itemgetter(0)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS streams (
    stream TEXT PRIMARY KEY,
    partitions INTEGER NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS ended_streams (
    stream TEXT PRIMARY KEY,
    ended REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS partitions (
    stream TEXT NOT NULL,
    partition INTEGER NOT NULL,
    next_offset INTEGER NOT NULL DEFAULT 0,
    oldest_offset INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (stream, partition)
);
CREATE TABLE IF NOT EXISTS batches (
    stream TEXT NOT NULL,
    partition INTEGER NOT NULL,
    first_offset INTEGER NOT NULL,
    count INTEGER NOT NULL,
    payload BLOB NOT NULL,
    producer TEXT,
    producer_seq INTEGER,
    offsets BLOB,
    PRIMARY KEY (stream, partition, first_offset)
);
CREATE UNIQUE INDEX IF NOT EXISTS batches_producer
    ON batches (stream, partition, producer, producer_seq) WHERE producer IS NOT NULL;
CREATE TABLE IF NOT EXISTS control_offsets (
    stream TEXT NOT NULL,
    partition INTEGER NOT NULL,
    offset INTEGER NOT NULL,
    PRIMARY KEY (stream, partition, offset)
);
CREATE TABLE IF NOT EXISTS compaction (
    stream TEXT NOT NULL,
    partition INTEGER NOT NULL,
    compacted_below INTEGER NOT NULL DEFAULT 0,
    live INTEGER NOT NULL DEFAULT 0,
    tombstones_below INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (stream, partition)
);
CREATE TABLE IF NOT EXISTS retired_producers (
    stream TEXT NOT NULL,
    partition INTEGER NOT NULL,
    name TEXT NOT NULL,
    max_seq INTEGER NOT NULL,
    PRIMARY KEY (stream, partition, name)
);
"""
#: A compacted batch keeps the offset of each record it kept (column ``offsets``); its row
#: still spans [first_offset, first_offset + count), holes included (systems/compaction.py).
_ADD_OFFSETS = "ALTER TABLE batches ADD COLUMN offsets BLOB"

_BUSY_TIMEOUT_S = 60.0
#: Epoch batches are megabytes. A log created now uses 64 KiB pages (SQLite ignores the page
#: size of a file that already has tables), its write-ahead log is checkpointed every 64 MiB
#: instead of every 4 MiB (each checkpoint syncs the files), and reads go through a memory map:
#: together they make an append of an epoch's batch about four times cheaper.
_PAGE_SIZE = 65_536
_CHECKPOINT_BYTES = 64 * 2**20
_MMAP_BYTES = 256 * 2**20


def _configure(connection: sqlite3.Connection) -> None:
    """WAL with ``synchronous=NORMAL``: a commit survives the crash of any process (an OS crash
    may lose the newest commits, as with a Kafka broker that does not fsync every write)."""
    connection.execute(f"PRAGMA page_size={_PAGE_SIZE}")
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=NORMAL")
    page_size = int(connection.execute("PRAGMA page_size").fetchone()[0])
    connection.execute(f"PRAGMA wal_autocheckpoint={max(1000, _CHECKPOINT_BYTES // page_size)}")
    connection.execute(f"PRAGMA journal_size_limit={_CHECKPOINT_BYTES}")
    connection.execute(f"PRAGMA mmap_size={_MMAP_BYTES}")
#: Messages per stored row when a notebook writes a large list (``write``).
_WRITE_BATCH = 10_000


class _DecodedBatch:
    """The last batch this system decoded (per thread), kept for the next read of the same
    row: a task reads a large batch in several fetches. A hit needs the same row and the same
    payload bytes (comparing bytes costs far less than decoding them), so a stream deleted and
    created again never serves stale records."""

    def __init__(self) -> None:
        self._local = threading.local()

    def get(self, stream_id: str, partition: int, first: int, payload: bytes) -> list[Any]:
        key = (stream_id, partition, first)
        cached = getattr(self._local, "entry", None)
        if cached is not None and cached[0] == key and cached[1] == payload:
            return list(cached[2])
        records = decode_batch(payload)
        self._local.entry = (key, payload, records)
        return list(records)


def _producer_name(producer: str) -> str:
    """The producer up to its last ``@`` (the runtime's ``<job>/<task>@<epoch plan>``)."""
    return producer.rpartition("@")[0] or producer


def default_data_dir() -> Path:
    """``$SAMZA_NB_HOME`` or the per-user data folder (``~/.local/share/samza_nb``)."""
    home = environment("SAMZA_NB_HOME")
    if home:
        return Path(home).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "samza_nb"


class _Connections:
    """One SQLite connection per (process, thread, database file). Spark forks Python workers
    and a connection must never cross a fork; and a notebook's driver appends from several
    threads at once (the user's cell, a job, a generator), while a connection holds only one
    transaction at a time. SQLite's WAL and busy timeout serialize the writers."""

    _local = threading.local()

    @classmethod
    def _mine(cls) -> dict[tuple[int, str], sqlite3.Connection]:
        connections: dict[tuple[int, str], sqlite3.Connection] | None = getattr(cls._local, "by_key", None)
        if connections is None:
            connections = cls._local.by_key = {}
        return connections

    @classmethod
    def get(cls, path: Path) -> sqlite3.Connection:
        connections = cls._mine()
        key = (os.getpid(), str(path))
        connection = connections.get(key)
        if connection is None:
            # Owner only: the log holds the job's data (SQLite's -wal and -shm follow its mode).
            private_file(path)
            connection = sqlite3.connect(
                str(path), timeout=_BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
            try:
                _configure(connection)
                connection.executescript(_SCHEMA)
                columns = {row[1] for row in connection.execute("PRAGMA table_info(batches)")}
                if "offsets" not in columns:  # a log written before compaction existed
                    try:
                        connection.execute(_ADD_OFFSETS)
                    except sqlite3.OperationalError:
                        # Another process added it first ("duplicate column name").
                        columns = {row[1] for row in connection.execute("PRAGMA table_info(batches)")}
                        if "offsets" not in columns:
                            raise
            except sqlite3.DatabaseError as error:
                connection.close()
                msg = (
                    f"the embedded log {str(path)!r} cannot be opened: {error}; restore the file "
                    "from a copy, or move it away to start an empty log"
                )
                raise StreamSystemError(msg) from error
            connections[key] = connection
        return connection

    @classmethod
    def close(cls, path: Path) -> None:
        """Close this thread's connection (other threads' close when their threads end)."""
        connection = cls._mine().pop((os.getpid(), str(path)), None)
        if connection is not None:
            connection.close()


class EmbeddedSystem(StreamSystem):
    """A durable partitioned log on local disk; the default system of samza_nb.

    >>> import tempfile
    >>> system = EmbeddedSystem("embedded", path=tempfile.mkdtemp())
    >>> system.create_stream("clicks", partitions=2)
    True
    >>> system.write("clicks", [{"page": "a"}, {"page": "b"}], key_fn=lambda v: v["page"])
    2
    >>> sorted(system.read("clicks")["value"].map(lambda v: v["page"]))
    ['a', 'b']
    """

    def __init__(self, name: str = "embedded", *, path: str | os.PathLike[str] | None = None):
        super().__init__(name)
        self._path = Path(path).expanduser() if path is not None else None
        self._lock = threading.RLock()
        self._round_robin: dict[str, itertools.count[int]] = {}
        self._decoded = _DecodedBatch()

    def __getstate__(self) -> dict[str, Any]:
        # Shipped to Spark executors: locks and counters stay behind.
        return {"_name": self._name, "_path": self.path}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._name = state["_name"]
        self._path = state["_path"]
        self._lock = threading.RLock()
        self._round_robin = {}
        self._decoded = _DecodedBatch()

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
        return _Connections.get(self.log_file)

    def close(self) -> None:
        _Connections.close(self.log_file)

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
        if not isinstance(partitions, int) or partitions <= 0:
            msg = f"create_stream({stream_id!r}): partitions must be a positive int, got {partitions!r}"
            raise StreamSystemError(msg)
        db = self._db()
        with _transaction(db):
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
        with _transaction(db):
            for table in (
                "streams", "partitions", "batches", "control_offsets", "compaction", "retired_producers"
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
        # Most batches hold user messages only: one pass in C finds out.
        controls = (
            [index for index, record in enumerate(records) if record[0] != MessageKind.USER]
            if any(map(_kind, records))
            else []
        )
        return self.append_encoded(
            stream_id, partition, payload, len(records), producer=producer,
            producer_seq=producer_seq, controls=controls,
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
        with _transaction(db):
            row = db.execute(
                "SELECT next_offset FROM partitions WHERE stream = ? AND partition = ?",
                (stream_id, partition),
            ).fetchone()
            if row is None:
                self._require_partitions(stream_id)
                msg = f"stream {stream_id!r} has no partition {partition}"
                raise StreamSystemError(msg)
            if producer is not None:
                duplicate = db.execute(
                    "SELECT 1 FROM batches WHERE stream = ? AND partition = ? AND producer = ? "
                    "AND producer_seq = ?",
                    (stream_id, partition, producer, producer_seq),
                ).fetchone()
                if duplicate is not None:
                    return False
                # The batch may be gone: a processor killed after appending an epoch's
                # intermediate batches leaves its plan pending; before its tasks fail over,
                # their consumers read those batches, commit, and retention deletes them. The
                # new owner replays the plan, and without this refusal the repeat would be
                # read again, counted twice (test_zookeeper_processes.py, crashed epoch).
                retired = db.execute(
                    "SELECT max_seq FROM retired_producers WHERE stream = ? AND partition = ? AND name = ?",
                    (stream_id, partition, _producer_name(producer)),
                ).fetchone()
                if retired is not None and producer_seq is not None and producer_seq <= retired[0]:
                    return False
            first = int(row[0])
            db.execute(
                "INSERT INTO batches (stream, partition, first_offset, count, payload, producer, "
                "producer_seq) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (stream_id, partition, first, count, payload, producer, producer_seq),
            )
            db.execute(
                "UPDATE partitions SET next_offset = ? WHERE stream = ? AND partition = ?",
                (first + count, stream_id, partition),
            )
            if controls:
                db.executemany(
                    "INSERT OR IGNORE INTO control_offsets (stream, partition, offset) VALUES (?, ?, ?)",
                    [(stream_id, partition, first + index) for index in controls],
                )
        return True

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
    ) -> list[tuple[int, list[tuple[int, bytes | None, bytes, int | None]]]]:
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
    ) -> tuple[list[tuple[int, list[tuple[int, bytes | None, bytes, int | None]]]], int | None]:
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
        batches: list[tuple[int, list[tuple[int, bytes | None, bytes, int | None]]]] = []
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
            return Fetched(batches, max(offset, min(start + limit, newest)))  # type: ignore[arg-type]
        if covered is None:
            oldest = self.oldest_offsets(stream_id).get(partition, 0)
            if offset < oldest:
                return self.fetch(
                    stream_id, partition, oldest, bound, max_messages,
                    producer_seq_below=producer_seq_below,
                )
            return Fetched([], offset)
        return Fetched(batches, covered)  # type: ignore[arg-type]

    def delete_before(self, stream_id: str, partition: int, offset: int) -> int:
        db = self._db()
        with _transaction(db):
            row = db.execute(
                "SELECT COALESCE(SUM(count), 0) FROM batches WHERE stream = ? AND partition = ? "
                "AND first_offset + count <= ?",
                (stream_id, partition, offset),
            ).fetchone()
            deleted = db.execute(
                "SELECT producer, MAX(producer_seq) FROM batches WHERE stream = ? AND partition = ? "
                "AND first_offset + count <= ? AND producer IS NOT NULL GROUP BY producer",
                (stream_id, partition, offset),
            ).fetchall()
            highest: dict[str, int] = {}
            for producer, seq in deleted:
                if seq is None:
                    continue
                name = _producer_name(producer)
                highest[name] = max(highest.get(name, seq), seq)
            db.executemany(
                "INSERT INTO retired_producers (stream, partition, name, max_seq) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (stream, partition, name) DO UPDATE SET max_seq = MAX(max_seq, excluded.max_seq)",
                [(stream_id, partition, name, seq) for name, seq in highest.items()],
            )
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
        with _transaction(db):
            check = db.execute(
                "SELECT COUNT(*), MIN(first_offset), MAX(first_offset + count) FROM batches "
                "WHERE stream = ? AND partition = ? AND first_offset + count <= ?",
                (stream_id, partition, stop),
            ).fetchone()
            if tuple(check) != (len(rows), start, stop):
                return None  # retention or another compaction changed the prefix meanwhile
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

    # -- notebook helpers ------------------------------------------------------------------
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
        given (a None key goes to partition 0), else round robin. Values and keys are JSON unless
        ``serde``/``key_serde`` (objects with ``to_bytes``) say otherwise.
        """
        count = self._require_open(stream_id)
        placed = placed_records(
            stream_id, values, partitions=count,
            rotation=self._round_robin.setdefault(stream_id, itertools.count()),
            key_fn=key_fn, partition=partition, timestamps=timestamps, serde=serde, key_serde=key_serde,
        )
        per_partition: dict[int, list[Record]] = {}
        for target, record in placed:
            per_partition.setdefault(target, []).append(record)
        for target, records in sorted(per_partition.items()):
            # Rows of at most _WRITE_BATCH messages: a reader decodes whole rows.
            for start in range(0, len(records), _WRITE_BATCH):
                self.append(stream_id, target, records[start : start + _WRITE_BATCH])
        return len(placed)

    def write_watermark(self, stream_id: str, partition: int, timestamp: int) -> None:
        """Append a source watermark (null task name) to one partition."""
        self._require_open(stream_id)
        payload = _json_encode({"timestamp": int(timestamp), "taskName": None, "version": 1})
        self.append(stream_id, partition, [Record(MessageKind.WATERMARK, None, payload, None)])

    def end_stream(self, stream_id: str) -> None:
        """Mark a bounded stream as ended: an end-of-stream message on every partition. Ending
        an ended stream does nothing; writing to it is an error."""
        count = self._require_partitions(stream_id)
        if self.is_ended(stream_id):
            return
        payload = _json_encode({"taskName": None, "version": 1})
        for partition in range(count):
            self.append(stream_id, partition, [Record(MessageKind.END_OF_STREAM, None, payload, None)])
        db = self._db()
        with _transaction(db):
            db.execute("INSERT OR IGNORE INTO ended_streams VALUES (?, ?)", (stream_id, time.time()))

    def is_ended(self, stream_id: str) -> bool:
        """Whether :meth:`end_stream` ended this stream."""
        row = self._db().execute("SELECT 1 FROM ended_streams WHERE stream = ?", (stream_id,)).fetchone()
        return row is not None

    def _require_open(self, stream_id: str) -> int:
        count = self._require_partitions(stream_id)
        if self.is_ended(stream_id):
            msg = (
                f"stream {stream_id!r} of system {self.name!r} has ended (end_stream); its readers "
                f"stop at the end, so nothing more may be written to it"
            )
            raise StreamSystemError(msg)
        return count

    def read(self, stream_id: str) -> Any:
        """Every user message of the stream as a pandas DataFrame with columns partition,
        offset, key, value (decoded as JSON where possible) and timestamp."""
        return self.read_frame(stream_id)

    def read_frame(
        self, stream_id: str, *, serde: Any = None, key_serde: Any = None
    ) -> Any:
        import pandas as pd

        count = self._require_partitions(stream_id)
        decode_value = serde.from_bytes if serde is not None else _lenient_json
        decode_key = key_serde.from_bytes if key_serde is not None else _lenient_json
        rows = []
        for partition in range(count):
            for offset, record in self.read_records(stream_id, partition, 0, 2**62):
                if record.kind != MessageKind.USER:
                    continue
                key = decode_key(record.key) if record.key is not None else None
                rows.append((partition, offset, key, decode_value(record.value), record.timestamp))
        return pd.DataFrame(rows, columns=["partition", "offset", "key", "value", "timestamp"])

    def read_records(
        self, stream_id: str, partition: int, offset: int, max_messages: int
    ) -> list[tuple[int, Record]]:
        result: list[tuple[int, Record]] = []
        for first, records in self.read_batches(stream_id, partition, offset, max_messages):
            result.extend((first + index, Record(*record)) for index, record in enumerate(records))
        return result


def _lenient_json(data: bytes) -> Any:
    try:
        return _json_decode(data)
    except msgspec.DecodeError:
        return bytes(data)


class _transaction:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` (rollback on error): one writer at a time."""

    def __init__(self, db: sqlite3.Connection):
        self._db = db

    def __enter__(self) -> sqlite3.Connection:
        self._db.execute("BEGIN IMMEDIATE")
        return self._db

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self._db.execute("COMMIT")
        else:
            self._db.execute("ROLLBACK")

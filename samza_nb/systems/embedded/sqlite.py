"""The SQLite file behind the embedded log: its schema, one connection per process and thread,
and the ``BEGIN IMMEDIATE`` transaction every write runs in (systems/embedded/system.py)."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from pathlib import Path

from samza_nb.errors import StreamSystemError
from samza_nb.secrecy import private_file

__all__ = ["Connections", "configure", "transaction"]

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
#: A writer's pauses between tries for the write lock (see :class:`transaction`), and the
#: result codes it tries again on: SQLITE_BUSY, SQLITE_BUSY_RECOVERY, SQLITE_BUSY_TIMEOUT.
_FIRST_PAUSE_S = 0.0001
_LONGEST_PAUSE_S = 0.002
_WAIT_FOR = frozenset({5, 261, 773})
#: Epoch batches are megabytes. A log created now uses 64 KiB pages (SQLite ignores the page
#: size of a file that already has tables), its write-ahead log is checkpointed every 64 MiB
#: instead of every 4 MiB (each checkpoint syncs the files), and reads go through a memory map:
#: together they make an append of an epoch's batch about four times cheaper.
_PAGE_SIZE = 65_536
_CHECKPOINT_BYTES = 64 * 2**20
_MMAP_BYTES = 256 * 2**20


def configure(connection: sqlite3.Connection) -> None:
    """WAL with ``synchronous=NORMAL``: a commit survives the crash of any process (an OS crash
    may lose the newest commits, as with a Kafka broker that does not fsync every write)."""
    connection.execute(f"PRAGMA page_size={_PAGE_SIZE}")
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=NORMAL")
    page_size = int(connection.execute("PRAGMA page_size").fetchone()[0])
    connection.execute(f"PRAGMA wal_autocheckpoint={max(1000, _CHECKPOINT_BYTES // page_size)}")
    connection.execute(f"PRAGMA journal_size_limit={_CHECKPOINT_BYTES}")
    connection.execute(f"PRAGMA mmap_size={_MMAP_BYTES}")


class Connections:
    """One SQLite connection per (process, thread, database file). Spark forks Python workers
    and a connection must never cross a fork; and a notebook's driver appends from several
    threads at once (the user's cell, a job, a generator), while a connection holds only one
    transaction at a time. SQLite's WAL serializes the writers: :class:`transaction` waits
    for the write lock, and the busy timeout covers every other statement."""

    _local = threading.local()

    @classmethod
    def _mine(cls) -> dict[tuple[int, str], tuple[sqlite3.Connection, int]]:
        """(process, file) -> (connection, the file's inode when it was opened)."""
        connections: dict[tuple[int, str], tuple[sqlite3.Connection, int]] | None = getattr(
            cls._local, "by_key", None
        )
        if connections is None:
            connections = cls._local.by_key = {}
        return connections

    @classmethod
    def get(cls, path: Path) -> sqlite3.Connection:
        """This thread's connection to ``path``; a new one when the file was deleted or
        replaced since (a notebook that removed its data folder to start afresh must not
        keep writing into the deleted file)."""
        connections = cls._mine()
        key = (os.getpid(), str(path))
        cached = connections.get(key)
        connection = None
        if cached is not None:
            try:
                same = os.stat(path).st_ino == cached[1]
            except FileNotFoundError:
                same = False
            if same:
                connection = cached[0]
            else:
                del connections[key]
                cached[0].close()
        if connection is None:
            # Owner only: the log holds the job's data (SQLite's -wal and -shm follow its mode).
            private_file(path)
            connection = sqlite3.connect(
                str(path), timeout=_BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
            try:
                configure(connection)
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
            connections[key] = (connection, os.stat(path).st_ino)
        return connection

    @classmethod
    def close(cls, path: Path) -> None:
        """Close this thread's connection (other threads' close when their threads end)."""
        cached = cls._mine().pop((os.getpid(), str(path)), None)
        if cached is not None:
            cached[0].close()




class transaction:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` (rollback on error): one writer at a time.

    A writer waiting for another's transaction tries again after 0.1 ms, doubling up to 2 ms,
    for up to the busy timeout. SQLite's own busy handler sleeps 1, 2, 5, 10, 15, 20, 25 ms…
    between tries: two Python workers appending one transaction per task epoch (each held
    for about a millisecond) left the waiting one asleep for up to 79 ms at a time, most of
    it after the lock was free."""

    def __init__(self, db: sqlite3.Connection):
        self._db = db

    def __enter__(self) -> sqlite3.Connection:
        db = self._db
        db.execute("PRAGMA busy_timeout = 0")
        began = False
        try:
            _begin_immediate(db)
            began = True
        finally:
            try:
                db.execute(f"PRAGMA busy_timeout = {int(_BUSY_TIMEOUT_S * 1000)}")
            except BaseException:
                # The caller never reaches __exit__: no transaction may stay open here.
                if began:
                    db.execute("ROLLBACK")
                raise
        return db

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self._db.execute("COMMIT")
        else:
            self._db.execute("ROLLBACK")


def _begin_immediate(db: sqlite3.Connection) -> None:
    """``BEGIN IMMEDIATE`` with the connection's busy timeout off, tried again while another
    connection holds the write lock (see :class:`transaction`)."""
    deadline = time.monotonic() + _BUSY_TIMEOUT_S
    pause = _FIRST_PAUSE_S
    while True:
        try:
            db.execute("BEGIN IMMEDIATE")
            return
        except sqlite3.OperationalError as error:
            # Not SQLITE_BUSY_SNAPSHOT: that one does not clear while this connection reads
            # an older snapshot, and SQLite itself fails it at once.
            if getattr(error, "sqlite_errorcode", None) not in _WAIT_FOR or time.monotonic() >= deadline:
                raise
        time.sleep(pause)
        pause = min(2 * pause, _LONGEST_PAUSE_S)

"""EmbeddedMetadataStore: a SQLite file in WAL mode, durable and shared by processes.

Every operation is one SQLite transaction, committed with ``synchronous=FULL`` (durable once
``put`` returns). Several processes may open the same file: SQLite's locking serialises
writers, each connection waits up to ``timeout`` seconds for a lock, and an operation that
still finds the database busy is retried ``retries`` times with a growing pause before
:class:`~samza_nb.errors.MetadataStoreError` names the file. A store notices when it is used in
a forked child and opens its own connection there.
"""

from __future__ import annotations

import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

from samza_nb.errors import MetadataStoreError, is_disk_full
from samza_nb.metadata.base import (
    Fence,
    MetadataStore,
    check_fence,
    check_key,
    check_value,
    namespace_suffix,
    parse_namespaced_key,
)
from samza_nb.secrecy import private_file

__all__ = ["EmbeddedMetadataStore"]

_T = TypeVar("_T")
_BUSY_CODES = {sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED}
_UPSERT = (
    "INSERT INTO metadata (key, value) VALUES (?, ?) "
    "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
)


def _is_busy(error: sqlite3.OperationalError) -> bool:
    code = getattr(error, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in _BUSY_CODES
    text = str(error).lower()
    return "locked" in text or "busy" in text


class EmbeddedMetadataStore(MetadataStore):
    """Metadata in one SQLite file (created with its folders when missing).

    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     with EmbeddedMetadataStore(pathlib.Path(folder) / "metadata.sqlite3") as store:
    ...         store.put("a", b"1")
    ...         store.get("a")
    b'1'
    """

    def __init__(
        self, path: str | os.PathLike[str], *, timeout: float = 10.0, retries: int = 5
    ) -> None:
        self.path = Path(path).expanduser()
        self.timeout = timeout
        self.retries = retries
        self._lock = threading.RLock()
        self._connection: sqlite3.Connection | None = None
        self._pid = -1
        self._closed = False
        try:
            # Owner only; SQLite gives the -wal and -shm files the database file's mode.
            private_file(self.path)
        except OSError as error:
            msg = f"embedded metadata store {str(self.path)!r}: cannot create its folder: {error}"
            raise MetadataStoreError(msg) from error
        self._run("open", lambda connection: None)

    def __repr__(self) -> str:
        return f"EmbeddedMetadataStore({str(self.path)!r})"

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(
            str(self.path), timeout=self.timeout, isolation_level=None, check_same_thread=False
        )
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=FULL")
            connection.execute(
                "CREATE TABLE IF NOT EXISTS metadata ("
                "key TEXT PRIMARY KEY NOT NULL, value BLOB NOT NULL) WITHOUT ROWID"
            )
        except BaseException:
            connection.close()
            raise
        return connection

    def _run(self, what: str, operation: Callable[[sqlite3.Connection], _T]) -> _T:
        attempt = 0
        while True:
            with self._lock:
                if self._closed:
                    msg = f"embedded metadata store {str(self.path)!r} is closed ({what})"
                    raise MetadataStoreError(msg)
                try:
                    if self._connection is None or self._pid != os.getpid():
                        # A connection inherited through fork must not be used (nor closed).
                        self._connection = self._connect()
                        self._pid = os.getpid()
                    return operation(self._connection)
                except sqlite3.OperationalError as error:
                    if not _is_busy(error) or attempt >= self.retries:
                        reason = (
                            f"still busy after {attempt + 1} attempts of {self.timeout:g} s"
                            if _is_busy(error)
                            else f"{error} (no space left on device: free space there and run the job "
                            "again; what was committed is kept)"
                            if is_disk_full(error)
                            else str(error)
                        )
                        msg = f"embedded metadata store {str(self.path)!r}: {what} failed: {reason}"
                        raise MetadataStoreError(msg) from error
                except sqlite3.DatabaseError as error:
                    msg = f"embedded metadata store {str(self.path)!r}: {what} failed: {error}"
                    raise MetadataStoreError(msg) from error
            attempt += 1
            time.sleep(min(1.0, 0.01 * 2**attempt) * (0.5 + random.random()))

    def get(self, key: str) -> bytes | None:
        key = check_key(key, repr(self))

        def read(connection: sqlite3.Connection) -> bytes | None:
            row = connection.execute("SELECT value FROM metadata WHERE key = ?", (key,)).fetchone()
            return None if row is None else bytes(row[0])

        return self._run(f"get {key!r}", read)

    def put(self, key: str, value: bytes) -> None:
        key = check_key(key, repr(self))
        data = check_value(key, value, repr(self))
        self._run(f"put {key!r}", lambda connection: connection.execute(_UPSERT, (key, data)))

    def put_all(self, entries: Mapping[str, bytes], *, fence: Fence | None = None) -> None:
        """Write all entries in one transaction: readers see all of them or none.

        With ``fence = (key, generation)`` the transaction first checks that the value under
        ``key`` is ``generation`` and otherwise raises JobLeaseError, writing nothing: a run
        that lost the job lease can never commit after the next one took it.
        """
        rows = [
            (check_key(key, repr(self)), check_value(key, value, repr(self)))
            for key, value in entries.items()
        ]
        if not rows and fence is None:
            return

        def write(connection: sqlite3.Connection) -> None:
            try:
                # IMMEDIATE takes the write lock first, so no writer slips between check and write.
                connection.execute("BEGIN IMMEDIATE")
                if fence is not None:
                    row = connection.execute(
                        "SELECT value FROM metadata WHERE key = ?", (fence[0],)
                    ).fetchone()
                    check_fence(fence, None if row is None else bytes(row[0]), repr(self))
                connection.executemany(_UPSERT, rows)
                connection.execute("COMMIT")
            except BaseException:
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                raise

        self._run(f"put_all ({len(rows)} entries)", write)

    def delete(self, key: str) -> None:
        key = check_key(key, repr(self))
        self._run(
            f"delete {key!r}",
            lambda connection: connection.execute("DELETE FROM metadata WHERE key = ?", (key,)),
        )

    def all(self) -> dict[str, bytes]:
        return self._run(
            "all",
            lambda connection: {
                key: bytes(value)
                for key, value in connection.execute("SELECT key, value FROM metadata")
            },
        )

    def entries_in_namespace(self, namespace: str) -> dict[str, bytes]:
        suffix = namespace_suffix(namespace)

        def read(connection: sqlite3.Connection) -> dict[str, bytes]:
            result: dict[str, bytes] = {}
            rows = connection.execute(
                "SELECT key, value FROM metadata WHERE substr(key, -?) = ?",
                (len(suffix), suffix),
            )
            for raw, value in rows:
                parsed = parse_namespaced_key(raw)
                if parsed is not None and parsed[0] == namespace:
                    result[parsed[1]] = bytes(value)
            return result

        return self._run(f"read namespace {namespace!r}", read)

    def flush(self) -> None:
        """Nothing to write: every operation is committed durably before it returns."""
        if self._closed:
            msg = f"embedded metadata store {str(self.path)!r} is closed (flush)"
            raise MetadataStoreError(msg)

    def close(self) -> None:
        """Close the connection; later calls raise MetadataStoreError. Closing twice is fine."""
        with self._lock:
            if self._connection is not None and self._pid == os.getpid():
                self._connection.close()
            self._connection = None
            self._closed = True

"""Task-local key-value stores: RocksDB (rocksdict) backed by a changelog stream.

A store lives at ``{store_root}/{location_id}/{task}/{store}`` so any processor at the same
location finds it (SEP host affinity). A task opens its stores for one epoch and closes them
before it returns: Spark reuses Python workers, and a store left open in one worker must never
be written by another.

Consistency: every flush writes the epoch's updates *and* the task's store metadata (epoch
sequence number, input offsets, control state) in one RocksDB write batch, after appending the
same updates to the changelog tagged (task, epoch). A store whose sequence number differs from
the committed checkpoint is rebuilt from the changelog, replaying committed epochs only; so is
a store RocksDB cannot open (corrupt or truncated files), and the epoch result says so.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
from rocksdict import Options, Rdict, WriteBatch

from samza_nb.errors import JobError
from samza_nb.runtime.faults import reached as kill_point
from samza_nb.secrecy import private_dir
from samza_nb.systems.base import MessageKind, Record, StreamSystem

__all__ = ["ChangelogRef", "TaskStore", "store_path"]

_META_KEY = b"\x00samza_nb.meta"
_PUT = b"\x01"
_DELETE = b"\x00"
_json_encode = msgspec.json.Encoder().encode
_json_decode = msgspec.json.Decoder().decode
_MISSING = object()
_RESTORE_CHUNK = 100_000
#: RocksDB keeps this many info LOG files per store (each open rolls one over).
_KEEP_LOG_FILES = 2


def _options() -> Options:
    options = Options(raw_mode=True)
    options.set_keep_log_file_num(_KEEP_LOG_FILES)
    return options


def store_path(store_root: str | Path, location_id: str, task: str, store: str) -> Path:
    """``{store_root}/{location_id}/{task}/{store}`` with path-safe components."""
    return Path(store_root) / _safe(location_id) / _safe(task) / _safe(store)


def _safe(part: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in part)


class ChangelogRef:
    """Where a store's changelog lives: a partition of a stream in a system."""

    __slots__ = ("partition", "stream_id", "system")

    def __init__(self, system: StreamSystem, stream_id: str, partition: int):
        self.system = system
        self.stream_id = stream_id
        self.partition = partition


class TaskStore:
    """One store of one task for one epoch: a read-through, write-back cache over RocksDB."""

    def __init__(
        self, name: str, path: Path, changelog: ChangelogRef | None, task: str, producer: str
    ):
        self.name = name
        self.path = path
        self.task = task
        self.producer = producer
        self._changelog = changelog
        self._db: Rdict | None = None
        self._dirty: dict[bytes, bytes | None] = {}
        self.restored_records = 0
        self.restore_seconds = 0.0
        #: Why the store was rebuilt from its changelog although its files were there.
        self.rebuilt_because: str | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def open(self, committed_seq: int) -> dict[str, Any]:
        """Open the store, rebuilding it from the changelog when its epoch differs from
        ``committed_seq``; returns its metadata ({} for a fresh store)."""
        private_dir(self.path.parent)
        try:
            self._db = Rdict(str(self.path), _options())
        except Exception as error:  # RocksDB reports corruption as a bare Exception
            self.rebuilt_because = f"RocksDB could not open {self.path}: {error}"
            return self.restore(committed_seq)
        meta = self.meta()
        if int(meta.get("seq", 0)) not in (committed_seq, committed_seq + 1):
            meta = self.restore(committed_seq)
        return meta

    def restore(self, committed_seq: int) -> dict[str, Any]:
        """Wipe the local store and replay the changelog of the first ``committed_seq`` epochs."""
        started = time.perf_counter()
        self.close()
        shutil.rmtree(self.path, ignore_errors=True)
        self._db = Rdict(str(self.path), _options())
        restored = 0
        if self._changelog is not None and committed_seq > 0:
            log = self._changelog
            system = log.system
            offset = 0
            newest = system.newest_offsets(log.stream_id).get(log.partition, 0)
            while offset < newest:
                fetched = system.fetch(
                    log.stream_id, log.partition, offset, newest, _RESTORE_CHUNK,
                    producer_seq_below=committed_seq,
                )
                batch = WriteBatch(raw_mode=True)
                for _first, records in fetched.batches:
                    for _kind, key, value, _ts in records:
                        if key is None:
                            continue
                        if value[:1] == _PUT:
                            batch.put(key, value[1:])
                        else:
                            batch.delete(key)
                        restored += 1
                self._db.write(batch)
                if fetched.next_offset <= offset:
                    break
                offset = fetched.next_offset
        meta = {"seq": committed_seq} if committed_seq > 0 else {}
        if meta:
            self._db[_META_KEY] = _json_encode(meta)
        self.restored_records += restored
        self.restore_seconds += time.perf_counter() - started
        return meta

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def _rdict(self) -> Rdict:
        if self._db is None:
            msg = f"store {self.name!r} of task {self.task!r} is not open"
            raise JobError(msg)
        return self._db

    # -- data ------------------------------------------------------------------------------
    def meta(self) -> dict[str, Any]:
        raw = self._rdict().get(_META_KEY)
        return dict(_json_decode(raw)) if raw else {}

    def get(self, key: bytes) -> bytes | None:
        value = self._dirty.get(key, _MISSING)
        if value is not _MISSING:
            return value  # type: ignore[return-value]
        return self._rdict().get(key)

    def put(self, key: bytes, value: bytes) -> None:
        self._dirty[key] = value

    def delete(self, key: bytes) -> None:
        self._dirty[key] = None

    def items(self) -> Iterator[tuple[bytes, bytes]]:
        """Every live entry (flushed and pending), in key order of the flushed part first."""
        seen: set[bytes] = set()
        for raw_key, value in self._rdict().items():
            key = bytes(raw_key)  # type: ignore[arg-type]  # raw mode: keys are bytes
            if key == _META_KEY:
                continue
            seen.add(key)
            pending = self._dirty.get(key, _MISSING)
            if pending is _MISSING:
                yield key, value
            elif pending is not None:
                yield key, pending  # type: ignore[misc]
        for key, pending in list(self._dirty.items()):
            if key not in seen and pending is not None:
                yield key, pending

    @property
    def pending_updates(self) -> int:
        return len(self._dirty)

    def flush(self, meta: dict[str, Any], producer_seq: int) -> None:
        """Append this epoch's updates to the changelog, then write them and ``meta`` in one
        RocksDB write batch."""
        self.append_changelog(producer_seq)
        self.write_local(meta)

    def append_changelog(self, producer_seq: int, transaction: Any = None) -> None:
        """Append this epoch's updates to the changelog (through ``transaction``, an open
        exactly-once TaskTransaction, when given)."""
        if self._changelog is not None and self._dirty:
            records = [
                Record(MessageKind.USER, key, _PUT + value if value is not None else _DELETE, None)
                for key, value in self._dirty.items()
            ]
            log = self._changelog
            if transaction is not None:
                transaction.append(log.stream_id, log.partition, records, producer_seq)
            else:
                log.system.append(
                    log.stream_id, log.partition, records, producer=self.producer, producer_seq=producer_seq
                )
            kill_point("mid-store-flush")

    def write_local(self, meta: dict[str, Any]) -> None:
        """Write this epoch's updates and ``meta`` in one RocksDB write batch."""
        batch = WriteBatch(raw_mode=True)
        for key, value in self._dirty.items():
            if value is None:
                batch.delete(key)
            else:
                batch.put(key, value)
        batch.put(_META_KEY, _json_encode(meta))
        self._rdict().write(batch)
        self._dirty.clear()

"""Task-local key-value stores: RocksDB (rocksdict) backed by a changelog stream.

A store lives at ``{store_root}/{location_id}/{task}/{store}`` so any processor at the same
location finds it (SEP host affinity). A task opens its stores for one epoch and closes them
before it returns, except in a resident worker, which keeps them open for the task's next
epochs (runtime/task/kept_stores.py) until it is told to release them. RocksDB lets one process at
a time open a store: opening one another process holds waits, bounded, for it
(runtime/task/rocksdb_open.py).

Consistency: every flush writes the epoch's updates *and* the task's store metadata (epoch
sequence number, input offsets, control state, the changelog offset the store now reflects) in
one RocksDB write batch, after appending the same updates to the changelog tagged (task,
epoch). A store behind the committed checkpoint replays only the changelog after its offset,
committed epochs only (incremental restore); a missing store, one RocksDB cannot open (corrupt
or truncated files) or one ahead of a different history is rebuilt from the changelog's start,
and the epoch result says so. A hot standby (runtime/processor/standby.py) keeps a store at its own
location caught up the same way, so a promoted task replays only the tail.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
from rocksdict import Rdict, WriteBatch

from samza_nb.errors import DiskFullError, JobError, is_disk_full
from samza_nb.runtime.faults import reached as kill_point
from samza_nb.runtime.task.changelog_dedup import (
    CHANGELOG_DEDUP,
    changelog_dedup_kept,
    changelog_state_after_append,
    changelog_state_after_catch_up,
    resume_changelog,
)
from samza_nb.runtime.task.changelog_records import apply_changelog, changelog_records, is_tombstone
from samza_nb.runtime.task.kept_stores import kept_stores
from samza_nb.runtime.task.rocksdb_open import (
    StoreHeldOpen,
    no_space,
    open_rdict,
    store_path,
    task_store_folder,
)
from samza_nb.secrecy import private_dir
from samza_nb.systems.base import StreamSystem

__all__ = ["ChangelogRef", "StoreHeldOpen", "TaskStore", "is_tombstone", "store_path", "task_store_folder"]

_META_KEY = b"\x00samza_nb.meta"
_json_encode = msgspec.json.Encoder().encode
_json_decode = msgspec.json.Decoder().decode
_MISSING = object()
_RESTORE_CHUNK = 100_000


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
        self,
        name: str,
        path: Path,
        changelog: ChangelogRef | None,
        task: str,
        producer: str,
        *,
        look_past_end: bool = False,
    ):
        self.name = name
        #: Whether :meth:`open` compares the store's changelog offset with the changelog's end.
        self.look_past_end = look_past_end
        self.path = path
        self.task = task
        self.producer = producer
        self._changelog = changelog
        self._db: Rdict | None = None
        self._dirty: dict[bytes, bytes | None] = {}
        self.restored_records = 0
        self.restored_bytes = 0
        self.restore_seconds = 0.0
        #: Catch-ups that applied changelog records, and rebuilds from the changelog's start.
        self.restores = 0
        #: Restores that replayed the changelog from its start (the store was missing or
        #: unusable here), beside catch-ups of a stale store's tail (both count in restores).
        self.full_restores = 0
        #: The changelog offset this store reflects (None: unknown, e.g. a store of an older
        #: samza_nb, or no changelog).
        self.changelog_offset: int | None = None
        #: Why the store was rebuilt from its changelog although its files were there.
        self.rebuilt_because: str | None = None
        #: The changelog had records past this store's offset when this epoch appended: another
        #: process ran the task meanwhile, or an attempt of this epoch crashed after appending.
        self._overtaken = False
        #: This epoch's append: (the partition's newest offset before it, its records, whether
        #: in a transaction); write_local checks the partition grew by exactly that.
        self._appended: tuple[int, int, bool] | None = None
        self._appended_seq = 0

    # -- lifecycle -------------------------------------------------------------------------
    def open(self, committed_seq: int) -> dict[str, Any]:
        """Open the store and bring it to ``committed_seq``; returns its metadata ({} for a
        fresh store).

        A store at ``committed_seq`` (or one epoch ahead: flushed, not yet committed) is used
        as it is. A stale store that knows its changelog offset replays only the changelog
        after it; a missing, unreadable or divergent store is rebuilt from the start."""
        kept = kept_stores()
        self._db = kept.take(self.path) if kept is not None else None
        if self._db is None:
            private_dir(self.path.parent)
            try:
                self._db = self._open_rdict()
            except JobError:
                raise
            except Exception as error:  # RocksDB reports corruption as a bare Exception
                self.rebuilt_because = self._unopenable(error)
                return self.restore(committed_seq)
        meta = self.meta()
        seq = int(meta.get("seq", 0))
        offset = meta.get("changelogOffset")
        self.changelog_offset = None if offset is None else int(offset)
        self._look_past_end()
        if seq in (committed_seq, committed_seq + 1):
            return meta
        if seq < committed_seq and self._resumable():
            return self.catch_up(committed_seq)
        return self.restore(committed_seq)

    def _look_past_end(self) -> None:
        """When the epoch driver found this store's changelog made again (shorter than the
        task's checkpoint says: broker data lost), a store whose changelog offset is past the
        changelog's newest one keeps what it holds, the only copy now, and logs on from the new
        end (else its next append would take the shorter changelog for another process's
        records, and drop this store's updates)."""
        log = self._changelog
        if log is None or self.changelog_offset is None or not self.look_past_end:
            return
        end = self._newest(log)
        if self.changelog_offset > end:
            self.changelog_offset = end

    def _unopenable(self, error: Exception) -> str:
        """Why this store is rebuilt although its files are there, in one line naming the
        store, its task and what RocksDB found."""
        found = " ".join(str(error).split())
        return (
            f"store {self.name!r} of task {self.task!r} is rebuilt from its changelog: "
            f"RocksDB could not open {self.path}: {found}"
        )

    def _resumable(self) -> bool:
        """Whether replaying the changelog after this store's offset gives the right state:
        the offset is known and no tombstone after it was dropped by compaction."""
        log = self._changelog
        if log is None or self.changelog_offset is None:
            return False
        return self.changelog_offset >= log.system.tombstones_dropped_below(log.stream_id, log.partition)

    def restore(self, committed_seq: int, upto: int | None = None) -> dict[str, Any]:
        """Wipe the local store and replay the changelog of the first ``committed_seq`` epochs
        (up to offset ``upto`` when given)."""
        self.close()
        shutil.rmtree(self.path, ignore_errors=True)
        self._db = self._open_rdict()
        self.changelog_offset = 0 if self._changelog is not None else None
        if committed_seq <= 0:
            return {}
        self.full_restores += 1
        counted = self.restores
        meta = self.catch_up(committed_seq, upto)
        if self.restores == counted:  # a rebuild is a restore, even of an empty changelog
            self.restores += 1
        return meta

    def follow(self, committed_seq: int, upto: int) -> int | None:
        """A hot standby's step: bring the store to its active's committed checkpoint
        (``committed_seq`` epochs, changelog up to ``upto``) by applying only what it lacks;
        returns the records applied, None when another process holds the store open (a
        resident worker that ran the task here and was not told to release it yet: the
        step applies nothing and tries again next time). A store ahead of that checkpoint (it
        ran the task here and flushed an epoch that never committed) or below dropped
        tombstones is rebuilt."""
        private_dir(self.path.parent)
        before = self.restored_records
        try:
            self._db = open_rdict(self.path, self.name, self.task, wait_s=0)
        except StoreHeldOpen:
            return None
        except JobError:
            raise
        except Exception as error:  # RocksDB reports corruption as a bare Exception
            self.rebuilt_because = self._unopenable(error)
            self.restore(committed_seq, upto)
            return self.restored_records - before
        meta = self.meta()
        seq = int(meta.get("seq", 0))
        offset = meta.get("changelogOffset")
        self.changelog_offset = None if offset is None else int(offset)
        if seq == committed_seq and self.changelog_offset == upto:
            return 0
        fresh = seq == 0 and not meta
        if fresh or (seq <= committed_seq and self._resumable() and (self.changelog_offset or 0) <= upto):
            if fresh:
                self.changelog_offset = 0
            self.catch_up(committed_seq, upto)
        else:
            self.restore(committed_seq, upto)
        return self.restored_records - before

    def catch_up(self, committed_seq: int, upto: int | None = None) -> dict[str, Any]:
        """Apply the changelog from this store's offset up to ``upto`` (the newest offset when
        None), keeping only epochs below ``committed_seq``; the store then reflects
        ``committed_seq`` epochs. Each chunk's data and the offset it reaches are written in
        one RocksDB write batch, so a restore cut short resumes where it stopped."""
        started = time.perf_counter()
        meta = self.meta()
        seq = int(meta.get("seq", 0))
        restored = restored_bytes = 0
        log = self._changelog
        offset = self.changelog_offset or 0
        dedup = meta.get(CHANGELOG_DEDUP)
        if log is not None and committed_seq > 0:
            system = log.system
            end = system.newest_offsets(log.stream_id).get(log.partition, 0) if upto is None else upto
            resume_changelog(system, log.stream_id, log.partition, meta, offset)
            while offset < end:
                fetched = system.fetch(
                    log.stream_id, log.partition, offset, end, _RESTORE_CHUNK,
                    producer_seq_below=committed_seq,
                )
                if fetched.next_offset <= offset:
                    break
                # Records of epochs at or past committed_seq are not applied, and the store's
                # offset stops before the first of them: they may be an attempt that never
                # committed, or epochs another processor committed since this one read its
                # checkpoint (a processor frozen past its session). Passing them would leave
                # the store short of what a later catch-up from its offset applies.
                held_back = fetched.held_back
                batch = WriteBatch(raw_mode=True)
                applied, applied_bytes = apply_changelog(batch, fetched.batches, held_back)
                restored += applied
                restored_bytes += applied_bytes
                offset = fetched.next_offset if held_back is None else held_back
                kept = changelog_state_after_catch_up(system, log.stream_id, log.partition, offset)
                dedup = kept.get(CHANGELOG_DEDUP)
                batch.put(_META_KEY, _json_encode({"seq": seq, "changelogOffset": offset, **kept}))
                self._write(batch)
                if held_back is not None:
                    break
            self.changelog_offset = offset
        meta = {"seq": committed_seq} if committed_seq > 0 else {}
        if meta:
            if self.changelog_offset is not None:
                meta["changelogOffset"] = self.changelog_offset
                if dedup and dedup.get("position") == self.changelog_offset:
                    meta[CHANGELOG_DEDUP] = dedup
            batch = WriteBatch(raw_mode=True)
            batch.put(_META_KEY, _json_encode(meta))
            self._write(batch)
        self.restored_records += restored
        self.restored_bytes += restored_bytes
        self.restore_seconds += time.perf_counter() - started
        if restored:  # a stale store whose changelog tail holds nothing was not restored
            self.restores += 1
        return meta

    def close(self, *, keep: bool = False) -> None:
        """Close the store; with ``keep``, in a resident worker, hand it to the worker's kept
        stores instead (open for the task's next epoch: runtime/task/kept_stores.py)."""
        db, self._db = self._db, None
        if db is None:
            return
        kept = kept_stores() if keep else None
        if kept is not None:
            kept.keep(self.path, db)
        else:
            db.close()

    def _open_rdict(self) -> Rdict:
        return open_rdict(self.path, self.name, self.task)

    def _rdict(self) -> Rdict:
        if self._db is None:
            msg = f"store {self.name!r} of task {self.task!r} is not open"
            raise JobError(msg)
        return self._db

    def _write(self, batch: WriteBatch) -> None:
        try:
            self._rdict().write(batch)
        except Exception as error:  # RocksDB reports a full device as a bare Exception
            if not is_disk_full(error):
                raise
            raise DiskFullError(no_space(self.name, self.task, self.path)) from error

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

    def flush(self, meta: dict[str, Any], producer_seq: int) -> None:
        """Append this epoch's updates to the changelog, then write them and ``meta`` in one
        RocksDB write batch."""
        self.append_changelog(producer_seq)
        self.write_local(meta)

    def append_changelog(self, producer_seq: int, transaction: Any = None) -> None:
        """Append this epoch's updates to the changelog (through ``transaction``, an open
        exactly-once TaskTransaction, when given).

        One task writes a changelog partition, and this store reflects it up to its offset.
        Data past that offset was written by another process that ran the task meanwhile
        (this one was frozen or cut off: its commit will be fenced) or by an attempt of this
        epoch that crashed after appending: the store is then *overtaken*, and
        :meth:`write_local` writes nothing. So is a store whose append landed among another
        process's records, found by the partition's growth (a repeat of an earlier attempt's
        append that this store's offset already passes is not); transaction markers are not
        data."""
        log = self._changelog
        if log is None or not self._dirty:
            return
        newest = self._newest(log)
        own = self.changelog_offset or 0
        if newest != own and self._data_between(log, own, newest):
            self._overtaken = True
        # A delete carries the time it was written: compaction drops it after a retention.
        now_ms = int(time.time() * 1000)
        records = changelog_records(self._dirty, now_ms)
        if transaction is not None:
            transaction.append(log.stream_id, log.partition, records, producer_seq)
        else:
            log.system.append(
                log.stream_id, log.partition, records, producer=self.producer, producer_seq=producer_seq
            )
        kill_point("mid-store-flush")
        # (newest before, records, a commit marker may follow): write_local checks the growth.
        self._appended = (newest, len(records), transaction is not None)
        self._appended_seq = producer_seq

    def _changelog_dedup(self, appended: tuple[int, int, bool] | None, own: int | None) -> dict[str, Any]:
        """The changelog's dedup state as of the offset this store now reflects
        (runtime/task/changelog_dedup.py): after this epoch's append, or kept from before."""
        log = self._changelog
        if log is None or self.changelog_offset is None or not changelog_dedup_kept(log.system):
            return {}
        before = self.meta()
        if appended is not None:
            return changelog_state_after_append(
                log.system, before, own, self.producer, self._appended_seq, appended[1], self.changelog_offset
            )
        kept = before.get(CHANGELOG_DEDUP)
        return {CHANGELOG_DEDUP: kept} if kept and kept.get("position") == self.changelog_offset else {}

    @staticmethod
    def _newest(log: ChangelogRef) -> int:
        return log.system.newest_offsets(log.stream_id).get(log.partition, 0)

    @staticmethod
    def _data_between(log: ChangelogRef, start: int, end: int) -> bool:
        """Whether records (not transaction markers, which are gaps) lie in [start, end)."""
        if end <= start:
            return end != start  # the partition shrank below this store: not its history
        fetched = log.system.fetch(log.stream_id, log.partition, start, end, 1)
        return any(records for _first, records in fetched.batches)

    def write_local(self, meta: dict[str, Any]) -> None:
        """Write this epoch's updates and ``meta`` (with the changelog offset they reflect) in
        one RocksDB write batch.

        An overtaken store (see :meth:`append_changelog`) writes nothing and forgets its
        offset (its epoch's checkpoint then names none, so no standby takes this epoch as
        applied): the changelog holds this epoch as readers see it, and the store's next open
        catches up from it. Recording the newest offset with this process's own updates would
        skip, at that catch-up, whatever another process appended after them (a frozen
        processor that resumed once lost an epoch's counts so)."""
        appended, self._appended = self._appended, None
        log = self._changelog
        own = self.changelog_offset
        if appended is not None and not self._overtaken and log is not None:
            before, count, transactional = appended
            grown = self._newest(log) - before
            if grown == 0:
                # A repeat of an earlier attempt's append (the embedded log keeps the first
                # copy), which lies within what this store reflects: a restore or catch-up
                # passed it without applying it, as the epoch was not committed then, and this
                # store now applies the same epoch itself.
                self.changelog_offset = before
            elif count <= grown <= count + (1 if transactional else 0):
                # Exactly this epoch's records (and, in a transaction, maybe its commit marker).
                self.changelog_offset = before + grown
            else:  # another process's records around them
                self._overtaken = True
        if self._overtaken:
            self._overtaken = False
            self._dirty.clear()
            self.changelog_offset = None
            return
        if log is not None and self.changelog_offset is None:
            self.changelog_offset = self._newest(log)
        batch = WriteBatch(raw_mode=True)
        for key, value in self._dirty.items():
            if value is None:
                batch.delete(key)
            else:
                batch.put(key, value)
        if self.changelog_offset is not None:
            meta = {**meta, "changelogOffset": self.changelog_offset, **self._changelog_dedup(appended, own)}
        batch.put(_META_KEY, _json_encode(meta))
        self._write(batch)
        self._dirty.clear()

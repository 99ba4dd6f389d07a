"""Compaction of the embedded log: latest record per key, stable offsets, same restored state."""

from __future__ import annotations

import time
from pathlib import Path

from samza_nb.runtime.task.stores import ChangelogRef, TaskStore, is_tombstone, store_path
from samza_nb.systems import EmbeddedSystem
from samza_nb.systems.base import MessageKind, Record

_LOG = "app-1-s-changelog"


def _put(key: int, value: int) -> Record:
    return Record(MessageKind.USER, f"k{key}".encode(), b"\x01" + str(value).encode(), None)


def _delete(key: int, ts: int) -> Record:
    return Record(MessageKind.USER, f"k{key}".encode(), b"\x00", ts)


def _all(system: EmbeddedSystem, chunk: int) -> list[tuple[int, bytes | None, bytes]]:
    out = []
    offset, newest = 0, system.newest_offsets(_LOG)[0]
    for _ in range(10_000):
        if offset >= newest:
            break
        fetched = system.fetch(_LOG, 0, offset, newest, chunk)
        for first, records in fetched.batches:
            out.extend((first + i, key, value) for i, (_k, key, value, _t) in enumerate(records))
        assert fetched.next_offset > offset
        offset = fetched.next_offset
    return out


def _history(system: EmbeddedSystem) -> dict[bytes, bytes]:
    """Plain Python: the latest value per key over the whole log, deletes applied."""
    state: dict[bytes, bytes] = {}
    for _offset, key, value in _all(system, 1_000_000):
        assert key is not None
        if is_tombstone(value):
            state.pop(key, None)
        else:
            state[key] = value[1:]
    return state


def test_compaction_keeps_the_latest_record_per_key_at_its_offset(tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream(_LOG, 1, compacted=True)
    old = int(time.time() * 1000) - 60_000
    for batch in range(20):  # 20 batches of 50 updates over 30 keys, some deletes
        records = [_put((batch * 50 + i) % 30, batch * 50 + i) for i in range(50)]
        if batch % 5 == 4:
            records.append(_delete(batch % 30, old))
        system.append(_LOG, 0, records)
    before = _all(system, 1_000_000)
    expected = _history(system)
    latest = {}
    for offset, key, value in before:
        latest[key] = (offset, value)
    newest = system.newest_offsets(_LOG)[0]
    # Keep tombstones (long retention): the latest record of every key stays, at its offset.
    result = system.compact(_LOG, 0, newest, is_tombstone=is_tombstone, tombstone_retention_ms=3_600_000)
    assert result is not None and result.records_before == len(before)
    after = _all(system, 1_000_000)
    assert sorted((offset, key, value) for key, (offset, value) in latest.items()) == after
    assert result.records_after == len(after) == 30
    assert system.newest_offsets(_LOG)[0] == newest  # offsets stay stable
    # Readers of small chunks skip the holes and see the same records.
    assert _all(system, 7) == after
    assert _history(system) == expected
    assert system.tombstones_dropped_below(_LOG, 0) == 0
    # Appends after a compaction get the next offsets; a second compaction with retention 0
    # drops the old tombstones and remembers where.
    system.append(_LOG, 0, [_put(1, -1)])
    expected[b"k1"] = b"-1"
    result = system.compact(_LOG, 0, newest + 1, is_tombstone=is_tombstone, tombstone_retention_ms=0)
    assert result is not None and result.tombstones_dropped > 0
    assert _history(system) == expected
    assert system.tombstones_dropped_below(_LOG, 0) > 0
    assert all(not is_tombstone(value) for _o, _k, value in _all(system, 5))


def _store(system: EmbeddedSystem, root: Path, location: str) -> TaskStore:
    return TaskStore(
        "s", store_path(root, location, "Partition 0", "s"), ChangelogRef(system, _LOG, 0), "Partition 0", "p"
    )


def _epochs(system: EmbeddedSystem, root: Path, seqs: range, keys: int, deletes: bool = False) -> None:
    store = _store(system, root, "host-a")
    for seq in seqs:
        store.open(seq)
        for i in range(200):
            key = f"k{(seq * 200 + i) % keys}".encode()
            if deletes and i % 50 == 0:
                store.delete(key)
            else:
                store.put(key, str(seq * 200 + i).encode())
        store.flush({"seq": seq + 1}, seq)
        store.close()


def _restored(system: EmbeddedSystem, root: Path, location: str, seq: int) -> tuple[dict[bytes, bytes], int]:
    store = _store(system, root, location)
    store.open(seq)
    try:
        return dict(store.items()), store.restored_records
    finally:
        store.close()


def test_restore_from_a_compacted_changelog_yields_the_same_state(tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream(_LOG, 1, compacted=True)
    root = tmp_path / "stores"
    _epochs(system, root, range(10), keys=300, deletes=True)
    full, full_count = _restored(system, root, "host-b", 10)
    assert full_count == 2_000
    # Compact while a stale copy (host-c, at epoch 5) exists, then keep writing.
    _restored(system, root, "host-c", 5)
    newest = system.newest_offsets(_LOG)[0]
    assert system.compact(_LOG, 0, newest, is_tombstone=is_tombstone, tombstone_retention_ms=3_600_000)
    compacted, compacted_count = _restored(system, root, "host-d", 10)
    assert compacted == full
    assert compacted_count <= 300  # the live keys (and kept tombstones), not the history
    _epochs(system, root, range(10, 12), keys=300, deletes=True)
    fresh, _ = _restored(system, root, "host-e", 12)
    stale, stale_count = _restored(system, root, "host-c", 12)
    assert stale == fresh  # the stale copy replayed compacted holes and the new suffix
    assert stale_count < 2_400


def test_a_store_below_dropped_tombstones_restores_from_the_start(tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream(_LOG, 1, compacted=True)
    root = tmp_path / "stores"
    _epochs(system, root, range(2), keys=100)
    _restored(system, root, "host-c", 2)  # a stale copy holding every key
    _epochs(system, root, range(2, 4), keys=100, deletes=True)
    time.sleep(0.01)
    newest = system.newest_offsets(_LOG)[0]
    result = system.compact(_LOG, 0, newest, is_tombstone=is_tombstone, tombstone_retention_ms=0)
    assert result is not None and result.tombstones_dropped > 0
    fresh, _ = _restored(system, root, "host-e", 4)
    stale, stale_count = _restored(system, root, "host-c", 4)
    assert stale == fresh  # the deleted keys are gone from the stale copy too
    assert stale_count == len(fresh)  # it was rebuilt from the (compacted) start


def test_a_late_repeat_of_a_compacted_epochs_append_is_refused(tmp_path: Path) -> None:
    # A processor froze before its epoch's changelog append; the task's new owner appended the
    # same epoch (same producer and seq), committed, and went on; compaction then rewrote the
    # committed prefix without producers. The frozen one resumes and appends its copy of the
    # epoch: it must not land at the tail, where it would roll the task's state back.
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream(_LOG, 1, compacted=True)
    system.append(_LOG, 0, [_put(1, 10), _put(2, 20)], producer="app-1/Partition 0@plan-a", producer_seq=4)
    system.append(_LOG, 0, [_put(1, 11)], producer="app-1/Partition 0@plan-b", producer_seq=5)
    assert system.compact(_LOG, 0, system.newest_offsets(_LOG)[0]) is not None
    newest = system.newest_offsets(_LOG)[0]
    system.append(_LOG, 0, [_put(1, 10), _put(2, 20)], producer="app-1/Partition 0@plan-a", producer_seq=4)
    assert system.newest_offsets(_LOG)[0] == newest
    assert _history(system) == {b"k1": b"11", b"k2": b"20"}
    # The task's next epoch appends as usual.
    system.append(_LOG, 0, [_put(2, 21)], producer="app-1/Partition 0@plan-c", producer_seq=6)
    assert _history(system) == {b"k1": b"11", b"k2": b"21"}

"""Incremental restore: a stale store replays only the changelog after the offset it reflects."""

from __future__ import annotations

from pathlib import Path

import pytest

from samza_nb.runtime.task.stores import ChangelogRef, TaskStore, store_path
from samza_nb.systems import EmbeddedSystem

_LOG = "app-1-counts-changelog"


def _store(system: EmbeddedSystem, root: Path, location: str) -> TaskStore:
    changelog = ChangelogRef(system, _LOG, 0)
    return TaskStore("counts", store_path(root, location, "Partition 0", "counts"), changelog, "Partition 0", "p")


def _epoch(store: TaskStore, seq: int, keys: range) -> None:
    """One epoch of a task: open at ``seq``, bump ``keys``, flush as epoch ``seq``."""
    store.open(seq)
    for key in keys:
        raw = f"k{key}".encode()
        old = store.get(raw)
        store.put(raw, str(int(old or b"0") + 1).encode())
    store.flush({"seq": seq + 1}, seq)
    store.close()


def _contents(store: TaskStore, seq: int) -> dict[bytes, bytes]:
    store.open(seq)
    try:
        return dict(store.items())
    finally:
        store.close()


def test_a_stale_store_replays_only_the_suffix(tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream(_LOG, 1, compacted=True)
    at_a = _store(system, tmp_path / "stores", "host-a")
    for seq in range(5):  # 5 epochs at host-a, 100 updates each
        _epoch(at_a, seq, range(seq * 10, seq * 10 + 100))
    at_b = _store(system, tmp_path / "stores", "host-b")
    # The task moves to host-b: a missing store replays the whole changelog.
    at_b.open(5)
    assert at_b.restored_records == 500
    assert at_b.restored_bytes > 0
    assert at_b.restores == 1
    at_b.close()
    for seq in range(5, 8):  # 3 epochs at host-b, 30 updates each
        _epoch(at_b, seq, range(seq, seq + 30))
    # Back at host-a: only the 90 records host-b appended are replayed.
    back = _store(system, tmp_path / "stores", "host-a")
    back.open(8)
    assert back.restored_records == 90
    assert back.restores == 1
    back.close()
    assert _contents(_store(system, tmp_path / "stores", "host-a"), 8) == _contents(at_b, 8)
    # A store at the committed epoch replays nothing.
    same = _store(system, tmp_path / "stores", "host-b")
    same.open(8)
    assert same.restored_records == 0 and same.restores == 0
    same.close()


def test_uncommitted_epochs_are_not_replayed_and_offsets_ride_in_the_store(tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream(_LOG, 1, compacted=True)
    at_a = _store(system, tmp_path / "stores", "host-a")
    for seq in range(3):
        _epoch(at_a, seq, range(10))
    at_a.open(3)
    assert at_a.meta()["changelogOffset"] == 30 == at_a.changelog_offset
    at_a.close()
    # Epoch 3 flushed at host-a but never committed: host-b restoring seq 3 skips it.
    _epoch(at_a, 3, range(10, 20))
    at_b = _store(system, tmp_path / "stores", "host-b")
    at_b.open(3)
    assert at_b.restored_records == 30
    assert b"k15" not in dict(at_b.items())
    at_b.close()


@pytest.mark.parametrize("back_as", ["active", "standby"])
def test_a_store_whose_process_was_overtaken_catches_up_from_before_its_stale_epoch(
    tmp_path: Path, back_as: str
) -> None:
    # host-a runs epochs 0-1, then freezes in epoch 2; the task moves to host-b, which runs
    # epochs 2 and 3 (committed 4). host-a resumes and flushes its stale epoch 2: its changelog
    # append repeats host-b's (ignored), and its store must not claim the changelog's newest
    # offset, which includes host-b's epoch 3. Back at host-a, as the active (it opens the
    # store) or as a standby (it follows the changelog), the store must hold epoch 3 too.
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream(_LOG, 1, compacted=True)
    root = tmp_path / "stores"
    for seq in range(2):
        _epoch(_store(system, root, "host-a"), seq, range(seq * 10, seq * 10 + 20))
    frozen = _store(system, root, "host-a")
    frozen.open(2)
    for key in range(20, 40):  # epoch 2's updates, not flushed yet
        frozen.put(f"k{key}".encode(), b"1")
    for seq in range(2, 4):
        _epoch(_store(system, root, "host-b"), seq, range(seq * 10, seq * 10 + 20))
    frozen.flush({"seq": 3}, 2)  # resumed: its commit will be fenced
    assert frozen.changelog_offset is None  # its checkpoint would name no offset for it
    frozen.close()
    back = _store(system, root, "host-a")
    if back_as == "standby":
        assert back.follow(4, system.newest_offsets(_LOG)[0])
        back.close()
    assert _contents(back, 4) == _contents(_store(system, root, "host-b"), 4)


def _log_after_epoch_0(tmp_path: Path) -> tuple[EmbeddedSystem, Path]:
    """A changelog holding host-a's epoch 0 (20 keys), and the stores' root."""
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream(_LOG, 1, compacted=True)
    root = tmp_path / "stores"
    _epoch(_store(system, root, "host-a"), 0, range(20))
    return system, root


@pytest.mark.parametrize("retried_at", ["host-a", "host-b"])
def test_an_epoch_retried_after_a_crash_past_its_changelog_append_is_applied_once(
    tmp_path: Path, retried_at: str
) -> None:
    # host-a appends epoch 1 and dies before writing its store and committing. The retry, at
    # the same location (its store's offset is before the append) or elsewhere (its restore
    # passes the uncommitted records without applying them), repeats the append and runs
    # epoch 2: its store must hold epoch 1 once.
    system, root = _log_after_epoch_0(tmp_path)
    crashed = _store(system, root, "host-a")
    crashed.open(1)
    for key in range(10, 30):
        raw = f"k{key}".encode()
        crashed.put(raw, str(int(crashed.get(raw) or b"0") + 1).encode())
    crashed.append_changelog(1)
    crashed.close()
    for seq, keys in ((1, range(10, 30)), (2, range(0, 5))):
        _epoch(_store(system, root, retried_at), seq, keys)
    got = _contents(_store(system, root, retried_at), 3)
    assert got == _contents(_store(system, root, "host-c"), 3)  # rebuilt from the changelog alone
    assert got[b"k15"] == b"2" and got[b"k0"] == b"2" and got[b"k25"] == b"1"


def test_a_store_frozen_between_its_append_and_its_write_claims_nothing_past_its_own_records(
    tmp_path: Path,
) -> None:
    # host-a appends epoch 1 to the changelog, then freezes before writing its store; host-b
    # takes the task over (its epoch 1 repeats host-a's append) and runs epoch 2. host-a's
    # store must not take the partition's newest offset, which includes host-b's epoch 2.
    system, root = _log_after_epoch_0(tmp_path)
    frozen = _store(system, root, "host-a")
    frozen.open(1)
    for key in range(20, 30):
        frozen.put(f"k{key}".encode(), b"1")
    frozen.append_changelog(1)
    for seq in (1, 2):
        _epoch(_store(system, root, "host-b"), seq, range(seq * 10 + 10, seq * 10 + 20))
    frozen.write_local({"seq": 2})
    assert frozen.changelog_offset is None
    frozen.close()
    assert _contents(_store(system, root, "host-a"), 3) == _contents(_store(system, root, "host-b"), 3)


def test_a_store_opened_with_a_stale_checkpoint_stops_before_the_epochs_committed_since(tmp_path: Path) -> None:
    # host-a's processor read the task's checkpoint (seq 2), planned epoch 2 and froze before
    # opening the store; meanwhile host-b ran epochs 2 and 3 (committed 4), epoch 3 deleting a
    # key of epoch 0. Resumed, host-a restores its missing store for seq 2: the restore must
    # not pass host-b's epochs (it does not apply them), or the store, once the task comes
    # back, catches up from past them and keeps the deleted key (a window pane that fired
    # fires again: counted twice).
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream(_LOG, 1, compacted=True)
    root = tmp_path / "stores"
    for seq in range(2):
        _epoch(_store(system, root, "host-a"), seq, range(seq * 10, seq * 10 + 20))
    end_of_epoch_1 = system.newest_offsets(_LOG)[0]
    at_b = _store(system, root, "host-b")
    _epoch(at_b, 2, range(20, 40))
    at_b.open(3)
    at_b.delete(b"k0")
    at_b.flush({"seq": 4}, 3)
    at_b.close()
    stale = _store(system, root, "host-c")
    stale.open(2)  # its view: epoch 2 not committed yet
    assert stale.changelog_offset == end_of_epoch_1
    assert b"k0" in dict(stale.items())
    for key in range(20, 40):  # its epoch 2, as host-b ran it
        stale.put(f"k{key}".encode(), b"1")
    stale.flush({"seq": 3}, 2)  # the append repeats host-b's; its commit will be fenced
    assert stale.changelog_offset is None
    stale.close()
    back = _contents(_store(system, root, "host-c"), 4)
    assert b"k0" not in back
    assert back == _contents(_store(system, root, "host-b"), 4)

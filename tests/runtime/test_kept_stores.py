"""Stores kept open between task epochs (runtime/task/kept_stores.py): a task epoch that succeeded
keeps its stores open in a process serving as a resident worker, a failed one closes them; a
store another process holds open is waited for (bounded), never taken for corrupt and rebuilt;
a standby step at the active's own location leaves the active's open store alone."""

from __future__ import annotations

import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from rocksdict import Options, Rdict

import samza_nb.runtime.task.rocksdb_open as rocksdb_open
from samza_nb.api import KV, StreamApplication, Windows
from samza_nb.errors import JobError
from samza_nb.examples.page_views import (
    build_app,
    expected_counts,
    generate_page_views,
    write_page_views,
)
from samza_nb.job import run
from samza_nb.runtime.task.kept_stores import keeping_stores_open, kept_stores
from samza_nb.runtime.task.stores import (
    ChangelogRef,
    StoreHeldOpen,
    TaskStore,
    store_path,
    task_store_folder,
)
from samza_nb.systems import EmbeddedSystem
from samza_nb.testing import StepClock

_LOG = "app-1-counts-changelog"
_HOLD = """
import sys, time
from rocksdict import Options, Rdict
db = Rdict(sys.argv[1], Options(raw_mode=True))
print("held", flush=True)
time.sleep(float(sys.argv[2]))
db.close()
"""


def _store(system: EmbeddedSystem, root: Path) -> TaskStore:
    changelog = ChangelogRef(system, _LOG, 0)
    return TaskStore("counts", store_path(root, "host-a", "Partition 0", "counts"), changelog, "Partition 0", "p")


def _one_epoch(store: TaskStore, seq: int) -> None:
    store.open(seq)
    store.put(b"k", str(seq).encode())
    store.flush({"seq": seq + 1}, seq)
    store.close()


def _held_by_another_process(path: Path, seconds: float) -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(path), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def test_a_store_held_by_another_process_is_waited_for_then_opened(tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream(_LOG, 1, compacted=True)
    store = _store(system, tmp_path / "stores")
    _one_epoch(store, 0)
    holder = _held_by_another_process(store.path, 0.5)
    try:
        started = time.monotonic()
        meta = store.open(1)
        waited = time.monotonic() - started
    finally:
        holder.wait(timeout=30)
    assert waited >= 0.2  # it waited for the holder instead of rebuilding the store
    assert meta["seq"] == 1 and store.get(b"k") == b"0"
    assert store.rebuilt_because is None and store.restores == 0
    store.close()


def test_a_store_held_too_long_fails_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream(_LOG, 1, compacted=True)
    store = _store(system, tmp_path / "stores")
    _one_epoch(store, 0)
    monkeypatch.setattr(rocksdb_open, "_LOCK_WAIT_S", 0.3)
    holder = _held_by_another_process(store.path, 5)
    try:
        with pytest.raises(StoreHeldOpen) as raised:
            store.open(1)
    finally:
        holder.kill()
        holder.wait(timeout=30)
    message = str(raised.value)
    assert "store 'counts' of task 'Partition 0'" in message and str(store.path) in message
    assert "held open by another process" in message
    # Nothing was wiped: the store still holds its epoch.
    reopened = Rdict(str(store.path), Options(raw_mode=True))
    assert reopened.get(b"k") == b"0"
    reopened.close()


def test_a_standby_step_leaves_a_store_its_active_holds_open_alone(tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream(_LOG, 1, compacted=True)
    store = _store(system, tmp_path / "stores")
    for seq in range(3):
        _one_epoch(store, seq)
    holder = _held_by_another_process(store.path, 5)
    try:
        started = time.monotonic()
        applied = _store(system, tmp_path / "stores").follow(3, 3)
        assert time.monotonic() - started < 2  # no wait for the active's lock
    finally:
        holder.kill()
        holder.wait(timeout=30)
    assert applied is None  # nothing applied: the standby step does not advance
    assert store.open(3)["seq"] == 3 and store.restores == 0  # not rebuilt under its holder
    store.close()


def test_a_store_this_process_holds_fails_at_once_and_is_not_rebuilt(tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream(_LOG, 1, compacted=True)
    store = _store(system, tmp_path / "stores")
    _one_epoch(store, 0)
    leaked = Rdict(str(store.path), Options(raw_mode=True))
    try:
        started = time.monotonic()
        with pytest.raises(JobError, match="cannot be opened here"):
            _store(system, tmp_path / "stores").open(1)
        assert time.monotonic() - started < 2  # no wait: no other process will release it
        assert leaked.get(b"k") == b"0"  # not wiped and rebuilt
    finally:
        leaked.close()


def _failing_app(system: EmbeddedSystem) -> StreamApplication:
    app = StreamApplication("failing", job_id="1")
    views = app.input(system.input("page-views", partitions=4, serde="json"))
    counts = app.output(system.output("failing-counts", partitions=4, serde="json"))

    def refuse(view: dict[str, Any]) -> dict[str, Any]:
        msg = f"refused {view['user']}"
        raise ValueError(msg)

    (
        views.map(refuse)
        .partition_by(lambda view: view["page"], op_id="by-page")
        .window(Windows.keyed_tumbling(lambda kv: kv.key, timedelta(seconds=10), initial=lambda: 0,
                                       fold=lambda kv, n: n + 1), op_id="count")
        .map(lambda pane: KV(pane.key.key, pane.message))
        .send_to(counts)
    )
    return app


def test_succeeded_task_epochs_keep_their_stores_open_and_failed_ones_close_them(tmp_path: Path) -> None:
    events = generate_page_views(1_500, seed=21)
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    write_page_views(system, events)
    config = {"task.max.epoch.messages": "200", "job.home": str(tmp_path / "home")}
    assert kept_stores() is None  # only inside a resident worker
    with keeping_stores_open() as kept:
        job = run(build_app(system), config, clock=StepClock(), executor="local")
        assert job.collect("page-counts").groupby("key")["value"].sum().to_dict() == expected_counts(events)
        held = sorted(kept._open)
        assert len(held) == 4  # the window store of each of the 4 tasks, open since its first epoch
        for path in held:
            with pytest.raises(Exception, match="lock"):  # RocksDB: this process holds it
                Rdict(path, Options(raw_mode=True))
        # A job whose every task epoch fails keeps none of its stores open.
        with pytest.raises(JobError, match="refused"):
            run(_failing_app(system), {"job.home": str(tmp_path / "failing")}, clock=StepClock(), executor="local")
        assert sorted(kept._open) == held
        one = str(Path(held[0]).parent)
        assert kept.holds_under(one) and kept.release([one]) == 1 and not kept.holds_under(one)
    assert kept_stores() is None and not kept._open  # all closed on leaving
    for path in held:
        Rdict(path, Options(raw_mode=True)).close()


def test_the_task_store_folder_is_the_parent_of_its_stores(tmp_path: Path) -> None:
    folder = task_store_folder(tmp_path, "host a/1", "Partition 0")
    assert str(store_path(tmp_path, "host a/1", "Partition 0", "counts").parent) == folder


def test_beyond_its_limit_a_worker_closes_the_store_idle_longest(monkeypatch: pytest.MonkeyPatch) -> None:
    import samza_nb.runtime.task.kept_stores as kept_module

    closed: list[str] = []

    class Handle:
        def __init__(self, name: str) -> None:
            self.name = name

        def close(self) -> None:
            closed.append(self.name)

    monkeypatch.setattr(kept_module, "KEPT_LIMIT", 2)
    kept = kept_module.KeptStores()
    for name in ("a", "b"):
        kept.keep(Path(f"/stores/here/{name}/counts"), Handle(name))
    again = kept.take(Path("/stores/here/a/counts"))  # a's task ran again: b is idle longest
    assert again is not None
    kept.keep(Path("/stores/here/a/counts"), again)
    kept.keep(Path("/stores/here/c/counts"), Handle("c"))
    assert closed == ["b"]
    assert kept.holds_under("/stores/here/a") and not kept.holds_under("/stores/here/b")

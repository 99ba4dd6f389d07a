"""Drain on the engine: stop a running two-shuffle pipeline with nothing lost (Drain SEP)."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from samza_nb.api import KV, StreamApplication, Windows
from samza_nb.drain import read_drain_notifications, write_drain_notification
from samza_nb.job import metadata_store_path, run
from samza_nb.metadata import EmbeddedMetadataStore
from samza_nb.systems import EmbeddedSystem

pytestmark = pytest.mark.spark


def two_shuffle_app(system: EmbeddedSystem, *, first_op: str = "by-user", name: str = "drainer") -> StreamApplication:
    app = StreamApplication(name)
    out = app.output(system.output("window-counts", partitions=2))
    (
        app.input(system.input("events", partitions=2))
        .map(lambda e: {**e, "seen": True})
        .partition_by(lambda e: e["user"], lambda e: e, op_id=first_op)
        .map(lambda kv: kv.value)
        .partition_by(lambda e: e["page"], lambda e: e, op_id="by-page")
        .window(
            Windows.keyed_tumbling(lambda kv: kv.key, timedelta(hours=1), initial=lambda: 0,
                                   fold=lambda kv, n: n + 1),
            op_id="count",
        )
        .map(lambda pane: KV(pane.key.key, pane.message))
        .send_to(out)
    )
    return app


def events(start: int, count: int) -> list[dict[str, Any]]:
    return [{"user": f"u{i % 7}", "page": f"p{i % 5}", "i": i} for i in range(start, start + count)]


class StepClock:
    def __init__(self) -> None:
        self.now = 10_000_000

    def __call__(self) -> int:
        self.now += 1_000
        return self.now


@pytest.fixture
def system(tmp_path: Path) -> EmbeddedSystem:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream("events", 2)
    return system


def test_drain_mid_run_stops_and_counts_every_message_read(spark: Any, system: EmbeddedSystem) -> None:
    system.write("events", events(0, 400))
    config = {"task.max.epoch.messages": "50", "job.drain-monitor.poll.interval.ms": "20"}
    job = run(two_shuffle_app(system), config, until="forever", background=True, clock=StepClock())
    deadline = time.monotonic() + 120
    while job.epoch < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    system.write("events", events(400, 100))
    status = job.drain(wait=True, timeout=300)
    assert status.state == "drained"
    read = job.metrics()["streams"]["events"]["in"]
    assert 0 < read <= 500
    counts = job.collect("window-counts")
    assert int(counts["value"].sum()) == read  # every message read is in a window count
    for stream in ("drainer-1-partition_by-by-user", "drainer-1-partition_by-by-page"):
        assert system.read(stream).empty  # no unprocessed data messages left
    states = job.drain_states()
    assert states.all_drained
    assert {row["expected"] for row in states.rows if "partition_by" in row["stream"]} == {2}
    by_stream: dict[str, list[int]] = {}
    for row in states.rows:
        by_stream.setdefault(row["stream"], []).append(row["drained_epoch"])
    # Drain starts at the sources and propagates downstream, shuffle by shuffle.
    assert max(by_stream["events"]) <= min(by_stream["drainer-1-partition_by-by-user"])
    assert max(by_stream["drainer-1-partition_by-by-user"]) <= min(
        by_stream["drainer-1-partition_by-by-page"]
    )
    # One history entry for the first epoch and for every epoch that changed a DrainState.
    epochs = [epoch for epoch, _rows in states.history]
    assert epochs[0] == 1 and epochs == sorted(set(epochs)) and epochs[-1] <= job.epoch
    assert len(epochs) >= 2 * 2 + 1  # sources, then each shuffle's send and re-broadcast
    assert read_drain_notifications(job.metadata) == []  # the run's notifications are cleaned up
    # A backlog in the intermediate streams adds no epoch: each shuffle costs the send to the
    # aggregate partition and its re-broadcast (docs/decisions.md), plus the source epoch.
    assert job.drain_seen_epoch is not None
    assert job.epoch - job.drain_seen_epoch <= 2 * 2 + 1


def test_drain_before_start_reads_no_source_data(spark: Any, system: EmbeddedSystem) -> None:
    system.write("events", events(0, 100))
    app = two_shuffle_app(system, name="early")
    config = {"app.run.id": "run-early", "job.drain-monitor.poll.interval.ms": "20"}
    # The notification goes into the job's metadata store before the job ever ran.
    store = EmbeddedMetadataStore(metadata_store_path(app.plan(config)))
    write_drain_notification(store, "run-early")
    store.close()
    job = run(app, config, until="forever", clock=StepClock())
    assert job.status().state == "drained"
    assert job.metrics()["streams"].get("events", {}).get("in", 0) == 0
    # Every event is still unread: each of the two tasks lags by its partition's 50.
    assert sorted(task["lag"] for task in job.status().tasks.values()) == [50, 50]
    assert read_drain_notifications(job.metadata) == []


def test_upgrade_after_drain_with_new_op_id_and_run_id(spark: Any, system: EmbeddedSystem) -> None:
    system.write("events", events(0, 300))
    config = {"task.max.epoch.messages": "40", "job.drain-monitor.poll.interval.ms": "20"}
    old = run(two_shuffle_app(system, name="upgrade"), {**config, "app.run.id": "v1"},
              until="forever", background=True, clock=StepClock())
    deadline = time.monotonic() + 120
    while old.epoch < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert old.drain(wait=True, timeout=300).state == "drained"
    read_before = old.metrics()["streams"]["events"]["in"]
    system.write("events", events(300, 200))
    system.end_stream("events")
    new = run(two_shuffle_app(system, name="upgrade", first_op="by-user-v2"),
              {**config, "app.run.id": "v2"}, until="end-of-stream", clock=StepClock())
    assert new.status().state == "finished"
    read_after = new.metrics()["streams"]["events"]["in"]
    assert read_before + read_after == 500  # nothing lost, nothing read twice
    assert int(new.collect("window-counts")["value"].sum()) == 500

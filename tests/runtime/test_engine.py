"""The engine end to end on the shared local SparkSession."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from samza_nb.api import KV, LocalTable, StreamApplication, Windows
from samza_nb.errors import TaskError
from samza_nb.examples.page_views import (
    build_app,
    expected_counts,
    generate_page_views,
    write_page_views,
)
from samza_nb.job import run
from samza_nb.systems import EmbeddedSystem

pytestmark = pytest.mark.spark


@pytest.fixture
def system(tmp_path: Path) -> EmbeddedSystem:
    return EmbeddedSystem("embedded", path=tmp_path / "log")


class StepClock:
    """Processing time that advances a fixed step per epoch."""

    def __init__(self, start: int = 1_000_000, step: int = 1_000):
        self.now = start
        self.step = step

    def __call__(self) -> int:
        self.now += self.step
        return self.now


def test_quickstart_counts_equal_plain_python(spark: Any, system: EmbeddedSystem) -> None:
    events = generate_page_views(3_000)
    write_page_views(system, events)
    job = run(build_app(system), until="end-of-stream", clock=StepClock())
    assert job.status().state == "finished"
    frame = job.collect("page-counts")
    assert frame.groupby("key")["value"].sum().to_dict() == expected_counts(events)
    metrics = job.metrics()
    assert metrics["streams"]["page-views"]["in"] == 3_000
    # Steady state: a store is never rebuilt from its changelog between epochs.
    assert all(task["restores"] == 0 for task in metrics["tasks"].values())


def test_forty_messages_through_a_shuffle_end_by_themselves(spark: Any, system: EmbeddedSystem) -> None:
    system.create_stream("numbers", 4)
    system.write("numbers", range(40))
    system.end_stream("numbers")
    app = StreamApplication("forty")
    out = app.output(system.output("out", partitions=4))
    (
        app.input(system.input("numbers", partitions=4))
        .map(lambda n: n * 10)
        .partition_by(lambda n: n % 7, op_id="p1")
        .map(lambda kv: kv.value)
        .send_to(out)
    )
    job = run(app, until="end-of-stream")
    assert job.status().state == "finished"
    assert sorted(job.collect("out")["value"]) == [n * 10 for n in range(40)]
    # Consumed intermediate data is deleted once every consumer's checkpoint passed it.
    assert system.read("forty-1-partition_by-p1").empty


def test_source_watermarks_reach_both_sinks_as_the_minimum(spark: Any, system: EmbeddedSystem) -> None:
    system.create_stream("s", 2)
    system.write_watermark("s", 0, 1)
    system.write_watermark("s", 0, 4)
    system.write_watermark("s", 1, 2)
    system.write_watermark("s", 1, 3)
    system.end_stream("s")
    app = StreamApplication("wm")
    (
        app.input(system.input("s", partitions=2))
        .map(lambda m: m)
        .partition_by(lambda m: m, op_id="p1")
        .sink(lambda m: None)
    )
    job = run(app, until="end-of-stream")
    sinks = {
        task: marks
        for task, ops in job.operator_watermarks().items()
        for op_id, marks in ops.items()
        if "-sink-" in op_id
        for marks in [marks]
    }
    assert sinks == {"Partition 0": (3, 3), "Partition 1": (3, 3)}


def test_failing_user_function_names_operator_task_ssp_offset(spark: Any, system: EmbeddedSystem) -> None:
    system.create_stream("s", 1)
    system.write("s", [1, 2, 0, 4])
    system.end_stream("s")
    app = StreamApplication("boom")
    out = app.output(system.output("out", partitions=1))
    app.input(system.input("s", partitions=1)).map(lambda n: 10 // n).send_to(out)
    with pytest.raises(TaskError) as failure:
        run(app, until="end-of-stream")
    error = failure.value
    assert error.op_id == "boom-1-map-1"
    assert (error.task, error.ssp, error.offset) == ("Partition 0", "s#0", 2)
    assert "ZeroDivisionError" in str(error)
    assert system.read("out").empty  # nothing of the failed epoch was committed
    skipped = run(app, {"task.errors.skip": "true"}, until="end-of-stream")
    assert sorted(skipped.collect("out")["value"]) == [2, 5, 10]
    assert skipped.metrics()["tasks"]["Partition 0"]["skipped"] == 1


def test_bad_message_is_a_task_error_at_the_input(spark: Any, system: EmbeddedSystem) -> None:
    system.create_stream("s", 1)
    system.write("s", ["ok"], serde=_Raw())
    system.write("s", [b"\xff not json"], serde=_Raw())
    system.end_stream("s")
    app = StreamApplication("bad")
    app.input(system.input("s", partitions=1)).sink(lambda m: None)
    with pytest.raises(TaskError, match="offset 1") as failure:
        run(app, until="end-of-stream")
    assert failure.value.op_id == "bad-1-input-0"


class _Raw:
    def to_bytes(self, value: Any) -> bytes:
        return value if isinstance(value, bytes) else f'"{value}"'.encode()

    def from_bytes(self, data: bytes) -> Any:
        return data


def test_session_windows_collect_and_flush_at_end_of_stream(spark: Any, system: EmbeddedSystem) -> None:
    system.create_stream("clicks", 2)
    clicks = [{"user": f"u{i % 5}", "n": i} for i in range(50)]
    system.write("clicks", clicks, key_fn=lambda c: c["user"])
    system.end_stream("clicks")
    app = StreamApplication("sessions")
    out = app.output(system.output("sessions-out", partitions=2))
    (
        app.input(system.input("clicks", partitions=2))
        .partition_by(lambda c: c["user"], op_id="by-user")
        .window(Windows.keyed_session(lambda kv: kv.key, timedelta(minutes=5)), op_id="session")
        .map(lambda pane: KV(pane.key.key, sorted(kv.value["n"] for kv in pane.message)))
        .send_to(out)
    )
    job = run(app, until="end-of-stream", clock=StepClock())
    frame = job.collect("sessions-out")
    got = {key: value for key, value in zip(frame["key"], frame["value"], strict=True)}
    expected = {f"u{u}": [i for i in range(50) if i % 5 == u] for u in range(5)}
    assert got == expected


def test_stream_table_join_and_stream_stream_join(spark: Any, system: EmbeddedSystem) -> None:
    system.create_stream("profiles", 2)
    system.create_stream("orders", 2)
    system.create_stream("payments", 2)
    profiles = [{"user": f"u{i}", "name": f"Name{i}"} for i in range(10)]
    orders = [{"user": f"u{i % 10}", "order": i} for i in range(30)]
    payments = [{"order": i, "amount": i * 2} for i in range(0, 30, 3)]
    system.write("profiles", profiles, key_fn=lambda p: p["user"])
    system.end_stream("profiles")
    app = StreamApplication("joins")
    table = app.table(LocalTable("profiles-table"))
    app.input(system.input("profiles", partitions=2)).partition_by(
        lambda p: p["user"], lambda p: p["name"], op_id="profiles-by-user"
    ).send_to(table)
    enriched = app.output(system.output("enriched", partitions=2))
    joined = app.output(system.output("joined", partitions=2))
    by_user = app.input(system.input("orders", partitions=2)).partition_by(
        lambda o: o["user"], op_id="orders-by-user"
    )
    by_user.join_table(
        table, lambda kv, profile: {"order": kv.value["order"], "name": profile.value if profile else None}
    ).send_to(enriched)
    by_order = by_user.partition_by(lambda kv: kv.value["order"], lambda kv: kv.value, op_id="orders-by-id")
    pays = app.input(system.input("payments", partitions=2)).partition_by(
        lambda p: p["order"], op_id="payments-by-id"
    )
    by_order.join(
        pays, lambda o, p: {"order": o.key, "amount": p.value["amount"]}, ttl=timedelta(hours=1), op_id="pay"
    ).send_to(joined)
    # Profiles first (a bounded table load), then the orders and payments.
    run(app, until="caught-up", clock=StepClock())
    system.write("orders", orders, key_fn=lambda o: o["user"])
    system.write("payments", payments, key_fn=lambda p: p["order"])
    system.end_stream("orders")
    system.end_stream("payments")
    job = run(app, until="end-of-stream", clock=StepClock())
    names = {row["order"]: row["name"] for row in job.collect("enriched")["value"]}
    assert names == {o["order"]: f"Name{o['order'] % 10}" for o in orders}
    amounts = sorted((row["order"], row["amount"]) for row in job.collect("joined")["value"])
    assert amounts == [(p["order"], p["amount"]) for p in payments]


def test_killing_a_processor_moves_only_its_tasks_and_loses_nothing(spark: Any, system: EmbeddedSystem) -> None:
    events = generate_page_views(4_000, seed=3)
    write_page_views(system, events[:2_000], partitions=6, end=False)
    app = build_app(system, name="killed", partitions=6)
    config = {"task.max.epoch.messages": "200", "processor.locations": "host-a,host-b,host-c"}
    job = run(app, config, processors=3, grouper="host-affinity", until="end-of-stream",
              background=True, clock=StepClock())
    before = {pid: set(c.tasks) for pid, c in job.job_model.containers.items()}
    _wait_for_epochs(job, 2)
    # Processors run their own epochs: wait until processor 1's tasks have window state.
    shuffle = next(iter(job.plan.intermediate_streams))
    import time

    deadline = time.monotonic() + 120
    while not all(
        any(k.startswith(shuffle) and v > 0 for k, v in job.checkpoints.read(task).offsets.items())
        for task in before["1"]
    ):
        assert time.monotonic() < deadline, "processor 1's tasks read no shuffled message in 120 s"
        time.sleep(0.05)
    after_model = job.kill_processor("1")
    after = {pid: set(c.tasks) for pid, c in after_model.containers.items()}
    assert after["0"] >= before["0"] and after["2"] >= before["2"]
    moved = (after["0"] - before["0"]) | (after["2"] - before["2"])
    assert moved == before["1"]
    system.write("page-views", events[2_000:])
    system.end_stream("page-views")
    status = job.wait(timeout=300)
    assert status.state == "finished"
    totals = job.collect("page-counts").groupby("key")["value"].sum().to_dict()
    assert totals == expected_counts(events)
    restored = sum(t["restored_records"] for t in job.metrics()["tasks"].values())
    assert restored > 0  # the moved tasks rebuilt their windows at a new location


def _wait_for_epochs(job: Any, epochs: int) -> None:
    import time

    deadline = time.monotonic() + 120
    while job.epoch < epochs and time.monotonic() < deadline:
        time.sleep(0.05)
    assert job.epoch >= epochs

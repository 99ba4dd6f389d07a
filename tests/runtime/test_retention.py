"""Retention of intermediate streams: what every consumer committed is deleted, off the epoch
path (runtime/processor/retention.py BackgroundRetention), and a failing pass still fails the job.
Run on the in-process executor."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from samza_nb.api import StreamApplication
from samza_nb.errors import StreamSystemError
from samza_nb.model import SystemStreamPartition
from samza_nb.systems import EmbeddedSystem
from samza_nb.testing import run_local


@pytest.fixture
def system(tmp_path: Path) -> EmbeddedSystem:
    return EmbeddedSystem("embedded", path=tmp_path / "log")


def _reshuffled(system: EmbeddedSystem, count: int) -> StreamApplication:
    system.create_stream("numbers", 2)
    system.write("numbers", list(range(count)))
    system.end_stream("numbers")
    app = StreamApplication("retained", job_id="1")
    out = app.output(system.output("out", partitions=2))
    app.input(system.input("numbers", partitions=2)).partition_by(_tens, op_id="by-tens").send_to(out)
    return app


def _tens(n: int) -> int:
    return n // 10


def _intermediate(system: EmbeddedSystem) -> str:
    (stream,) = [s for s in system.list_streams() if "partition_by-by-tens" in s]
    return stream


def test_consumed_intermediate_data_is_deleted_when_the_job_ends(system: EmbeddedSystem) -> None:
    app = _reshuffled(system, 3_000)
    job = run_local(app, {"task.max.epoch.messages": "200"})
    assert job.status().state == "finished"
    assert len(job.collect("out")) == 3_000
    stream = _intermediate(system)
    newest, oldest = system.newest_offsets(stream), system.oldest_offsets(stream)
    assert sum(newest.values()) >= 3_000
    # Every consumer committed past every message: nothing older than the last batch is left.
    for partition, end in newest.items():
        assert oldest[partition] > 0, f"partition {partition}: nothing deleted (oldest 0 of {end})"
        assert end - oldest[partition] <= 210, f"partition {partition}: {end - oldest[partition]} kept"
    # The retention thread ended with the job's processor.
    assert [t for t in threading.enumerate() if t.name == "samza-nb-intermediate-retention"] == []


def test_a_failing_retention_pass_fails_the_job_with_its_error(
    system: EmbeddedSystem, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = _reshuffled(system, 2_000)

    def refuse(self: EmbeddedSystem, deletions: list[tuple[str, int, int]]) -> None:
        stream_id, partition, offset = deletions[0]
        msg = f"embedded log: cannot delete {stream_id}[{partition}] below {offset}"
        raise StreamSystemError(msg)

    monkeypatch.setattr(EmbeddedSystem, "delete_before_all", refuse)
    with pytest.raises(StreamSystemError, match=r"cannot delete .*partition_by-by-tens\[\d\] below \d+"):
        run_local(app, {"task.max.epoch.messages": "200"})



def test_a_pass_deletes_in_one_transaction_and_skips_partitions_whose_consumers_did_not_move(
    system: EmbeddedSystem, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each write transaction of the log is one the tasks' appends wait for.
    app = _reshuffled(system, 3_000)
    calls: list[list[tuple[str, int, int]]] = []
    one_by_one: list[tuple[str, int, int]] = []
    delete_all = EmbeddedSystem.delete_before_all
    delete_one = EmbeddedSystem.delete_before

    def recorded_all(self: EmbeddedSystem, deletions: list[tuple[str, int, int]]) -> int:
        calls.append(list(deletions))
        return delete_all(self, deletions)

    def recorded_one(self: EmbeddedSystem, stream_id: str, partition: int, offset: int) -> int:
        one_by_one.append((stream_id, partition, offset))
        return delete_one(self, stream_id, partition, offset)

    monkeypatch.setattr(EmbeddedSystem, "delete_before_all", recorded_all)
    monkeypatch.setattr(EmbeddedSystem, "delete_before", recorded_one)
    job = run_local(app, {"task.max.epoch.messages": "200"})
    assert len(job.collect("out")) == 3_000
    assert one_by_one == []
    stream = _intermediate(system)
    # A pass after an epoch in which both consumers moved asks for both partitions at once.
    assert any({p for name, p, _ in deletions if name == stream} == {0, 1} for deletions in calls)
    seen: dict[tuple[str, int], int] = {}
    for deletions in calls:
        for stream_id, partition, offset in deletions:
            # Asked again only when its consumers moved past where the last pass deleted.
            assert offset > seen.get((stream_id, partition), 0)
            seen[(stream_id, partition)] = offset
    assert {partition for (name, partition) in seen if name == stream} == {0, 1}
    # What the last pass asked for is gone (a batch it ends inside stays whole).
    oldest = system.oldest_offsets(stream)
    assert all(0 < oldest[p] <= seen[(stream, p)] for p in (0, 1)), (oldest, seen)


def test_deleting_below_where_nothing_is_left_takes_no_write_transaction(system: EmbeddedSystem) -> None:
    from samza_nb.systems import MessageKind, Record

    system.create_stream("s", 2)
    system.append("s", 0, [Record(MessageKind.USER, None, b"x", None)] * 3)
    system.append("s", 1, [Record(MessageKind.USER, None, b"y", None)] * 3)
    assert system.delete_before_all([("s", 0, 3), ("s", 1, 2)]) == 3  # partition 1's batch spans 2
    assert system.oldest_offsets("s") == {0: 3, 1: 0}
    statements: list[str] = []
    system._db().set_trace_callback(statements.append)
    try:
        assert system.delete_before_all([("s", 0, 3), ("s", 1, 2)]) == 0
    finally:
        system._db().set_trace_callback(None)
    assert not any(statement.startswith(("BEGIN", "DELETE", "UPDATE")) for statement in statements)


def test_the_checkpoints_are_read_on_the_retention_thread_once_per_pass(system: EmbeddedSystem) -> None:
    # In a distributed job reading every task's checkpoint is a request per task to ZooKeeper
    # or Azure: the epoch does not wait for it, and epochs ending while a pass runs share one.
    from samza_nb.runtime.checkpoints import Checkpoint
    from samza_nb.runtime.processor.retention import BackgroundRetention

    plan = _reshuffled(system, 100).plan()
    release = threading.Event()
    reads: list[str] = []

    def read() -> dict[str, Checkpoint]:
        reads.append(threading.current_thread().name)
        release.wait(10)
        return {}

    retention = BackgroundRetention(plan)
    ssps: dict[str, frozenset[SystemStreamPartition]] = {"t": frozenset()}
    retention.after_epoch(ssps, read)
    deadline = time.monotonic() + 10
    while not reads and time.monotonic() < deadline:
        time.sleep(0.01)
    for _ in range(4):  # while the first pass waits in its read: the four collapse into one
        retention.after_epoch(ssps, read)
    release.set()
    retention.close(10)
    assert reads == ["samza-nb-intermediate-retention"] * 2, reads


def test_a_job_without_intermediate_streams_never_reads_checkpoints_for_retention(
    system: EmbeddedSystem,
) -> None:
    from samza_nb.runtime.checkpoints import Checkpoint
    from samza_nb.runtime.processor.retention import BackgroundRetention

    system.create_stream("numbers", 2)
    app = StreamApplication("straight", job_id="1")
    app.input(system.input("numbers", partitions=2)).send_to(app.output(system.output("out", partitions=2)))
    retention = BackgroundRetention(app.plan())

    def read() -> dict[str, Checkpoint]:
        msg = "read the checkpoints of a job with nothing to delete"
        raise AssertionError(msg)

    retention.after_epoch({"t": frozenset()}, read)
    retention.close(10)



def test_with_a_shared_store_passes_start_at_most_once_an_interval_and_join_does_not_wait_for_it(
    system: EmbeddedSystem,
) -> None:
    from samza_nb.runtime.checkpoints import Checkpoint
    from samza_nb.runtime.processor.retention import BackgroundRetention

    plan = _reshuffled(system, 100).plan()
    retention = BackgroundRetention(plan, min_interval_s=0.5)
    starts: list[float] = []

    def read() -> dict[str, Checkpoint]:
        starts.append(time.monotonic())
        return {}

    ssps: dict[str, frozenset[SystemStreamPartition]] = {"t": frozenset()}
    retention.after_epoch(ssps, read)
    retention.join(10)
    retention.after_epoch(ssps, read)  # waits for the interval
    deadline = time.monotonic() + 10
    while len(starts) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(starts) == 2 and starts[1] - starts[0] >= 0.5, starts
    # A processor ending its loop joins: the pass asked for last runs now, not in 60 s.
    slow = BackgroundRetention(plan, min_interval_s=60)
    slow.after_epoch(ssps, read)
    slow.join(10)
    slow.after_epoch(ssps, read)
    began = time.monotonic()
    slow.join(10)
    assert len(starts) == 4 and time.monotonic() - began < 5, starts
    retention.close(10)
    slow.close(10)

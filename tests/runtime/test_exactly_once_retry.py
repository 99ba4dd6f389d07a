"""Under exactly-once a task epoch first asks whether an earlier attempt committed it. A worker
that committed the task's previous epoch trusts its memory that nobody did, except when the
epoch runs again after lost workers: another worker of the lost attempt may have committed it,
and committing it again would show its outputs twice to read_committed readers."""

from __future__ import annotations

from typing import Any

import pytest

from samza_nb.api import StreamApplication
from samza_nb.plan.execution_plan import ExecutionPlan
from samza_nb.runtime.checkpoint_topic import CheckpointRecords
from samza_nb.runtime.checkpoints import Checkpoint
from samza_nb.runtime.epoch import EpochAssignment
from samza_nb.runtime.task import exactly_once
from samza_nb.runtime.task.exactly_once import TaskTransaction
from samza_nb.systems import KafkaSystem, MessageKind, Record


def _transaction(retry: int) -> TaskTransaction:
    assignment = EpochAssignment(
        task_name="Partition 0", producer="p", seq=1, now_ms=0, run_id="r", location_id="a",
        store_root="/nowhere", changelog_partition=0, ssps=[], start_offsets={}, bounds={},
        control={}, producer_counts={}, retry=retry,
    )
    transaction = TaskTransaction.__new__(TaskTransaction)  # no Kafka: the decision only
    transaction.system = None  # type: ignore[assignment]
    transaction.topic = "__samza_checkpoint_ver_1_for_app_1"
    transaction.records = CheckpointRecords("GroupByPartitionFactory", {}, "kafka")
    transaction.assignment = assignment
    transaction._key = ("no brokers", "app-1-Partition 0")
    return transaction


@pytest.mark.parametrize(("retry", "reads_the_topic"), [(0, False), (1, True), (2, True)])
def test_a_retried_epoch_reads_what_was_committed_instead_of_trusting_the_workers_memory(
    monkeypatch: pytest.MonkeyPatch, retry: int, reads_the_topic: bool
) -> None:
    committed_by_another_worker = Checkpoint(seq=2, offsets={"in#0": 10})
    reads: list[Any] = []

    def read(system: Any, topic: str, **_: Any) -> dict[str, Checkpoint]:
        reads.append(topic)
        return {"Partition 0": committed_by_another_worker}

    monkeypatch.setattr(exactly_once, "read_topic_checkpoints", read)
    # This worker committed epoch 0 of the task: it remembers seq 1 as the next to commit.
    monkeypatch.setitem(exactly_once._COMMITTED, ("__samza_checkpoint_ver_1_for_app_1", "Partition 0"), 1)
    transaction = _transaction(retry)
    monkeypatch.setitem(exactly_once._PRODUCERS, transaction._key, object())  # the task's kept producer
    found = transaction.committed_elsewhere()
    assert bool(reads) == reads_the_topic
    assert found == (committed_by_another_worker if reads_the_topic else None)


@pytest.mark.parametrize("retry", [0, 1])
def test_without_a_kept_producer_the_topic_is_read_once_after_the_new_producer_fenced_the_others(
    monkeypatch: pytest.MonkeyPatch, retry: int
) -> None:
    """run() opens a new producer and reads the topic after its init_transactions: a read
    before the epoch's work would be a second one, and the only one that could be stale."""
    reads: list[Any] = []
    monkeypatch.setattr(exactly_once, "read_topic_checkpoints", lambda *a, **k: reads.append(a) or {})
    assert _transaction(retry).committed_elsewhere() is None
    assert reads == []


def _one_partition_job(
    bootstrap: str, prefix: str, seq: int
) -> tuple[KafkaSystem, str, ExecutionPlan, EpochAssignment]:
    """An exactly-once job copying ``<prefix>-in`` to ``<prefix>-out`` (one partition each,
    checkpoint topic made), and task Partition 0's epoch ``seq``: (system, output, plan,
    assignment)."""
    system = KafkaSystem("kafka", bootstrap)
    out = f"{prefix}-out"
    system.create_stream(f"{prefix}-in", 1)
    system.create_stream(out, 1)
    app = StreamApplication(prefix, job_id="1", config={"task.processing.guarantee": "exactly-once"})
    app.input(system.input(f"{prefix}-in", partitions=1)).send_to(app.output(system.output(out, partitions=1)))
    plan = app.plan()
    system.create_stream(exactly_once.checkpoint_topic(plan), 1, compacted=True)
    assignment = EpochAssignment(
        task_name="Partition 0", producer="Partition 0", seq=seq, now_ms=0, run_id="r", location_id="a",
        store_root="/nowhere", changelog_partition=0, ssps=[], start_offsets={}, bounds={},
        control={}, producer_counts={},
    )
    return system, out, plan, assignment


@pytest.mark.services
@pytest.mark.parametrize("opened_in_background", [False, True], ids=["opened-in-run", "prepared"])
def test_an_attempt_whose_new_producer_finds_the_epoch_committed_by_another_commits_nothing(
    kafka_bootstrap: str, kafka_topic_prefix: str, opened_in_background: bool
) -> None:
    # An orphaned attempt (a Spark task of a failed job, a frozen process) committed the epoch
    # after this attempt looked at the start: this attempt's new producer ends the other's
    # transaction, reads the topic again, and commits nothing. A producer the epoch started
    # opening in the background (prepare(), while it reads its input) is as new.
    system, out, plan, assignment = _one_partition_job(kafka_bootstrap, f"{kafka_topic_prefix}eo", 1)

    def body(transaction: TaskTransaction) -> int:
        transaction.append(out, 0, [Record(MessageKind.USER, None, b'"counted"', None)], 1)
        transaction.append_checkpoint(Checkpoint(seq=2, offsets={f"{kafka_topic_prefix}eo-in#0": 1}))
        return 1

    assert TaskTransaction(plan, assignment).run(body) == 1  # the other attempt
    # This attempt runs in another process: no producer or memory of the task here.
    for key in [key for key in exactly_once._PRODUCERS if key[1].endswith("Partition 0")]:
        exactly_once._PRODUCERS.pop(key).close()
    exactly_once._COMMITTED.pop((exactly_once.checkpoint_topic(plan), "Partition 0"), None)
    attempt = TaskTransaction(plan, assignment)
    if opened_in_background:
        attempt.prepare()
        assert [key[1] for key in exactly_once._OPENING] == [attempt.transactional_id]
    with pytest.raises(exactly_once.EpochCommittedElsewhere) as found:
        attempt.run(body)
    assert found.value.checkpoint.seq == 2
    assert not exactly_once._OPENING
    assert system.read(out)["value"].tolist() == ["counted"]  # read_committed: once
    exactly_once.close_task_producers(plan)


@pytest.mark.services
def test_a_producer_opened_in_the_background_is_the_one_the_epoch_commits_with(
    kafka_bootstrap: str, kafka_topic_prefix: str
) -> None:
    system, out, plan, assignment = _one_partition_job(kafka_bootstrap, f"{kafka_topic_prefix}bg", 0)
    transaction = TaskTransaction(plan, assignment)
    transaction.prepare()
    transaction.prepare()  # once per task: a second call while it opens starts nothing
    (opening,) = exactly_once._OPENING.values()

    def body(open_transaction: TaskTransaction) -> int:
        open_transaction.append(out, 0, [Record(MessageKind.USER, None, b'"once"', None)], 0)
        open_transaction.append_checkpoint(Checkpoint(seq=1, offsets={f"{kafka_topic_prefix}bg-in#0": 1}))
        return 1

    assert transaction.run(body) == 1
    assert exactly_once._PRODUCERS[(system.settings.fingerprint(), transaction.transactional_id)] is opening.result()
    assert not exactly_once._OPENING
    assert system.read(out)["value"].tolist() == ["once"]
    # Kept: the task's next epoch in this process prepares nothing and reuses it.
    TaskTransaction(plan, assignment).prepare()
    assert not exactly_once._OPENING
    exactly_once.close_task_producers(plan)
    assert transaction.transactional_id not in {key[1] for key in exactly_once._PRODUCERS}

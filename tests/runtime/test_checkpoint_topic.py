"""Samza's checkpoint topic: its name, its records as Samza's own reader decodes them, the
carry-over from samza_nb's old topic name, and reads that cost only the new records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from samza_nb.api import StreamApplication
from samza_nb.errors import CheckpointError
from samza_nb.metadata import EmbeddedMetadataStore
from samza_nb.plan.execution_plan import ExecutionPlan
from samza_nb.runtime.checkpoint_topic import (
    CheckpointRecords,
    checkpoint_topic,
    decode_checkpoint,
    legacy_checkpoint_topic,
)
from samza_nb.runtime.checkpoints import Checkpoint
from samza_nb.runtime.epoch import EpochAssignment
from samza_nb.runtime.task import exactly_once
from samza_nb.runtime.task.exactly_once import TaskTransaction, open_checkpoint_store
from samza_nb.systems import KafkaSystem, MessageKind, Record

GROUP_BY_PARTITION = "org.apache.samza.container.grouper.stream.GroupByPartitionFactory"


def _plan(system: KafkaSystem, name: str, job_id: str = "1", stream: str = "in") -> ExecutionPlan:
    app = StreamApplication(name, job_id=job_id, config={"task.processing.guarantee": "exactly-once"})
    app.input(system.input(stream, partitions=1)).send_to(app.output(system.output(f"{stream}-out", partitions=1)))
    return app.plan()


def test_the_topic_name_replaces_underscores_of_the_job_name_and_id_with_dashes() -> None:
    plan = _plan(KafkaSystem("kafka", "127.0.0.1:1"), "page_views_app", job_id="blue_1")
    assert checkpoint_topic(plan) == "__samza_checkpoint_ver_1_for_page-views-app_blue-1"
    assert legacy_checkpoint_topic(plan) == "__samza_checkpoint_ver_1_for_page_views_app_blue_1"


# -- Samza's reader, written from KafkaCheckpointManager.readCheckpoints, KafkaCheckpointLogKeySerde
# and CheckpointV1Serde (apache/samza): what a Samza job reading this topic would accept.


def _samza_key(raw: bytes, expected_grouper: str) -> str:
    fields = json.loads(raw)
    assert set(fields) == {"systemstreampartition-grouper-factory", "taskName", "type"}
    assert fields["type"] == "checkpoint"  # CHECKPOINT_V1_KEY_TYPE, else the key is refused
    grouper = fields["systemstreampartition-grouper-factory"]
    assert isinstance(grouper, str) and grouper  # Preconditions: non-null, non-empty
    assert grouper == expected_grouper  # validated against the job's grouper
    assert isinstance(fields["taskName"], str)
    return str(fields["taskName"])


def _samza_checkpoint_v1(raw: bytes) -> dict[tuple[str, str, int, int], str | None]:
    # readValue(bytes, HashMap<String, HashMap<String, String>>): every value a map of strings.
    body = json.loads(raw)
    offsets: dict[tuple[str, str, int, int], str | None] = {}
    for ssp_name, info in body.items():
        assert isinstance(info, dict) and len(info) >= 4
        assert all(isinstance(v, str) or (k == "offset" and v is None) for k, v in info.items())
        system, stream, partition = info["system"], info["stream"], int(info["partition"])
        key_bucket = int(info.get("keyBucket", "-1"))
        assert ssp_name == f"SystemStreamPartition [{system}, {stream}, {partition}]"
        offsets[(system, stream, partition, key_bucket)] = info["offset"]
    return offsets


def _samza_read(bootstrap: str, topic: str, grouper: str) -> dict[str, dict[tuple[str, str, int, int], str | None]]:
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "samza-reader", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, 0, 0)])
    checkpoints: dict[str, dict[tuple[str, str, int, int], str | None]] = {}
    try:
        for _ in range(200):
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                assert message.error().code() == KafkaError._PARTITION_EOF
                break
            assert message.key() is not None  # "a checkpoint message with null key" fails
            checkpoints[_samza_key(message.key(), grouper)] = _samza_checkpoint_v1(message.value())
    finally:
        consumer.close()
    return checkpoints


def _assignment(seq: int) -> EpochAssignment:
    return EpochAssignment(
        task_name="Partition 0", producer="p", seq=seq, now_ms=0, run_id="r", location_id="a",
        store_root="/nowhere", changelog_partition=0, ssps=[], start_offsets={}, bounds={},
        control={}, producer_counts={},
    )


@pytest.mark.services
def test_a_committed_checkpoint_is_read_by_samzas_reader(kafka_bootstrap: str, kafka_topic_prefix: str) -> None:
    system = KafkaSystem("kafka", kafka_bootstrap)
    stream = f"{kafka_topic_prefix}in"
    system.create_stream(stream, 1)
    system.create_stream(f"{stream}-out", 1)
    plan = _plan(system, f"{kafka_topic_prefix}my_app", stream=stream)
    topic = checkpoint_topic(plan)
    system.create_stream(topic, 1, compacted=True)
    committed = Checkpoint(seq=4, offsets={f"{stream}#0": 17, "unread#3": 0}, control={"eos": {}})

    def body(transaction: TaskTransaction) -> None:
        transaction.append_checkpoint(committed)

    TaskTransaction(plan, _assignment(3)).run(body)
    exactly_once.close_task_producers(plan)

    found = _samza_read(kafka_bootstrap, topic, GROUP_BY_PARTITION)
    offsets = found["Partition 0"]
    assert offsets[("kafka", stream, 0, -1)] == "16"  # the last message processed, as Samza
    assert offsets[("kafka", "unread", 3, -1)] is None  # nothing processed yet
    state = json.loads(offsets[("samza-nb", "__samza_nb_task_state", 0, -1)] or "")
    assert state == {"seq": 4, "control": {"eos": {}}}
    # And samza_nb reads back exactly what it committed.
    assert exactly_once.read_topic_checkpoints(system, topic)["Partition 0"] == committed


@pytest.mark.services
def test_a_checkpoint_names_its_changelog_s_acknowledged_end_and_waits_only_when_the_changelog_grew(
    kafka_bootstrap: str, kafka_topic_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from samza_nb.systems.kafka.transaction import KafkaTransaction

    system = KafkaSystem("kafka", kafka_bootstrap)
    stream = f"{kafka_topic_prefix}in"
    changelog = f"{kafka_topic_prefix}changelog"
    for name in (stream, f"{stream}-out", changelog):
        system.create_stream(name, 1)
    plan = _plan(system, f"{kafka_topic_prefix}grown", stream=stream)
    system.create_stream(checkpoint_topic(plan), 1, compacted=True)
    flushes: list[str] = []
    flush = KafkaTransaction.flush
    monkeypatch.setattr(KafkaTransaction, "flush", lambda self: (flushes.append("flush"), flush(self))[1])
    user = Record(MessageKind.USER, b"k", b"v", 0)
    changelog_key = f"{changelog}#0"

    def epoch(seq: int, changelog_records: int) -> Checkpoint:
        def body(transaction: TaskTransaction) -> Checkpoint:
            transaction.append(f"{stream}-out", 0, [user] * 3, seq)
            if changelog_records:
                transaction.append(changelog, 0, [user] * changelog_records, seq)
            return transaction.append_checkpoint(Checkpoint(seq + 1, {f"{stream}#0": seq}, {}), {changelog_key: 7})

        return TaskTransaction(plan, _assignment(seq)).run(body)

    grown = epoch(3, changelog_records=2)
    assert flushes == ["flush"]  # the changelog's end is known once acknowledged
    assert grown.offsets[changelog_key] == 2
    unchanged = epoch(4, changelog_records=0)
    assert flushes == ["flush"]  # the commit alone waits for the outputs
    assert unchanged.offsets[changelog_key] == 7  # what the store reflected before the epoch
    exactly_once.close_task_producers(plan)
    assert exactly_once.read_topic_checkpoints(system, checkpoint_topic(plan))["Partition 0"] == unchanged
    assert len(system.read(f"{stream}-out")) == 6  # both epochs committed their outputs


def test_the_key_is_byte_for_byte_what_samzas_serde_writes() -> None:
    records = CheckpointRecords(GROUP_BY_PARTITION, {}, "kafka")
    assert records.key("Partition 7") == (
        b'{"systemstreampartition-grouper-factory":"org.apache.samza.container.grouper.stream.'
        b'GroupByPartitionFactory","taskName":"Partition 7","type":"checkpoint"}'
    )
    task, checkpoint, grouper = decode_checkpoint(records.key("Partition 7"), records.value(Checkpoint(2, {"a#1": 5})))
    assert (task, checkpoint, grouper) == ("Partition 7", Checkpoint(2, {"a#1": 5}), GROUP_BY_PARTITION)
    # Jackson leaves non-ASCII characters as they are (UTF-8), unlike Python's default.
    assert '"taskName":"Größe 1"'.encode() in records.key("Größe 1")


def test_a_record_that_does_not_decode_is_one_error_naming_where_it_is() -> None:
    with pytest.raises(CheckpointError) as raised:
        decode_checkpoint(b'{"taskName": "Partition 0", "type": "checkpoint"}', b"{not json", where="t[0]@41")
    assert "\n" not in str(raised.value)
    assert str(raised.value).startswith("checkpoint record t[0]@41 does not decode: ")


def _legacy_record(task: str, checkpoint: Checkpoint) -> Record:
    key = json.dumps({"taskName": task, "type": "checkpoint"}, sort_keys=True).encode()
    return Record(MessageKind.USER, key, checkpoint.to_json(), None)


@pytest.mark.services
def test_checkpoints_under_the_old_topic_name_are_carried_over_once(
    kafka_bootstrap: str, kafka_topic_prefix: str, tmp_path: Path, caplog: Any
) -> None:
    system = KafkaSystem("kafka", kafka_bootstrap)
    plan = _plan(system, f"{kafka_topic_prefix}old_app")
    legacy, topic = legacy_checkpoint_topic(plan), checkpoint_topic(plan)
    assert legacy != topic
    old = {"Partition 0": Checkpoint(7, {"in#0": 70}, {"eos": {}}), "Partition 1": Checkpoint(5, {"in#1": 50})}
    system.create_stream(legacy, 1, compacted=True)
    system.append(legacy, 0, [_legacy_record(task, cp) for task, cp in old.items()])

    store = open_checkpoint_store(plan, EmbeddedMetadataStore(tmp_path / "m.db"))
    assert store.read("Partition 0") == old["Partition 0"]  # goes on where it stopped
    assert store.read_all() == old
    assert "carried the checkpoints of 2 tasks over" in caplog.text
    assert system.newest_offsets(topic)[0] == 2
    assert set(_samza_read(kafka_bootstrap, topic, GROUP_BY_PARTITION)) == set(old)
    # Once: a second opening (another process, a restart) reads the new topic only.
    open_checkpoint_store(plan, EmbeddedMetadataStore(tmp_path / "m2.db"))
    assert system.newest_offsets(topic)[0] == 2


@pytest.mark.services
def test_reads_of_the_topic_cost_only_the_records_appended_since(
    kafka_bootstrap: str, kafka_topic_prefix: str, tmp_path: Path
) -> None:
    system = KafkaSystem("kafka", kafka_bootstrap)
    plan = _plan(system, f"{kafka_topic_prefix}tail")
    store = open_checkpoint_store(plan, EmbeddedMetadataStore(tmp_path / "m.db"))
    topic = checkpoint_topic(plan)
    records = CheckpointRecords.for_plan(plan, system.name)
    history = [records.record(f"Partition {n % 4}", Checkpoint(n // 4 + 1, {"in#0": n})) for n in range(400)]
    system.append(topic, 0, history)

    def fetched() -> int:
        return system.fetched_records(topic, 0)

    before = fetched()
    assert store.read_all()["Partition 3"].seq == 100
    assert fetched() - before == 400  # the first read: the whole topic, once
    before = fetched()
    for _ in range(5):  # status calls, a standby's steps: nothing new to read
        assert store.read_committed("Partition 1").seq == 100
        assert len(store.read_all()) == 4
    assert fetched() - before == 0
    system.append(topic, 0, [records.record("Partition 2", Checkpoint(101, {"in#0": 9}))] * 3)
    assert store.read_committed("Partition 2") == Checkpoint(101, {"in#0": 9})
    assert fetched() - before == 3  # only the new records


@pytest.mark.services
def test_old_records_under_an_unchanged_name_are_rewritten_in_samzas_format(
    kafka_bootstrap: str, kafka_topic_prefix: str, tmp_path: Path
) -> None:
    # No underscore in the job name or id: the old and the new name are one topic, and the old
    # records sit in it beside the new ones.
    system = KafkaSystem("kafka", kafka_bootstrap)
    plan = _plan(system, f"{kafka_topic_prefix}same")
    topic = checkpoint_topic(plan)
    assert legacy_checkpoint_topic(plan) == topic
    records = CheckpointRecords.for_plan(plan, system.name)
    system.create_stream(topic, 1, compacted=True)
    system.append(topic, 0, [
        _legacy_record("Partition 0", Checkpoint(3, {"in#0": 30})),
        _legacy_record("Partition 1", Checkpoint(2, {"in#1": 20})),
        records.record("Partition 1", Checkpoint(4, {"in#1": 40})),  # committed since, in Samza's format
    ])

    store = open_checkpoint_store(plan, EmbeddedMetadataStore(tmp_path / "m.db"))
    assert store.read_all() == {"Partition 0": Checkpoint(3, {"in#0": 30}), "Partition 1": Checkpoint(4, {"in#1": 40})}
    # Partition 0's checkpoint again in Samza's format, and a tombstone for its old key (so
    # compaction leaves Samza's records only); Partition 1 needed nothing.
    assert system.newest_offsets(topic)[0] == 5
    rows = system.read(topic)
    assert rows["value"].tolist()[-1] is None
    assert rows["key"].tolist()[-1] == {"taskName": "Partition 0", "type": "checkpoint"}
    assert rows["key"].tolist()[-2]["systemstreampartition-grouper-factory"] == GROUP_BY_PARTITION
    open_checkpoint_store(plan, EmbeddedMetadataStore(tmp_path / "m2.db"))
    assert system.newest_offsets(topic)[0] == 5  # once


@pytest.mark.services
@pytest.mark.parametrize("deleted_by", ["this process", "another process"])
def test_a_topic_deleted_and_made_again_is_read_afresh(
    kafka_bootstrap: str, kafka_topic_prefix: str, deleted_by: str, tmp_path: Path
) -> None:
    system = KafkaSystem("kafka", kafka_bootstrap)
    plan = _plan(system, f"{kafka_topic_prefix}again")
    topic = checkpoint_topic(plan)
    records = CheckpointRecords.for_plan(plan, system.name)
    system.create_stream(topic, 1, compacted=True)
    system.append(topic, 0, [records.record(f"Partition {n}", Checkpoint(9, {"in#0": 90})) for n in range(5)])
    assert len(exactly_once.read_topic_checkpoints(system, topic)) == 5
    # A reset: the topic deleted (here, or by a client this process's reads do not share) and
    # made again with less in it.
    deleter = system if deleted_by == "this process" else KafkaSystem("kafka", kafka_bootstrap, client_id="other")
    deleter.delete_stream(topic)
    deleter.create_stream(topic, 1, compacted=True)
    deleter.append(topic, 0, [records.record("Partition 0", Checkpoint(1, {"in#0": 3}))])
    fresh = {"Partition 0": Checkpoint(1, {"in#0": 3})}
    if deleted_by == "this process":
        assert exactly_once.read_topic_checkpoints(system, topic) == fresh
    # The job's next start reads the topic afresh whoever deleted it.
    assert open_checkpoint_store(plan, EmbeddedMetadataStore(tmp_path / "m.db")).read_all() == fresh

"""A cold Kafka read that starts from the dedup state its checkpoint carries fetches only the
new records (no scan back over the partition's history) and still drops a repeated append."""

from __future__ import annotations

import json
from typing import Any

import pytest

from samza_nb.systems import KafkaSystem, MessageKind, Record
from samza_nb.systems.kafka.clients import close_process_clients

pytestmark = pytest.mark.services


def _records(producer: str, count: int) -> list[Record]:
    return [Record(MessageKind.USER, None, b"%s-%d" % (producer.encode(), n), None) for n in range(count)]


def _read_all(system: KafkaSystem, topic: str, offset: int) -> tuple[list[bytes], int]:
    end = system.newest_offsets(topic)[0]
    values: list[bytes] = []
    while offset < end:
        fetched = system.fetch(topic, 0, offset, end, 100_000)
        values += [record.value for _first, records in fetched.batches for record in records]
        offset = fetched.next_offset
    return values, offset


def test_a_cold_read_resumes_from_the_persisted_dedup_state(kafka_bootstrap: str, kafka_topic_prefix: str) -> None:
    system = KafkaSystem("kafka", kafka_bootstrap)
    topic = f"{kafka_topic_prefix}shuffle"
    system.create_stream(topic, 1)
    # Three upstream tasks, each epoch with a new plan (the runtime's producer names).
    for epoch in range(6):
        for task in range(3):
            producer = f"app-1/Partition {task}@plan-{epoch}-{task}"
            system.append(topic, 0, _records(producer, 300), producer=producer, producer_seq=epoch)
    history = system.newest_offsets(topic)[0]
    values, checkpoint_offset = _read_all(system, topic, 0)
    assert len(values) == 18 * 300
    state = system.dedup_state(topic, 0)
    assert state is not None and state["position"] == checkpoint_offset
    # The state stays small: the last two plans of each upstream task.
    assert sorted(state["producers"]) == sorted(f"app-1/Partition {t}@plan-{e}-{t}" for t in range(3) for e in (4, 5))
    persisted = json.loads(json.dumps(state))  # as it sits in a checkpoint

    # Upstream task 2 crashed before committing epoch 5 and appends it again; then epoch 6.
    system.append(topic, 0, _records("app-1/Partition 2@plan-5-2", 300),
                  producer="app-1/Partition 2@plan-5-2", producer_seq=5)
    system.append(topic, 0, _records("app-1/Partition 2@plan-6-2", 10),
                  producer="app-1/Partition 2@plan-6-2", producer_seq=6)

    close_process_clients(system.settings)  # a new process: nothing known of the partition
    assert system.resume_dedup(topic, 0, persisted)
    values, _ = _read_all(system, topic, checkpoint_offset)
    assert values == [record.value for record in _records("app-1/Partition 2@plan-6-2", 10)]
    assert system.fetched_records(topic, 0) == 310  # only what was appended since

    # Without it, the cold read scans the partition's history back first.
    close_process_clients(system.settings)
    values, _ = _read_all(system, topic, checkpoint_offset)
    assert len(values) == 10
    assert system.fetched_records(topic, 0) == history + 310


def _epoch(path: Any, changelog: Any, seq: int, keys: range) -> None:
    """One epoch of a task on the store at ``path``: open at ``seq`` committed epochs, update
    ``keys``, append them to the changelog and write them (as the runtime does)."""
    from samza_nb.runtime.task.stores import TaskStore

    store = TaskStore("counts", path, changelog, "Partition 0", f"app-1/Partition 0@plan-{seq}")
    store.open(seq)
    for key in keys:
        store.put(b"k%d" % key, b"%d" % seq)
    store.flush({"seq": seq + 1}, seq)
    store.close()


def test_a_stale_store_in_a_new_process_catches_up_from_the_tail_only(
    kafka_bootstrap: str, kafka_topic_prefix: str, tmp_path: Any
) -> None:
    from samza_nb.runtime.task.stores import ChangelogRef, TaskStore

    system = KafkaSystem("kafka", kafka_bootstrap)
    topic = f"{kafka_topic_prefix}counts-changelog"
    system.create_stream(topic, 1, compacted=True)
    changelog = ChangelogRef(system, topic, 0)
    here, elsewhere = tmp_path / "here" / "counts", tmp_path / "elsewhere" / "counts"
    for seq in range(8):  # the task runs here: 8 epochs of 250 updates
        _epoch(here, changelog, seq, range(seq * 100, seq * 100 + 250))
    history = system.newest_offsets(topic)[0]
    # Then elsewhere (a rebuild from the whole changelog there), for two epochs.
    for seq in (8, 9):
        _epoch(elsewhere, changelog, seq, range(2_000 + seq * 10, 2_000 + seq * 10 + 100))
    tail = system.newest_offsets(topic)[0] - history

    close_process_clients(system.settings)  # the task comes back here, in a new process
    store = TaskStore("counts", here, changelog, "Partition 0", "app-1/Partition 0@plan-10")
    store.open(10)
    try:
        assert store.get(b"k2090") == b"9" and store.get(b"k0") == b"0" and store.get(b"k799") == b"7"
        assert store.restored_records == tail == 200
        assert system.fetched_records(topic, 0) <= tail  # the tail, not the history before it
    finally:
        store.close()

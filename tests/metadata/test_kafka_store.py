"""CoordinatorStreamMetadataStore on the test broker (SAMZA.md §7.3)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource

from samza_nb import drain
from samza_nb.coordination.assignments import TaskAssignmentManager
from samza_nb.errors import JobLeaseError, MetadataStoreError
from samza_nb.examples.page_views import (
    build_app,
    expected_counts,
    generate_page_views,
    write_page_views,
)
from samza_nb.kafka_settings import KafkaClientConfig
from samza_nb.metadata import NamespacedMetadataStore, get_metadata_store, namespaced_key
from samza_nb.metadata.kafka import CoordinatorStreamMetadataStore, coordinator_stream_name
from samza_nb.model import TaskMode
from samza_nb.systems import EmbeddedSystem
from samza_nb.testing import run_local

pytestmark = pytest.mark.services


def store_for(bootstrap: str, topic: str) -> CoordinatorStreamMetadataStore:
    return CoordinatorStreamMetadataStore(KafkaClientConfig.build(bootstrap, {}), topic)


def raw_messages(bootstrap: str, topic: str) -> list[tuple[object, bytes | None]]:
    """(decoded JSON key, value) of every message of partition 0, in order."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "raw", "enable.partition.eof": True, "auto.offset.reset": "earliest"}
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    result: list[tuple[object, bytes | None]] = []
    deadline = time.monotonic() + 15
    try:
        while time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is None:
                continue
            if message.error():
                if message.error().code() == KafkaError._PARTITION_EOF:
                    break
                continue
            result.append((json.loads(message.key()), message.value()))
    finally:
        consumer.close()
    return result


def test_samzas_message_format(kafka_bootstrap: str, kafka_topic_prefix: str) -> None:
    topic = kafka_topic_prefix + "coordinator"
    store = store_for(kafka_bootstrap, topic)
    config = NamespacedMetadataStore(store, "set-config")
    config.put("app.run.id", b"run-1")
    drains = NamespacedMetadataStore(store, "samza-drain-v1")
    drains.put("uuid-1", b'{"uuid":"uuid-1"}')
    drains.delete("uuid-1")
    store.put("plain-key", b"x")
    assert config.get("app.run.id") == b"run-1"
    assert drains.all() == {}
    assert store.get("plain-key") == b"x"

    messages = raw_messages(kafka_bootstrap, topic)
    keys = [key for key, _value in messages]
    assert keys[:3] == [[1, "set-config", "app.run.id"], [1, "samza-drain-v1", "uuid-1"], [1, "samza-drain-v1", "uuid-1"]]
    wrapper = json.loads(messages[0][1] or b"")
    assert wrapper["values"] == {"value": "run-1"}
    assert {"source", "username", "timestamp", "host"} <= set(wrapper)
    assert messages[1][1] == b'{"uuid":"uuid-1"}'  # drain notifications are not wrapped
    assert messages[2][1] is None  # a delete is a tombstone

    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    (future,) = admin.describe_configs([ConfigResource("topic", topic)]).values()
    assert future.result(timeout=10)["cleanup.policy"].value == "compact"
    assert len(admin.list_topics(timeout=10).topics[topic].partitions) == 1


def test_a_restarted_store_bootstraps_from_the_oldest_offset(kafka_bootstrap: str, kafka_topic_prefix: str) -> None:
    topic = kafka_topic_prefix + "coordinator"
    first = store_for(kafka_bootstrap, topic)
    first.put_all({namespaced_key("ns", f"k{i}"): b"%d" % i for i in range(50)})
    for i in range(0, 50, 2):
        first.delete(namespaced_key("ns", f"k{i}"))
    first.put(namespaced_key("ns", "k1"), b"updated")
    first.close()

    restarted = store_for(kafka_bootstrap, topic)
    restarted.init()
    restarted.init()  # idempotent
    entries = NamespacedMetadataStore(restarted, "ns").all()
    assert set(entries) == {f"k{i}" for i in range(1, 50, 2)}
    assert entries["k1"] == b"updated" and entries["k3"] == b"3"
    # Writes of one process are read by another.
    restarted.put(namespaced_key("ns", "k2"), b"back")
    assert first.get(namespaced_key("ns", "k2")) == b"back"
    first.delete(namespaced_key("ns", "k3"))
    assert restarted.get(namespaced_key("ns", "k3")) is None


def test_drain_run_ids_and_assignments_work_unchanged(kafka_bootstrap: str, kafka_topic_prefix: str) -> None:
    topic = kafka_topic_prefix + "coordinator"
    store = store_for(kafka_bootstrap, topic)
    NamespacedMetadataStore(store, drain.CONFIG_NAMESPACE).put("app.run.id", b"run-7")
    assert drain.read_run_id(store) == "run-7"
    drain.write_drain_notification(store)
    other = store_for(kafka_bootstrap, topic)
    assert drain.should_drain(other, "run-7")
    assert not drain.should_drain(other, "run-8")
    manager = TaskAssignmentManager(store)
    manager.write_task_container_mappings({"0": {"Partition 0": TaskMode.ACTIVE}, "1": {"Partition 1": TaskMode.STANDBY}})
    assert TaskAssignmentManager(other).read_task_assignment() == {"Partition 0": "0", "Partition 1": "1"}
    assert drain.cleanup(other, "run-7") == 1
    assert not drain.should_drain(store, "run-7")


def test_registry_builds_the_store_from_config(kafka_bootstrap: str, kafka_topic_prefix: str) -> None:
    config = {
        "metadata.store.factory": "kafka",
        "app.name": kafka_topic_prefix + "job",
        "job.coordinator.system": "kafka",
        "systems.kafka.bootstrap.servers": kafka_bootstrap,
    }
    store = get_metadata_store(config=config)
    assert isinstance(store, CoordinatorStreamMetadataStore)
    assert store.topic == coordinator_stream_name(kafka_topic_prefix + "job", "1")
    store.put("k", b"v")
    assert store.get("k") == b"v"
    # The topic does not carry the test prefix: delete it here.
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    for future in admin.delete_topics([store.topic]).values():
        future.result(timeout=15)


def test_an_unreachable_broker_is_a_metadata_store_error() -> None:
    store = CoordinatorStreamMetadataStore(KafkaClientConfig.build("127.0.0.1:1", {}), "topic", timeout=1.0)
    with pytest.raises(MetadataStoreError, match=r"127\.0\.0\.1:1"):
        store.get("k")


def test_a_fenced_put_all_writes_nothing(kafka_bootstrap: str, kafka_topic_prefix: str) -> None:
    topic = kafka_topic_prefix + "fenced"
    old_run, new_run = store_for(kafka_bootstrap, topic), store_for(kafka_bootstrap, topic)
    old_run.put("gen", b"2")
    old_run.put_all({"offsets": b"1"}, fence=("gen", 2))
    new_run.put("gen", b"3")  # another run of the job took the lease
    with pytest.raises(JobLeaseError, match="generation 2 .* generation 3 is current"):
        old_run.put_all({"offsets": b"stale", "more": b"x"}, fence=("gen", 2))
    new_run.put_all({"offsets": b"2"}, fence=("gen", 3))
    reader = store_for(kafka_bootstrap, topic)
    assert reader.get("offsets") == b"2" and reader.get("more") is None


def test_a_job_keeps_its_checkpoints_in_the_coordinator_stream(
    kafka_bootstrap: str, kafka_topic_prefix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SAMZA_NB_HOME", str(tmp_path / "home"))
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    events = generate_page_views(600, seed=3)
    write_page_views(system, events, end=False)
    name = kafka_topic_prefix + "views"
    config = {
        "metadata.store.factory": "kafka",
        "job.coordinator.system": "kafka",
        "systems.kafka.bootstrap.servers": kafka_bootstrap,
        "task.max.epoch.messages": "100",
    }
    try:
        first = run_local(build_app(system, name=name), config, until="caught-up")
        assert isinstance(first.metadata, CoordinatorStreamMetadataStore)
        more = generate_page_views(300, seed=4)
        system.write("page-views", more)
        system.end_stream("page-views")
        # A second run starts from the checkpoints the first one committed to the topic:
        # every event is counted once over both runs (the output stream holds both runs').
        second = run_local(build_app(system, name=name), config, until="end-of-stream")
        counted = second.collect("page-counts")
        assert counted.groupby("key")["value"].sum().to_dict() == expected_counts(events + more)
        assert second.metrics()["streams"]["page-views"]["in"] == len(more)
    finally:
        admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
        topics = [t for t in admin.list_topics(timeout=10).topics if name in t]
        for future in admin.delete_topics(topics).values():
            future.result(timeout=15)


def test_an_option_librdkafka_refuses_is_a_metadata_store_error_naming_the_store() -> None:
    settings = KafkaClientConfig.build("127.0.0.1:1", {"key.deserializer": "x"})
    store = CoordinatorStreamMetadataStore(settings, "topic", timeout=1.0)
    with pytest.raises(MetadataStoreError, match=r"cannot create its Kafka (admin|consumer) client: .*key.deserializer"):
        store.get("k")

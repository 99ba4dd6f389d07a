"""The Kafka-protocol test broker: topics, produce, consume in a group, commit offsets."""

from __future__ import annotations

import time

import pytest

from samza_nb.testing import KAFKA_TEST_CONSUMER_CONFIG

pytestmark = pytest.mark.services

MESSAGES = 1000
PARTITIONS = 8


def test_produce_consume_commit(kafka_bootstrap: str, kafka_topic_prefix: str) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"{kafka_topic_prefix}page-views"
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    for future in admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS)]).values():
        future.result(timeout=15)
    assert len(admin.list_topics(topic, timeout=10).topics[topic].partitions) == PARTITIONS

    producer = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 5})
    for index in range(MESSAGES):
        producer.produce(topic, key=str(index).encode(), value=f"view-{index}".encode())
    assert producer.flush(15) == 0

    consumer = Consumer(
        {
            **KAFKA_TEST_CONSUMER_CONFIG,
            "bootstrap.servers": kafka_bootstrap,
            "group.id": f"{kafka_topic_prefix}group",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe([topic])
        values: set[bytes] = set()
        deadline = time.monotonic() + 60
        while len(values) < MESSAGES and time.monotonic() < deadline:
            for message in consumer.consume(500, timeout=1.0):
                assert message.error() is None, message.error()
                values.add(message.value())
        assert len(values) == MESSAGES
        assert values == {f"view-{index}".encode() for index in range(MESSAGES)}

        consumer.commit(asynchronous=False)
        partitions = [TopicPartition(topic, partition) for partition in range(PARTITIONS)]
        committed = consumer.committed(partitions, timeout=10)
        assert sum(tp.offset for tp in committed) == MESSAGES
        # Keyed messages spread over every partition (murmur2 of the key).
        assert all(tp.offset > 0 for tp in committed)
    finally:
        consumer.close()

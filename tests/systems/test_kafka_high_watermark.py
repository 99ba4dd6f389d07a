"""The newest offsets of a Tansu partition: its listed end is the last batch's base offset + 1,
so a fetch of that batch finds the high watermark, read uncommitted (as the listing is), and a
probe that finds none fails instead of returning the short listed end."""

from __future__ import annotations

import socket
import time
from typing import Any

import pytest
from confluent_kafka import Producer

from samza_nb.errors import StreamSystemError
from samza_nb.systems import KafkaSystem

pytestmark = pytest.mark.services


def one_batch(bootstrap: str, topic: str, count: int, **options: Any) -> Producer:
    """A producer that wrote ``count`` records to partition 0 of ``topic`` in one batch."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 200, **options})
    if "transactional.id" in options:
        producer.init_transactions(15)
        producer.begin_transaction()
    for i in range(count):
        producer.produce(topic, b"%d" % i, partition=0)
    assert producer.flush(15) == 0
    return producer


def fresh_system(bootstrap: str, name: str, **options: Any) -> KafkaSystem:
    """A system with clients of its own (nothing probed or seen yet in this process)."""
    return KafkaSystem("kafka", bootstrap, **{"client.id": name}, **options)


def test_a_probe_while_a_transaction_is_open_finds_the_high_watermark_at_once(
    kafka_bootstrap: str, kafka_topic_prefix: str
) -> None:
    topic = kafka_topic_prefix + "open-transaction"
    KafkaSystem("kafka", kafka_bootstrap).create_stream(topic, 1)
    producer = one_batch(kafka_bootstrap, topic, 50, **{"transactional.id": kafka_topic_prefix + "open"})
    system = fresh_system(kafka_bootstrap, kafka_topic_prefix + "probe-open")
    started = time.monotonic()
    assert system.newest_offsets(topic) == {0: 50}
    assert time.monotonic() - started < 5
    producer.commit_transaction(15)
    after = fresh_system(kafka_bootstrap, kafka_topic_prefix + "probe-committed")
    assert after.newest_offsets(topic) == {0: 51}  # the commit marker


def test_a_probe_that_sees_no_end_fails_naming_topic_partitions_and_broker(
    kafka_bootstrap: str, kafka_topic_prefix: str
) -> None:
    topic = kafka_topic_prefix + "no-eof"
    KafkaSystem("kafka", kafka_bootstrap).create_stream(topic, 2)
    one_batch(kafka_bootstrap, topic, 20)
    system = fresh_system(kafka_bootstrap, kafka_topic_prefix + "probe-blind", timeout=1.0, retries=2, outage_wait=0)
    clients = system._clients()
    consumer = clients.consumer
    # The probe's consumer talks to a listener that accepts and never answers: its fetch of
    # the last batch never comes back (the listing still reaches the real broker).
    silent = socket.create_server(("127.0.0.1", 0))
    silent_address = f"127.0.0.1:{silent.getsockname()[1]}"

    def blind(*, forced: dict[str, Any], **extra: Any) -> Any:
        return consumer(forced={**forced, "bootstrap.servers": silent_address}, **extra)

    clients.consumer = blind  # type: ignore[method-assign]
    started = time.monotonic()
    with pytest.raises(StreamSystemError) as raised:
        system.newest_offsets(topic)
    waited = time.monotonic() - started
    message = str(raised.value)
    assert "\n" not in message and f"topic {topic!r}" in message and "partitions [0]" in message
    assert kafka_bootstrap in message and "after 2 attempts" in message
    assert 2 <= waited < 10
    silent.close()

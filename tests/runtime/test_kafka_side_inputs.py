"""A table filled from a Kafka topic, as a compacted topic fills a Kafka Streams table: each
record's key is the table's key, a later record replaces the entry, a tombstone (no value)
deletes it; keys of plain text need the stream's KV serde to say so. On the Kafka test broker."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import Producer

from samza_nb.api import LocalTable, StreamApplication, serdes
from samza_nb.errors import TaskError
from samza_nb.job import run
from samza_nb.systems import EmbeddedSystem, KafkaSystem

pytestmark = pytest.mark.services


def _profiles(bootstrap: str, topic: str, records: list[tuple[bytes, bytes | None]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for key, value in records:
        producer.produce(topic, value, key=key, partition=0)
    assert producer.flush(10) == 0


def _app(kafka: KafkaSystem, log: EmbeddedSystem, prefix: str, key_serde: object = None) -> StreamApplication:
    app = StreamApplication(f"{prefix}sides", job_id="1")
    serde = "json" if key_serde is None else serdes.kv(key_serde, serdes.json())
    table = app.table(LocalTable("profiles", side_inputs=(kafka.input(f"{prefix}profiles", partitions=1, serde=serde),)))
    out = app.output(log.output("joined", partitions=1))
    app.input(log.input("clicks", partitions=1)).join_table(
        table, lambda click, record: [click, record.value if record else None], key_fn=lambda click: click
    ).send_to(out)
    return app


def test_records_fill_replace_and_a_tombstone_deletes_an_entry(
    kafka_bootstrap: str, kafka_topic_prefix: str, tmp_path: Path
) -> None:
    kafka = KafkaSystem("kafka", kafka_bootstrap)
    kafka.create_stream(f"{kafka_topic_prefix}profiles", 1)
    _profiles(kafka_bootstrap, f"{kafka_topic_prefix}profiles", [
        (b'"a"', b'{"tier": 1}'), (b'"b"', b'{"tier": 2}'), (b'"c"', b'{"tier": 3}'),
        (b'"b"', b'{"tier": 5}'), (b'"c"', None),
    ])
    log = EmbeddedSystem("log", path=tmp_path / "log")
    log.create_stream("clicks", 1)
    log.write("clicks", ["a", "b", "c"])
    log.end_stream("clicks")
    job = run(_app(kafka, log, kafka_topic_prefix), {"job.home": str(tmp_path / "home")},
              until="caught-up", executor="local")
    assert sorted(map(tuple, job.collect("joined")["value"])) == [
        ("a", {"tier": 1}), ("b", {"tier": 5}), ("c", None),
    ]


def test_keys_of_plain_text_are_read_by_the_stream_s_key_serde(
    kafka_bootstrap: str, kafka_topic_prefix: str, tmp_path: Path
) -> None:
    kafka = KafkaSystem("kafka", kafka_bootstrap)
    kafka.create_stream(f"{kafka_topic_prefix}profiles", 1)
    _profiles(kafka_bootstrap, f"{kafka_topic_prefix}profiles", [(b"a", b"1"), (b"b", b"2"), (b"a", None)])
    log = EmbeddedSystem("log", path=tmp_path / "log")
    log.create_stream("clicks", 1)
    log.write("clicks", ["a", "b"])
    log.end_stream("clicks")
    with pytest.raises(TaskError, match=r"key b'a' is not JSON.*serdes.kv\(serdes.string\(\)") as failure:
        run(_app(kafka, log, kafka_topic_prefix), {"job.home": str(tmp_path / "home")},
            until="caught-up", executor="local")
    assert (failure.value.op_id, failure.value.offset) == ("table profiles", 0)
    job = run(_app(kafka, log, kafka_topic_prefix, serdes.string()), {"job.home": str(tmp_path / "home2")},
              until="caught-up", executor="local")
    assert sorted(map(tuple, job.collect("joined")["value"])) == [("a", None), ("b", 2)]

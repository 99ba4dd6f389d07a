"""KafkaSystem against the test broker: what the contract does not show (gaps from transaction
markers, batching producers, partial appends, broker errors, secrets, pickling)."""

from __future__ import annotations

import logging
import pickle
import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource

from samza_nb.errors import StreamSystemError
from samza_nb.systems import EmbeddedSystem, KafkaSystem, MessageKind, Record
from samza_nb.systems.kafka.reader import IDENTITY, ORDINAL, PRODUCER, SEQ
from samza_nb.systems.kafka.transaction import KafkaTransaction

pytestmark = pytest.mark.services

SECRET = "hunter2-very-secret"
JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required password="jaas-secret-1"'


def read_values(system: KafkaSystem, topic: str, partition: int, chunk: int) -> tuple[list[bytes], list[int], int]:
    """Values and offsets of every record below the newest offset, and where reading ended."""
    bound = system.newest_offsets(topic)[partition]
    offset, values, offsets = 0, [], []
    for _ in range(10_000):
        if offset >= bound:
            break
        fetched = system.fetch(topic, partition, offset, bound, chunk)
        for first, records in fetched.batches:
            values.extend(record.value for record in records)
            offsets.extend(range(first, first + len(records)))
        assert fetched.next_offset > offset
        offset = fetched.next_offset
    return values, offsets, offset


def test_transaction_markers_leave_gaps_that_fetch_moves_past(kafka_bootstrap: str, kafka_topic_prefix: str) -> None:
    system = KafkaSystem("kafka", kafka_bootstrap)
    topic = kafka_topic_prefix + "tx"
    system.create_stream(topic, 1)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "transactional.id": kafka_topic_prefix + "tx-id"})
    producer.init_transactions(15)
    for transaction in range(3):
        producer.begin_transaction()
        for i in range(5):
            producer.produce(topic, b"%d" % (transaction * 5 + i), partition=0)
        producer.commit_transaction(15)
    newest = system.newest_offsets(topic)[0]
    assert newest > 15  # one commit marker per transaction
    for chunk in (1, 4, 100):
        values, offsets, end = read_values(system, topic, 0, chunk)
        assert [int(v) for v in values] == list(range(15))
        assert offsets != list(range(15))  # offsets do not count messages
        assert end == newest  # a reader that read everything is at the high watermark


def test_a_plain_topic_s_records_keep_their_keys_values_timestamps_and_offsets_read_by_columns(
    kafka_bootstrap: str, kafka_topic_prefix: str
) -> None:
    # Written by a plain producer (no headers): a read hands them over by columns; then a
    # control message (a header) sends the rest of the read record by record.
    written = [Record(MessageKind.USER, None if i % 3 else b"k%d" % i, b"v%d" % i, 1_000 + i) for i in range(40)]
    system, topic = KafkaSystem("kafka", kafka_bootstrap), kafka_topic_prefix + "plain"
    system.create_stream(topic, 1)
    _produce_plainly(kafka_bootstrap, topic, written)
    system.write_watermark(topic, 0, 5_000)
    bound = system.newest_offsets(topic)[0]
    for chunk in (7, 100):
        read: list[tuple[int, Record]] = []
        offset = 0
        while offset < bound:
            fetched = system.fetch(topic, 0, offset, bound, chunk)
            read += [(first + i, record) for first, records in fetched.batches for i, record in enumerate(records)]
            offset = fetched.next_offset
        users = [(at, record) for at, record in read if record.kind == MessageKind.USER]
        assert [at for at, _ in users] == list(range(40))
        assert [record for _, record in users] == written
        assert [record.kind for _, record in read[40:]] == [MessageKind.WATERMARK]


def _produce_plainly(bootstrap: str, topic: str, records: list[Record]) -> None:
    """``records`` to partition 0 by a producer of the client library's own (no headers)."""
    producer = Producer({"bootstrap.servers": bootstrap})
    for record in records:
        producer.produce(topic, record.value, record.key, partition=0, timestamp=record.timestamp or 0)
    assert producer.flush(15) == 0


def test_batching_producer_bounds_come_from_the_high_watermark(
    kafka_bootstrap: str, kafka_topic_prefix: str
) -> None:
    system = KafkaSystem("kafka", kafka_bootstrap)
    topic = kafka_topic_prefix + "batched"
    system.create_stream(topic, 2)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 200, "batch.num.messages": 10_000})
    for i in range(1500):
        producer.produce(topic, b"%d" % i, partition=0)
    assert producer.flush(15) == 0
    for i in range(700):
        producer.produce(topic, b"%d" % i, partition=1)
    assert producer.flush(15) == 0
    # Tansu 0.6 lists the last batch's base offset + 1 as the end offset; newest_offsets must
    # not (a fresh system in a fresh "process": other client settings, no offsets seen yet).
    fresh = KafkaSystem("kafka", kafka_bootstrap, **{"client.id": kafka_topic_prefix + "fresh"})
    assert fresh.newest_offsets(topic) == {0: 1500, 1: 700}
    assert len(fresh.read_frame(topic)) == 2200
    values, _offsets, end = read_values(system, topic, 0, 400)
    assert [int(v) for v in values] == list(range(1500))
    assert end == 1500
    # More batches later: the bound moves with them.
    for i in range(300):
        producer.produce(topic, b"%d" % (1500 + i), partition=0)
    assert producer.flush(15) == 0
    assert fresh.newest_offsets(topic) == {0: 1800, 1: 700}


def _identity_headers(ordinal: int) -> list[tuple[str, bytes]]:
    return [(IDENTITY, b"7 %d task 0" % ordinal)]


def _legacy_headers(ordinal: int) -> list[tuple[str, bytes]]:
    """The three headers earlier versions wrote for an idempotent append."""
    return [(PRODUCER, b"task 0"), (SEQ, b"7"), (ORDINAL, b"%d" % ordinal)]


@pytest.mark.parametrize("headers_of", [_identity_headers, _legacy_headers], ids=["samza.id", "legacy"])
def test_a_cut_short_append_is_completed_by_its_retry(
    kafka_bootstrap: str, kafka_topic_prefix: str, headers_of: Callable[[int], list[tuple[str, bytes]]]
) -> None:
    system = KafkaSystem("kafka", kafka_bootstrap)
    topic = kafka_topic_prefix + "partial-" + headers_of.__name__.strip("_")
    system.create_stream(topic, 1)
    # A task crashed after two of its three records of epoch 7 reached the broker (written by
    # this version, or by an earlier one with its three headers) …
    raw = Producer({"bootstrap.servers": kafka_bootstrap})
    for ordinal in range(2):
        raw.produce(topic, b"v%d" % ordinal, partition=0, headers=headers_of(ordinal))
    assert raw.flush(10) == 0
    # … and, restarted, appends the whole epoch again.
    records = [Record(MessageKind.USER, None, b"v%d" % i) for i in range(3)]
    system.append(topic, 0, records, producer="task 0", producer_seq=7)
    values, offsets, _end = read_values(system, topic, 0, 100)
    assert values == [b"v0", b"v1", b"v2"]
    assert offsets == [0, 1, 4]
    # A reader in another process (no tracker yet) starting mid-way agrees.
    fresh = KafkaSystem("kafka", kafka_bootstrap, **{"client.id": kafka_topic_prefix + "fresh"})
    fetched = fresh.fetch(topic, 0, 2, fresh.newest_offsets(topic)[0], 100)
    assert [r.value for _f, rs in fetched.batches for r in rs] == [b"v2"]


def test_compacted_streams_are_compacted_topics(kafka_bootstrap: str, kafka_topic_prefix: str) -> None:
    system = KafkaSystem("kafka", kafka_bootstrap, topic_config={"retention.ms": "3600000"})
    topic = kafka_topic_prefix + "changelog"
    assert system.create_stream(topic, 2, compacted=True)
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    (future,) = admin.describe_configs([ConfigResource("topic", topic)]).values()
    config = {name: entry.value for name, entry in future.result(timeout=10).items()}
    assert config["cleanup.policy"] == "compact"
    assert config["retention.ms"] == "3600000"


def test_read_frame_shows_a_tombstone_as_a_none_value(kafka_bootstrap: str, kafka_topic_prefix: str) -> None:
    system = KafkaSystem("kafka", kafka_bootstrap)
    topic = kafka_topic_prefix + "deletes"
    system.create_stream(topic, 1, compacted=True)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    producer.produce(topic, key=b'"k1"', value=b'{"a": 1}')
    producer.produce(topic, key=b'"k1"', value=None)
    assert producer.flush(10) == 0
    frame = system.read_frame(topic)
    assert list(zip(frame["key"], frame["value"], strict=True)) == [("k1", {"a": 1}), ("k1", None)]


def test_keyed_placement_matches_the_embedded_system(
    kafka_bootstrap: str, kafka_topic_prefix: str, tmp_path: Path
) -> None:
    kafka = KafkaSystem("kafka", kafka_bootstrap)
    embedded = EmbeddedSystem("embedded", path=tmp_path)
    topic = kafka_topic_prefix + "pages"
    values = [{"page": f"page-{i % 37}", "n": i} for i in range(200)]
    for system in (kafka, embedded):
        system.create_stream(topic, 5)
        system.write(topic, values, key_fn=lambda v: v["page"])
    placed = [
        dict(zip(frame["key"], frame["partition"], strict=True))
        for frame in (kafka.read_frame(topic), embedded.read_frame(topic))
    ]
    assert placed[0] == placed[1]
    assert len(set(placed[0].values())) == 5


def test_delete_before_is_a_logged_no_op_on_tansu(
    kafka_bootstrap: str, kafka_topic_prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    system = KafkaSystem("kafka", kafka_bootstrap)
    if not system._is_tansu():
        pytest.skip("the broker is a real Kafka: DeleteRecords is sent")
    topic = kafka_topic_prefix + "retained"
    system.create_stream(topic, 1)
    system.append(topic, 0, [Record(MessageKind.USER, None, b"x")] * 3)
    with caplog.at_level(logging.INFO, logger="samza_nb.systems.kafka"):
        assert system.delete_before(topic, 0, 2) == 0
    assert "DeleteRecords" in caplog.text and topic in caplog.text
    assert system.oldest_offsets(topic) == {0: 0}
    assert system.consumer_lag(topic, {0: 1}) == {0: 2}


def test_unreachable_broker_fails_once_within_bounded_time() -> None:
    system = KafkaSystem("kafka", "127.0.0.1:1", timeout=1.0, retries=2)
    started = time.monotonic()
    with pytest.raises(StreamSystemError) as raised:
        system.create_stream("anything", 1)
    elapsed = time.monotonic() - started
    message = str(raised.value)
    assert "127.0.0.1:1" in message and "list topics" in message and "2 attempts" in message
    assert elapsed < 10


def test_secrets_never_show(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    system = KafkaSystem(
        "kafka",
        "127.0.0.1:1",
        timeout=0.5,
        retries=1,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_password=SECRET,
        **{"sasl.jaas.config": JAAS},
    )
    assert SECRET not in repr(system) and "jaas-secret-1" not in repr(system)
    assert "sasl.password='********'" in repr(system)
    with caplog.at_level(logging.DEBUG), pytest.raises(StreamSystemError) as raised:
        system.list_streams()
    assert SECRET not in str(raised.value) and SECRET not in caplog.text
    # Secrets from a properties file, named by Samza-style keys: read, never shown.
    properties = tmp_path / "client.properties"
    properties.write_text(f"sasl.password={SECRET}\nsecurity.protocol=SASL_PLAINTEXT\n")
    configured = KafkaSystem.from_config(
        "prod",
        {
            "systems.prod.consumer.bootstrap.servers": "broker:9092",
            "systems.prod.consumer.fetch.min.bytes": "1",
            "systems.prod.producer.linger.ms": "20",
            "systems.prod.config.file": str(properties),
        },
    )
    assert configured.bootstrap_servers == "broker:9092"
    assert SECRET not in repr(configured) and SECRET not in str(pickle.dumps(configured))
    options = configured.settings.producer_options({})
    assert options["sasl.password"] == SECRET and options["linger.ms"] == "20"
    assert "fetch.min.bytes" not in options


def test_pickled_system_carries_no_client(kafka_bootstrap: str, kafka_topic_prefix: str) -> None:
    system = KafkaSystem("kafka", kafka_bootstrap)
    topic = kafka_topic_prefix + "shipped"
    system.create_stream(topic, 2)
    system.write(topic, [1, 2, 3])
    state = system.__getstate__()
    assert all(type(value).__module__.split(".")[0] != "cimpl" for value in state.values())
    copy = pickle.loads(pickle.dumps(system))
    assert sorted(copy.read_frame(topic)["value"]) == [1, 2, 3]


def test_quickstart_writes_its_input_topic(kafka_bootstrap: str, kafka_topic_prefix: str, capsys: pytest.CaptureFixture[str]) -> None:
    from samza_nb.examples.page_views import expected_counts, generate_page_views, main

    topic = kafka_topic_prefix + "page-views"
    assert main(["--kafka", kafka_bootstrap, "--events", "500", "--topic", topic]) == 0
    assert "wrote 500 page views" in capsys.readouterr().out
    system = KafkaSystem("kafka", kafka_bootstrap)
    frame = system.read_frame(topic)
    assert system.partition_count(topic) == 4
    assert len(frame) == 500
    us = [value["page"] for value in frame["value"] if value["country"] == "US"]
    assert len(us) == sum(expected_counts(generate_page_views(500)).values())


def test_an_epoch_in_one_transaction_and_its_retry_read_once(kafka_bootstrap: str, kafka_topic_prefix: str) -> None:
    system = KafkaSystem("kafka", kafka_bootstrap)
    outputs, changelog = kafka_topic_prefix + "out", kafka_topic_prefix + "changelog"
    system.create_stream(outputs, 2)
    system.create_stream(changelog, 2, compacted=True)

    def epoch(transaction: KafkaTransaction, seq: int, *, commit: bool) -> None:
        transaction.begin()
        transaction.append(outputs, 1, [Record(MessageKind.USER, b"k", b"out-%d" % seq)], producer="task-1", producer_seq=seq)
        transaction.append(changelog, 1, [Record(MessageKind.USER, b"k", b"state-%d" % seq)], producer="task-1", producer_seq=seq)
        if commit:
            transaction.commit()
        else:
            transaction.abort()

    transaction = KafkaTransaction(system, kafka_topic_prefix + "task-1")
    epoch(transaction, 1, commit=True)
    epoch(transaction, 2, commit=False)  # the process "dies" inside epoch 2 …
    transaction.close()
    restarted = KafkaTransaction(system, kafka_topic_prefix + "task-1")  # … and its successor redoes it
    epoch(restarted, 2, commit=True)
    epoch(restarted, 3, commit=True)
    restarted.close()
    values, offsets, end = read_values(system, outputs, 1, 100)
    assert end == system.newest_offsets(outputs)[1]
    assert offsets != list(range(len(offsets)))  # commit/abort markers
    # Each result once: a real Kafka hides the aborted copy from read_committed readers; Tansu
    # shows it, and the retry is dropped as its duplicate (a redone epoch gives the same records).
    assert values == [b"out-1", b"out-2", b"out-3"]
    restored = system.fetch(changelog, 1, 0, system.newest_offsets(changelog)[1], 100, producer_seq_below=3)
    assert [r.value for _f, rs in restored.batches for r in rs] == [b"state-1", b"state-2"]


def test_a_fenced_producer_fails_with_a_stream_error(kafka_bootstrap: str, kafka_topic_prefix: str) -> None:
    """A task's kept producer fenced by a newer one with its id (the task ran in another Python
    worker since) fails its next flush with a StreamSystemError saying so, which makes
    TaskTransaction.run retry with a new producer. confluent-kafka itself raises SystemError
    there (its delivery callbacks run with its own exception set)."""
    system = KafkaSystem("kafka", kafka_bootstrap)
    topic = kafka_topic_prefix + "fenced"
    system.create_stream(topic, 3)
    kept = KafkaTransaction(system, kafka_topic_prefix + "task-1")
    kept.begin()
    kept.append(topic, 0, [Record(MessageKind.USER, b"k", b"first")], producer="task-1", producer_seq=1)
    kept.commit()
    newer = KafkaTransaction(system, kafka_topic_prefix + "task-1")
    kept.begin()
    for partition in range(3):
        kept.append(topic, partition, [Record(MessageKind.USER, b"k", b"stale")], producer="task-1", producer_seq=2)
    with pytest.raises(StreamSystemError, match=r"transaction '.*task-1'.*(flush|commit) failed: this producer was fenced"):
        kept.flush()
        kept.commit()
    with pytest.raises(StreamSystemError):
        kept.close()
    newer.begin()
    newer.append(topic, 1, [Record(MessageKind.USER, b"k", b"second")], producer="task-1", producer_seq=2)
    newer.commit()
    newer.close()
    values, _offsets, _end = read_values(system, topic, 1, 100)
    assert b"second" in values


class _FlushLosesItsException:
    """A producer whose flush() fails as confluent-kafka's did once in CI: a SystemError with
    no exception attached (no KafkaException to say the producer was fenced)."""

    def __init__(self, producer: object) -> None:
        self._producer = producer

    def flush(self, *args: object) -> int:
        lost = False
        try:
            self._producer.flush(*args)  # type: ignore[attr-defined]
        except SystemError:
            lost = True
        if lost:  # raised outside the handler, so the error carries no context either
            msg = "<built-in method flush of cimpl.Producer object> returned NULL without setting an exception"
            raise SystemError(msg)
        return 0

    def __getattr__(self, name: str) -> object:
        return getattr(self._producer, name)


def test_a_fenced_producer_whose_flush_loses_its_error_is_still_named_fenced(
    kafka_bootstrap: str, kafka_topic_prefix: str
) -> None:
    system = KafkaSystem("kafka", kafka_bootstrap)
    topic = kafka_topic_prefix + "fenced-bare"
    system.create_stream(topic, 1)
    kept = KafkaTransaction(system, kafka_topic_prefix + "task-2")
    KafkaTransaction(system, kafka_topic_prefix + "task-2").close()  # fences ``kept``
    kept.begin()
    kept.append(topic, 0, [Record(MessageKind.USER, b"k", b"stale")], producer="task-2", producer_seq=1)
    kept._producer = _FlushLosesItsException(kept._producer)
    with pytest.raises(StreamSystemError, match=r"transaction '.*task-2': flush failed: this producer was fenced"):
        kept.flush()


def test_a_topic_name_kafka_cannot_hold_is_refused_before_the_broker_is_asked(
    kafka_bootstrap: str, kafka_topic_prefix: str
) -> None:
    # Tansu takes a 260-character topic; Kafka refuses anything over 249 (Topic.validate).
    system = KafkaSystem("kafka", kafka_bootstrap)
    try:
        name = f"{kafka_topic_prefix}-" + "x" * 250
        with pytest.raises(StreamSystemError, match=r"at most 249 characters .*\(\d+ given\)"):
            system.create_stream(name, 1)
        assert system.partition_count(name) is None
        fits = f"{kafka_topic_prefix}-" + "y" * (249 - len(kafka_topic_prefix) - 1)
        assert len(fits) == 249 and system.create_stream(fits, 1)
    finally:
        system.close()


@pytest.mark.parametrize("long_part", ["app", "op_id"])
def test_a_plan_whose_changelog_or_intermediate_stream_kafka_cannot_name_is_refused(
    kafka_bootstrap: str, kafka_topic_prefix: str, long_part: str
) -> None:
    from samza_nb.api import StreamApplication, Windows
    from samza_nb.errors import PlanError

    system = KafkaSystem("kafka", kafka_bootstrap)
    try:
        system.create_stream(f"{kafka_topic_prefix}-in", 2)
        app_name = "a" * 120 if long_part == "app" else "short"  # twice in a changelog name
        op_id = "p" * 240 if long_part == "op_id" else "by-key"
        app = StreamApplication(app_name, job_id="1")
        (
            app.input(system.input(f"{kafka_topic_prefix}-in"))
            .partition_by(lambda m: m, op_id=op_id)
            .window(Windows.tumbling(1000, initial=lambda: 0, fold=lambda m, n: n + 1), op_id="count")
            .sink(print)
        )
        with pytest.raises(PlanError) as raised:
            app.plan()
        message = str(raised.value)
        what = "the changelog of store" if long_part == "app" else "the intermediate stream of"
        assert what in message and "system 'kafka'" in message and "at most 249 characters" in message
        assert f"app name (now {len(app_name)} characters)" in message
    finally:
        system.close()


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"security.protocol": "SSL"}, "answers Kafka requests without TLS, but security.protocol is SSL"),
        (
            {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "app",
             "sasl.password": "pw-never-shown"},
            "answers Kafka requests in plaintext, but the SASL handshake failed",
        ),
    ],
)
def test_a_security_protocol_the_listener_does_not_speak_is_named_as_the_cause(
    kafka_bootstrap: str, options: dict[str, str], said: str
) -> None:
    system = KafkaSystem("kafka", kafka_bootstrap, timeout=1, retries=1, **options)
    try:
        with pytest.raises(StreamSystemError) as raised:
            system.create_stream("never-made", 1)
    finally:
        system.close()
    message = str(raised.value)
    assert said in message and kafka_bootstrap in message
    assert "pw-never-shown" not in message


def test_a_bootstrap_server_nothing_listens_on_is_named_as_refusing(zk_connect: str) -> None:
    import socket

    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    zookeeper = zk_connect.split(",")[0].split("/")[0]  # a live server that is not Kafka
    for bootstrap, said in (
        (f"127.0.0.1:{port}", f"no bootstrap server accepts connections (127.0.0.1:{port}: Connection refused)"),
        (zookeeper, f"{zookeeper} accepts connections but does not answer plaintext Kafka requests"),
    ):
        system = KafkaSystem("kafka", bootstrap, timeout=1, retries=1)
        try:
            with pytest.raises(StreamSystemError, match=re.escape(said)):
                system.create_stream("never-made", 1)
        finally:
            system.close()


def test_bootstrap_addresses_are_read_as_librdkafka_reads_them() -> None:
    from samza_nb.kafka_settings import _host_and_port

    assert _host_and_port("127.0.0.1:9093") == ("127.0.0.1", 9093)
    assert _host_and_port(" PLAINTEXT://broker:19092 ") == ("broker", 19092)
    assert _host_and_port("broker") == ("broker", 9092)
    assert _host_and_port("[::1]:9094") == ("::1", 9094)
    assert _host_and_port("::1") == ("::1", 9092)


def test_a_listener_answering_no_kafka_is_not_read_as_a_huge_answer() -> None:
    import socket
    import threading
    import tracemalloc

    from samza_nb.kafka_settings import broker_api_versions

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]

        def alert() -> None:  # a TLS alert: its first 4 bytes read as a length of ~352 MB
            connection, _ = server.accept()
            with connection:
                connection.recv(64)
                connection.sendall(b"\x15\x03\x03\x00\x02\x02\x46")

        thread = threading.Thread(target=alert)
        thread.start()
        tracemalloc.start()
        try:
            assert broker_api_versions(f"127.0.0.1:{port}", 2.0) is None
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        thread.join(5)
    assert peak < 1 << 24  # no buffer of the ~352 MB the alert's bytes read as


def test_a_topic_made_again_with_more_partitions_takes_appends_at_once(
    kafka_bootstrap: str, kafka_topic_prefix: str
) -> None:
    """The process's producer knew the topic with fewer partitions: it asks the cluster again
    instead of failing with librdkafka's 'Unknown partition' for minutes."""
    system = KafkaSystem("kafka", kafka_bootstrap)
    topic = f"{kafka_topic_prefix}-regrown"
    system.create_stream(topic, 2)
    system.write(topic, [{"i": i} for i in range(10)], key_fn=lambda e: str(e["i"]))
    system.delete_stream(topic)
    system.create_stream(topic, 6)
    system.write(topic, [{"i": i} for i in range(60)], key_fn=lambda e: str(e["i"]))
    assert sum(system.newest_offsets(topic).values()) == 60
    system.delete_stream(topic)


def test_a_record_the_broker_refuses_names_topic_partition_and_leaves_nothing_for_a_later_append(
    kafka_bootstrap: str, kafka_topic_prefix: str
) -> None:
    system = KafkaSystem("kafka", kafka_bootstrap)
    topic = f"{kafka_topic_prefix}-too-large"
    system.create_stream(topic, 1)
    values = [{"i": i} for i in range(5)] + [{"big": "x" * 1_100_000}] + [{"i": i} for i in range(5, 10)]
    with pytest.raises(StreamSystemError, match=rf"append to topic '{topic}' partition 0: record 5 failed .*the 5 before it were sent"):
        system.write(topic, values)
    system.write(topic, [{"after": 1}])
    assert list(system.read_frame(topic)["value"]) == [{"i": i} for i in range(5)] + [{"after": 1}]
    system.delete_stream(topic)

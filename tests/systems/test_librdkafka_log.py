"""librdkafka's log lines reach the ``samza_nb.systems.kafka.librdkafka`` logger; a producer
fenced by a newer one with its transactional id (samza_nb's own kept producers, on purpose) and
failed connections (the Kafka system reports outages itself) are debug, and other lines are
not repeated."""

from __future__ import annotations

import logging

import pytest

from samza_nb.kafka_settings import KafkaClientConfig


def test_fence_lines_are_debug_and_other_lines_keep_their_level(caplog: pytest.LogCaptureFixture) -> None:
    log = KafkaClientConfig("127.0.0.1:9092").producer_options({})["logger"]
    assert log.name == "samza_nb.systems.kafka.librdkafka"
    with caplog.at_level(logging.DEBUG, logger=log.name):
        log.error("TXNERR [rdkafka#producer-3] Fatal transaction error: Local: This instance has been fenced by a newer instance (_FENCED)")
        log.warning('ADDPARTS [rdkafka#producer-3] Failed to add partition: Broker: There is a newer producer with the same transactionalId which fences the current one')
        log.error("SASL [rdkafka#producer-4] 127.0.0.1:9/bootstrap: SASL authentication failed")
    levels = [record.levelname for record in caplog.records]
    assert levels == ["DEBUG", "DEBUG", "ERROR"]


def test_failed_connections_are_debug_and_a_repeated_line_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    log = KafkaClientConfig("127.0.0.1:9092").producer_options({})["logger"]
    with caplog.at_level(logging.INFO, logger=log.name):
        for attempt in range(20):
            log.error(f"FAIL [rdkafka#producer-{attempt}] [thrd:127.0.0.1:7/bootstrap]: 127.0.0.1:7/bootstrap: Connect to ipv4#127.0.0.1:7 failed: Connection refused (after {attempt}ms in state CONNECT)")
            log.info(f"FAIL [rdkafka#producer-{attempt}] 127.0.0.1:7/11: Disconnected: connection closed by peer (after {attempt}ms in state UP)")
            log.warning(f"MAXPOLL [rdkafka#consumer-{attempt}] Application maximum poll interval ({attempt}ms) exceeded by {attempt}ms")
    assert [record.getMessage()[:7] for record in caplog.records] == ["MAXPOLL"]


def test_a_run_forgets_the_high_watermarks_this_process_saw_of_a_topic() -> None:
    """Another process may have deleted and made the topic again: the largest offsets seen
    before would hide its real end (and the out-of-range check) from the next run. The dedup
    trackers, which describe the records themselves, stay."""
    from samza_nb.systems.kafka.clients import ProcessClients

    clients = ProcessClients(KafkaClientConfig("127.0.0.1:9092"))
    clients.seen_high[("t", 0)] = 100
    clients.probed[("t", 0)] = (90, 100)
    clients.seen_high[("other", 0)] = 7
    clients.trackers[("t", 0)] = object()  # type: ignore[assignment]
    clients.forget_offsets("t")
    assert clients.seen_high == {("other", 0): 7} and clients.probed == {}
    assert ("t", 0) in clients.trackers

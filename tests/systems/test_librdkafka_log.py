"""librdkafka's log lines reach the ``samza_nb.systems.librdkafka`` logger; a producer fenced by
a newer one with its transactional id (samza_nb's own kept producers, on purpose) is debug."""

from __future__ import annotations

import logging

import pytest

from samza_nb.kafka_settings import KafkaClientConfig


def test_fence_lines_are_debug_and_other_lines_keep_their_level(caplog: pytest.LogCaptureFixture) -> None:
    log = KafkaClientConfig("127.0.0.1:9092").producer_options({})["logger"]
    assert log.name == "samza_nb.systems.librdkafka"
    with caplog.at_level(logging.DEBUG, logger=log.name):
        log.error("TXNERR [rdkafka#producer-3] Fatal transaction error: Local: This instance has been fenced by a newer instance (_FENCED)")
        log.warning('ADDPARTS [rdkafka#producer-3] Failed to add partition: Broker: There is a newer producer with the same transactionalId which fences the current one')
        log.error("FAIL [rdkafka#producer-4] 127.0.0.1:1/bootstrap: Connect to ipv4#127.0.0.1:1 failed")
    levels = [record.levelname for record in caplog.records]
    assert levels == ["DEBUG", "DEBUG", "ERROR"]

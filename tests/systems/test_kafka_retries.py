"""The retry policy of broker calls (samza_nb/systems/kafka/outage.py) without a broker: which
failures are waited out, and what a user sees of them on the ``samza_nb.systems.kafka`` logger."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
from confluent_kafka import KafkaError, KafkaException

from samza_nb.errors import StreamSystemError
from samza_nb.systems.kafka.outage import OutageWatch, RetryPolicy, call_with_retries

WHERE = "Kafka system 'kafka' (bootstrap servers 127.0.0.1:9)"


def _failing(times: int) -> Callable[[float], str]:
    """A broker call that times out ``times`` times, then answers."""
    calls = 0

    def call(timeout: float) -> str:
        nonlocal calls
        calls += 1
        if calls <= times:
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "Local: Timed out"))
        return f"answered on try {calls}"

    return call


def _call(call: Callable[[float], str], watch: OutageWatch, outage_wait: float = 20.0) -> str:
    return call_with_retries(
        call,
        operation="list end offsets of topic 'in'",
        where=WHERE,
        policy=RetryPolicy(timeout=1.0, retries=3, outage_wait=outage_wait),
        watch=watch,
        scrub=lambda text: text,
        diagnose=lambda: "",
    )


def _reached() -> OutageWatch:
    watch = OutageWatch()
    watch.answered(WHERE)
    return watch


def _lines(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "samza_nb.systems.kafka" and r.levelno == level]


def test_a_call_that_answers_on_its_next_try_says_nothing(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="samza_nb.systems.kafka")
    assert _call(_failing(1), _reached()) == "answered on try 2"
    assert _lines(caplog, logging.WARNING) == []
    assert _lines(caplog, logging.INFO) == []


def test_an_outage_past_a_second_warns_once_and_says_when_it_ended(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="samza_nb.systems.kafka")
    watch = _reached()
    assert _call(_failing(4), watch) == "answered on try 5"  # pauses 0.2 + 0.4 + 0.8 + 1.0 s
    (warning,) = _lines(caplog, logging.WARNING)
    assert WHERE in warning and "list end offsets of topic 'in': Local: Timed out" in warning
    assert "waiting up to 20s" in warning
    (info,) = _lines(caplog, logging.INFO)
    assert info.startswith(f"{WHERE}: the brokers answer again after ")
    # The next outage is a new one: it warns again.
    assert _call(_failing(4), watch) == "answered on try 5"
    assert len(_lines(caplog, logging.WARNING)) == 2


def test_brokers_never_reached_are_not_waited_for() -> None:
    with pytest.raises(StreamSystemError, match=r"failed after 3 attempts .*Local: Timed out; is the broker reachable\?"):
        _call(_failing(10), OutageWatch())

"""Broker outages (issue 43): one shorter than ``outage_wait`` is waited out with one warning and
no librdkafka lines, and the work completes with exact counts; a longer one fails with one line
naming the brokers and the operation. The broker is a Tansu of the test's own behind a TCP gate
on 127.0.0.1 (tests/systems/kafka_gate.py) that the test closes and opens again."""

from __future__ import annotations

import logging
import pickle
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from samza_nb.api import StreamApplication
from samza_nb.errors import ConfigError, StreamSystemError
from samza_nb.job import run
from samza_nb.systems import KafkaSystem

sys.path.insert(0, str(Path(__file__).parent))
from kafka_gate import TcpGate, gated_broker  # noqa: E402

pytestmark = pytest.mark.services

EVENTS = 2_000


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[tuple[str, TcpGate]]:
    with gated_broker(tmp_path) as gated:
        yield gated


def outage(gate: TcpGate, seconds: float) -> threading.Timer:
    """Close the gate now and open it again after ``seconds``."""
    gate.close()
    timer = threading.Timer(seconds, gate.open)
    timer.start()
    return timer


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What a notebook's stderr shows of the Kafka clients (WARNING and above)."""
    return [
        record.getMessage()
        for record in caplog.records
        if record.name.startswith("samza_nb.systems.kafka") and record.levelno >= logging.WARNING
    ]


def test_a_short_outage_is_waited_out_by_system_calls_with_one_line(
    broker: tuple[str, TcpGate], caplog: pytest.LogCaptureFixture
) -> None:
    bootstrap, gate = broker
    system = KafkaSystem("kafka", bootstrap, timeout=2.0, retries=2, outage_wait=20)
    system.create_stream("events", 2)
    system.write("events", list(range(100)))
    caplog.set_level(logging.INFO, logger="samza_nb.systems.kafka")
    started = time.monotonic()
    outage(gate, 5).join(0)
    assert sum(system.newest_offsets("events").values()) == 100  # "No leaders found" until open
    system.write("events", list(range(100, 150)))
    assert sorted(system.read_frame("events")["value"]) == list(range(150))
    assert time.monotonic() - started >= 4.5
    (line,) = warnings_of(caplog)
    assert bootstrap in line and "waiting up to 20s" in line
    assert any("answer again" in record.getMessage() for record in caplog.records)


def test_an_outage_longer_than_the_bound_fails_with_one_line(
    broker: tuple[str, TcpGate], caplog: pytest.LogCaptureFixture
) -> None:
    bootstrap, gate = broker
    system = KafkaSystem("kafka", bootstrap, timeout=1.0, retries=2, outage_wait=3)
    system.create_stream("events", 1)
    system.write("events", list(range(10)))
    caplog.set_level(logging.INFO, logger="samza_nb.systems.kafka")
    gate.close()
    started = time.monotonic()
    with pytest.raises(StreamSystemError) as raised:
        system.newest_offsets("events")
    waited = time.monotonic() - started
    message = str(raised.value)
    assert "\n" not in message and bootstrap in message
    assert "list end offsets of topic 'events' failed" in message and "up to 3s" in message
    assert 3 <= waited < 10
    assert len(warnings_of(caplog)) == 1  # the one "waiting" line; the error says the rest


@pytest.mark.parametrize("guarantee", ["at-least-once", "exactly-once"])
def test_a_job_runs_through_a_short_outage_with_exact_counts(
    guarantee: str, broker: tuple[str, TcpGate], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    bootstrap, gate = broker
    system = KafkaSystem("kafka", bootstrap, outage_wait=30)
    system.create_stream("in", 2)
    system.write("in", [{"i": i} for i in range(EVENTS)], key_fn=lambda event: str(event["i"]))
    app = StreamApplication("outage", job_id="1")
    events = app.input(system.input("in", partitions=2, serde="json"))
    evens = app.output(system.output("out", partitions=2, serde="json"))
    (
        events.filter(lambda event: event["i"] % 2 == 0)
        .partition_by(lambda event: str(event["i"]), lambda event: event, op_id="by-i")
        .send_to(evens)
    )
    config = {
        "job.home": str(tmp_path / "home"),
        "task.max.epoch.messages": "100",
        "task.processing.guarantee": guarantee,
    }
    caplog.set_level(logging.INFO, logger="samza_nb.systems.kafka")
    job = run(app, config, until="caught-up", background=True, executor="local")
    deadline = time.monotonic() + 20
    while job.metrics()["streams"]["in"].get("in", 0) < EVENTS // 10:
        assert time.monotonic() < deadline and not job.status().done
        time.sleep(0.05)
    assert not job.status().done
    outage(gate, 5).join()
    job.wait(60)
    values = [value["i"] for value in system.read_frame("out")["value"]]
    assert sorted(values) == list(range(0, EVENTS, 2))
    assert len(warnings_of(caplog)) <= 1


def test_a_job_fails_with_one_line_when_the_outage_outlasts_the_bound(
    broker: tuple[str, TcpGate], tmp_path: Path
) -> None:
    bootstrap, gate = broker
    system = KafkaSystem("kafka", bootstrap, timeout=1.0, retries=2, outage_wait=3)
    system.create_stream("in", 1)
    system.write("in", [{"i": i} for i in range(EVENTS)])
    app = StreamApplication("outage-long", job_id="1")
    events = app.input(system.input("in", partitions=1, serde="json"))
    events.send_to(app.output(system.output("out", partitions=1, serde="json")))
    config = {"job.home": str(tmp_path / "home"), "task.max.epoch.messages": "100"}
    job = run(app, config, until="caught-up", background=True, executor="local")
    deadline = time.monotonic() + 20
    while job.metrics()["streams"]["in"].get("in", 0) < EVENTS // 10:
        assert time.monotonic() < deadline and not job.status().done
        time.sleep(0.05)
    gate.close()
    with pytest.raises(StreamSystemError) as raised:
        job.wait(30)
    message = str(raised.value)
    assert "\n" not in message and bootstrap in message


def test_the_outage_bound_is_a_system_key() -> None:
    config = {"systems.prod.bootstrap.servers": "broker:9092", "systems.prod.outage.wait.ms": "2500"}
    system = KafkaSystem.from_config("prod", config)
    assert system.outage_wait == 2.5
    assert "outage.wait.ms" not in system.settings.admin_options()  # not a librdkafka option
    assert KafkaSystem("kafka", "broker:9092").outage_wait == 60
    with pytest.raises(ConfigError, match=r"systems.prod.outage.wait.ms"):
        KafkaSystem.from_config("prod", {**config, "systems.prod.outage.wait.ms": "-1"})


def test_a_pickled_system_waits_out_outages_as_the_one_that_reached_the_brokers(
    broker: tuple[str, TcpGate],
) -> None:
    bootstrap, gate = broker
    system = KafkaSystem("kafka", bootstrap, timeout=1.0, retries=1, outage_wait=30)
    system.create_stream("events", 1)
    system.write("events", list(range(10)))
    shipped = pickle.dumps(system)
    system._clients().outage.reached = False  # this process's clients are a fresh worker's …
    copy = pickle.loads(shipped)  # … which the system shipped to it tells otherwise
    assert copy._clients().outage.reached
    outage(gate, 3)
    assert copy.newest_offsets("events") == {0: 10}

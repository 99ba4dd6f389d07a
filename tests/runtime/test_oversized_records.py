"""A record larger than its destination takes (issue 43, item 1): checked before the epoch
appends, against the Kafka topic's limit; named by the input stream, partition and offset it
came from; skipped under ``task.errors.skip``, else one clear error. Counts are exact."""

from __future__ import annotations

from pathlib import Path

import pytest

from samza_nb.api import StreamApplication
from samza_nb.errors import TaskError
from samza_nb.systems import EmbeddedSystem, KafkaSystem
from samza_nb.testing import StepClock, run_local

pytestmark = pytest.mark.services

_BIG = 1_500_000  # more than Kafka's default 1 MB record limit


def _events() -> list[dict[str, object]]:
    """Twelve small events and, at offset 4 of partition 0, one of 1.5 MB."""
    events: list[dict[str, object]] = [{"user": f"u{i}", "text": "x" * 10} for i in range(12)]
    events.insert(4, {"user": "u-big", "text": "y" * _BIG})
    return events


def _app(tmp_path: Path, kafka: KafkaSystem, prefix: str) -> StreamApplication:
    log = EmbeddedSystem("embedded", path=tmp_path / "log")
    log.create_stream("events", 1)
    log.write("events", _events(), partition=0)
    log.end_stream("events")
    app = StreamApplication(f"{prefix}-big", job_id="1")
    out = app.output(kafka.output(f"{prefix}-out", partitions=2, serde="json"))
    (
        app.input(log.input("events", partitions=1, serde="json"))
        .partition_by(lambda e: e["user"], lambda e: e, op_id="by-user")
        .map(lambda kv: kv.value)
        .send_to(out)
    )
    return app


def _config(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"job.home": str(tmp_path / "home"), "job.default.system": "kafka", **extra}


def test_an_oversized_record_is_one_error_naming_its_input_offset(
    kafka_bootstrap: str, kafka_topic_prefix: str, tmp_path: Path
) -> None:
    kafka = KafkaSystem("kafka", bootstrap_servers=kafka_bootstrap)
    assert kafka.max_record_bytes(f"{kafka_topic_prefix}-nothing-yet") <= 1_048_588
    app = _app(tmp_path, kafka, kafka_topic_prefix)
    with pytest.raises(TaskError) as caught:
        run_local(app, _config(tmp_path), clock=StepClock())
    error = caught.value
    shuffle = f"{kafka_topic_prefix}-big-1-partition_by-by-user"
    assert (error.op_id, error.task, error.ssp, error.offset) == (shuffle, "Partition 0", "events#0", 4)
    text = str(error)
    assert "bytes (key and value) is larger than stream" in text and repr(shuffle) in text
    assert "task.errors.skip=true" in text
    # Nothing of the failed epoch reached the intermediate topic.
    assert sum(kafka.newest_offsets(shuffle).values()) == 0


def test_under_task_errors_skip_the_oversized_record_alone_is_skipped(
    kafka_bootstrap: str, kafka_topic_prefix: str, tmp_path: Path
) -> None:
    kafka = KafkaSystem("kafka", bootstrap_servers=kafka_bootstrap)
    app = _app(tmp_path, kafka, kafka_topic_prefix)
    job = run_local(app, _config(tmp_path, **{"task.errors.skip": "true"}), clock=StepClock(),
                    until="caught-up")
    frame = job.collect(f"{kafka_topic_prefix}-out")
    assert sorted(value["user"] for value in frame["value"]) == sorted(f"u{i}" for i in range(12))
    assert sum(task["skipped"] for task in job.metrics()["tasks"].values()) == 1


def test_a_broadcast_skips_an_oversized_record_alone_under_task_errors_skip(
    kafka_bootstrap: str, kafka_topic_prefix: str, tmp_path: Path
) -> None:
    kafka = KafkaSystem("kafka", bootstrap_servers=kafka_bootstrap)
    log = EmbeddedSystem("embedded", path=tmp_path / "log")
    log.create_stream("events", 1)
    log.write("events", _events(), partition=0)
    log.end_stream("events")
    app = StreamApplication(f"{kafka_topic_prefix}-all", job_id="1")
    out = app.output(kafka.output(f"{kafka_topic_prefix}-out", partitions=1, serde="json"))
    app.input(log.input("events", partitions=1, serde="json")).broadcast(op_id="all").send_to(out)
    with pytest.raises(TaskError) as caught:
        run_local(app, _config(tmp_path), clock=StepClock())
    assert (caught.value.ssp, caught.value.offset) == ("events#0", 4)
    job = run_local(app, _config(tmp_path, **{"task.errors.skip": "true"}), clock=StepClock(),
                    until="caught-up")
    frame = job.collect(f"{kafka_topic_prefix}-out")
    assert sorted(value["user"] for value in frame["value"]) == sorted(f"u{i}" for i in range(12))
    assert sum(task["skipped"] for task in job.metrics()["tasks"].values()) == 1

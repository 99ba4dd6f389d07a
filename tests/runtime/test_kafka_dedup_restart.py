"""A job restarted in a new process reads its Kafka shuffle from its checkpoint without scanning
the topic's history back: the dedup state its tasks committed with their offsets tells the cold
reads what was delivered (before, each cold read scanned back up to ``dedup_lookback`` = 1M
offsets). Counted in records fetched from the broker."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from samza_nb.api import StreamApplication
from samza_nb.examples.page_views import generate_page_views
from samza_nb.systems import KafkaSystem
from samza_nb.systems.kafka.clients import close_process_clients
from samza_nb.testing import run_local

pytestmark = pytest.mark.services


def _app(system: KafkaSystem, prefix: str) -> StreamApplication:
    app = StreamApplication(f"{prefix}cold", job_id="1")
    views = app.input(system.input(f"{prefix}views", partitions=2, serde="json"))
    out = app.output(system.output(f"{prefix}by-page", partitions=2, serde="json"))
    views.partition_by(lambda view: view["page"], lambda view: view["user"], op_id="by-page").send_to(out)
    return app


def _run_until(system: KafkaSystem, prefix: str, config: dict[str, str], count: int) -> Any:
    job = run_local(_app(system, prefix), config, until="forever", background=True)
    deadline = time.monotonic() + 120
    try:
        while len(job.collect(f"{prefix}by-page")) < count:
            assert time.monotonic() < deadline, f"{len(job.collect(f'{prefix}by-page'))} of {count} in 120 s"
            assert not job.status().done, job.status().error
            time.sleep(0.1)
    finally:
        job.stop()
    return job


@pytest.mark.parametrize("guarantee", ["at-least-once", "exactly-once"])
def test_a_restart_in_a_new_process_fetches_only_the_shuffles_new_records(
    kafka_bootstrap: str, kafka_topic_prefix: str, tmp_path: Path, guarantee: str
) -> None:
    system = KafkaSystem("kafka", kafka_bootstrap)
    views = f"{kafka_topic_prefix}views"
    system.create_stream(views, 2)
    events = generate_page_views(3_000, seed=5)
    system.write(views, events[:2_500])
    config = {
        "job.home": str(tmp_path / "home"),
        "task.max.epoch.messages": "500",
        "task.processing.guarantee": guarantee,
    }
    job = _run_until(system, kafka_topic_prefix, config, 2_500)
    shuffle = next(sid for sid, info in job.plan.streams.items() if info.kind == "intermediate")
    history = system.newest_offsets(shuffle)
    assert min(history.values()) > 500

    close_process_clients(system.settings)  # a new process: its reads start cold
    system.write(views, events[2_500:])
    _run_until(system, kafka_topic_prefix, config, 3_000)
    end = system.newest_offsets(shuffle)
    for partition in (0, 1):
        new = end[partition] - history[partition]
        assert 0 < new < history[partition]
        # Only what was appended since (the old history was never fetched again).
        assert system.fetched_records(shuffle, partition) <= new, (partition, history, end)

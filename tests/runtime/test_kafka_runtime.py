"""The engine on a real Kafka-protocol broker (the Tansu test broker): inputs, intermediate
streams, changelogs and outputs are topics; a Kafka input has no end-of-stream, so the
quickstart ends with a drain, which flushes its windows. Counts equal the plain-Python ones."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from samza_nb.api import KV, StreamApplication, Windows
from samza_nb.examples.page_views import expected_counts, generate_page_views
from samza_nb.job import run
from samza_nb.job.reset import reset_job
from samza_nb.metadata import NamespacedMetadataStore
from samza_nb.runtime.checkpoints import CHECKPOINT_NAMESPACE
from samza_nb.runtime.task.exactly_once import checkpoint_topic, read_topic_checkpoints
from samza_nb.systems import KafkaSystem

pytestmark = pytest.mark.services


def _quickstart(system: KafkaSystem, prefix: str) -> StreamApplication:
    app = StreamApplication(f"{prefix}-pages", job_id="1")
    views = app.input(system.input(f"{prefix}-page-views", partitions=4, serde="json"))
    counts = app.output(system.output(f"{prefix}-page-counts", partitions=4, serde="json"))
    (
        views.filter(lambda view: view["country"] == "US")
        .partition_by(lambda view: view["page"], lambda view: view, op_id="by-page")
        .window(
            Windows.keyed_tumbling(lambda kv: kv.key, timedelta(hours=1), initial=lambda: 0,
                                   fold=lambda kv, n: n + 1),
            op_id="count",
        )
        .map(lambda pane: KV(pane.key.key, pane.message))
        .send_to(counts)
    )
    return app


@pytest.mark.parametrize(
    ("executor", "guarantee"),
    [
        ("local", "at-least-once"),
        ("local", "exactly-once"),
        pytest.param("spark", "at-least-once", marks=pytest.mark.spark),
        pytest.param("spark", "exactly-once", marks=pytest.mark.spark),
    ],
)
def test_the_quickstart_on_kafka_drains_with_exact_counts(
    executor: str, guarantee: str, kafka_bootstrap: str, kafka_topic_prefix: str, tmp_path: Path,
    request: Any,
) -> None:
    if executor == "spark":
        request.getfixturevalue("spark")
    system = KafkaSystem("kafka", bootstrap_servers=kafka_bootstrap)
    events = generate_page_views(1_500, seed=13)
    system.create_stream(f"{kafka_topic_prefix}-page-views", 4)
    system.write(f"{kafka_topic_prefix}-page-views", events)
    config = {
        "job.home": str(tmp_path / "home"),
        "task.max.epoch.messages": "400",
        "job.drain-monitor.poll.interval.ms": "100",
        "task.processing.guarantee": guarantee,
    }
    job = run(_quickstart(system, kafka_topic_prefix), config, until="forever", background=True,
              executor=executor)
    deadline = time.monotonic() + 180
    while job.metrics()["streams"][f"{kafka_topic_prefix}-page-views"].get("in", 0) < len(events):
        assert time.monotonic() < deadline, f"read {job.metrics()['streams']} in 180 s"
        assert not job.status().done, job.status().error
        time.sleep(0.1)
    status = job.drain(wait=True, timeout=180)
    assert status.state == "drained"
    frame = job.collect(f"{kafka_topic_prefix}-page-counts")
    totals: dict[str, int] = {}
    for key, value in zip(frame["key"], frame["value"], strict=True):
        totals[key] = totals.get(key, 0) + value
    assert totals == expected_counts(events)
    changelog = job.plan.changelog_stream_id(job.plan.store_names[0])
    assert system.partition_count(changelog) == 4  # one changelog partition per task
    topic = checkpoint_topic(job.plan)
    in_topic = read_topic_checkpoints(system, topic)
    if guarantee == "exactly-once":
        # The checkpoint topic is the checkpoints' only home: every task committed there.
        assert sorted(in_topic) == sorted(job.status().tasks)
        assert {t: c.seq for t, c in in_topic.items()} == {t: c.seq for t, c in job.checkpoints.cached().items()}
        assert NamespacedMetadataStore(job.metadata, CHECKPOINT_NAMESPACE).all() == {}
        # Each task's reads of the shuffle left their dedup state with the checkpoint (a cold
        # restart resumes from it instead of scanning the topic back).
        shuffle = next(sid for sid, info in job.plan.streams.items() if info.kind == "intermediate")
        for task, checkpoint in in_topic.items():
            state = checkpoint.control["dedup"][f"{shuffle}#{task.split()[-1]}"]
            assert state["position"] == checkpoint.offsets[f"{shuffle}#{task.split()[-1]}"]
        assert any(repr(topic) in doomed for doomed in reset_job(job.plan, dry_run=True))
    else:
        assert in_topic == {}

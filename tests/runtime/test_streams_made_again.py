"""A broker that comes back empty: every stream a job reads (inputs, intermediate streams,
changelogs) made again behind the job's checkpoints is detected, with one warning per stream
naming its partitions, the checkpointed offsets and the new ends; the job reads each from its
start and a drain completes. On the Kafka test broker, the topics are deleted and made again
by another client between runs, as a broker that lost its data shows them."""

from __future__ import annotations

import logging
import re
import time
from datetime import timedelta
from pathlib import Path

import pytest

from samza_nb.api import KV, StreamApplication, Windows
from samza_nb.examples.page_views import expected_counts, generate_page_views
from samza_nb.job import run
from samza_nb.systems import KafkaSystem

pytestmark = pytest.mark.services


def _app(system: KafkaSystem, prefix: str) -> StreamApplication:
    app = StreamApplication(f"{prefix}again", job_id="1")
    views = app.input(system.input(f"{prefix}views", partitions=2, serde="json"))
    counts = app.output(system.output(f"{prefix}counts", partitions=2, serde="json"))
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


def _make_again(bootstrap: str, topics: dict[str, tuple[int, bool]]) -> None:
    """Delete ``topics`` and make them again empty (partitions, compacted), through a client of
    its own: the job's process learns of it only from the broker, as after a data loss."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.delete_topics(list(topics), operation_timeout=30).values():
        future.result(timeout=30)
    deadline = time.monotonic() + 30
    while set(topics) & set(admin.list_topics(timeout=10).topics):
        assert time.monotonic() < deadline, "topics not deleted in 30 s"
        time.sleep(0.2)
    new = [
        NewTopic(name, partitions, 1, config={"cleanup.policy": "compact"} if compacted else {})
        for name, (partitions, compacted) in topics.items()
    ]
    for future in admin.create_topics(new, operation_timeout=30).values():
        future.result(timeout=30)


@pytest.mark.parametrize("guarantee", ["at-least-once", "exactly-once"])
def test_intermediate_and_changelog_made_again_are_reported_and_a_drain_completes(
    guarantee: str, kafka_bootstrap: str, kafka_topic_prefix: str, tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    system = KafkaSystem("kafka", bootstrap_servers=kafka_bootstrap)
    events = generate_page_views(600, seed=7)
    first, second = events[:400], events[400:]
    views = f"{kafka_topic_prefix}views"
    system.create_stream(views, 2)
    system.write(views, first)
    config = {
        "job.home": str(tmp_path / "home"),
        "task.max.epoch.messages": "100",
        "job.drain-monitor.poll.interval.ms": "100",
        "task.processing.guarantee": guarantee,
    }
    app = _app(system, kafka_topic_prefix)
    plan = app.plan(config)
    intermediate = next(iter(plan.intermediate_streams))
    changelog = plan.changelog_stream_id(next(iter(plan.store_names)))
    run(app, config, until="caught-up", executor="local")
    _make_again(kafka_bootstrap, {intermediate: (2, False), changelog: (2, True)})
    system.write(views, second)
    with caplog.at_level(logging.WARNING):
        job = run(_app(system, kafka_topic_prefix), config, until="forever", background=True, executor="local")
        deadline = time.monotonic() + 120
        while job.metrics()["streams"][views].get("in", 0) < len(second):
            assert time.monotonic() < deadline, f"read {job.metrics()['streams']} in 120 s"
            assert not job.status().done, job.status().error
            time.sleep(0.1)
        status = job.drain(wait=True, timeout=60)
    assert status.state == "drained"
    warnings = [r.getMessage() for r in caplog.records if "was made again" in r.getMessage()]
    assert len(warnings) == 2, warnings  # one per stream, none for the input
    by_stream = {w.split()[1]: w for w in warnings}
    assert set(by_stream) == {intermediate, changelog}
    ends = r"partition 0 checkpointed at [1-9]\d*, now ends at 0, partition 1 checkpointed at [1-9]\d*, now ends at 0"
    for line in warnings:
        assert re.search(ends, line), line
    assert "the job reads it from its start" in by_stream[intermediate]
    assert "each store keeps what it holds" in by_stream[changelog]
    frame = job.collect(f"{kafka_topic_prefix}counts")
    totals: dict[str, int] = {}
    for key, value in zip(frame["key"], frame["value"], strict=True):
        totals[key] = totals.get(key, 0) + value
    # The window stores kept the first run's counts (their changelog lost them): nothing is
    # lost or doubled.
    assert totals == expected_counts(events)

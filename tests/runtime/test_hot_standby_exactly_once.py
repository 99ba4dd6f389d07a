"""Hot standbys under ``task.processing.guarantee=exactly-once`` on Kafka: a standby follows its
active's checkpoints in the checkpoint topic (which name the changelog offset each epoch's
transaction committed), keeps its store warm, and a failover onto it restores only the tail.
Before, standbys read the metadata store, which exactly-once never writes: they applied
nothing and the promoted task restored its whole store."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from samza_nb.api import KV, LocalTable, StreamApplication
from samza_nb.examples.user_counts import expected_totals, generate_events, totals_of
from samza_nb.grouping.standby import active_task_name, check_standby_invariants
from samza_nb.model import TaskMode
from samza_nb.systems import KafkaSystem
from samza_nb.testing import run_local

pytestmark = pytest.mark.services


def _app(system: KafkaSystem, prefix: str, partitions: int) -> StreamApplication:
    app = StreamApplication(f"{prefix}warm", job_id="1")
    table = app.table(LocalTable("counts"))
    counts = app.output(system.output(f"{prefix}user-counts", partitions=partitions, serde="json"))
    counted = (
        app.input(system.input(f"{prefix}events", partitions=partitions, serde="json"))
        .map(lambda event: KV(event["user"], event))
        .join_table(table, lambda kv, row: KV(kv.key, (row.value if row else 0) + 1))
    )
    counted.send_to(table)
    counted.send_to(counts)
    return app


def _actives(model: Any) -> dict[str, set[str]]:
    return {
        pid: {name for name, task in c.tasks.items() if task.mode is TaskMode.ACTIVE}
        for pid, c in model.containers.items()
    }


def _read(job: Any, events: str) -> int:
    return sum(
        offset
        for task in job.job_model.active_tasks()
        for key, offset in job.checkpoints.read_committed(task).offsets.items()
        if key.startswith(f"{events}#")
    )


def _wait(condition: Any, what: str, job: Any, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} within {timeout} s: {job.status().standbys}"
        assert not job.status().done, job.status().error
        time.sleep(0.1)


def test_standbys_keep_warm_from_the_checkpoint_topic_and_failover_restores_only_the_tail(
    kafka_bootstrap: str, kafka_topic_prefix: str, tmp_path: Path
) -> None:
    system = KafkaSystem("kafka", kafka_bootstrap)
    events_topic = f"{kafka_topic_prefix}events"
    events = generate_events(6_000, users=2_000)
    system.create_stream(events_topic, 4)
    system.write(events_topic, events[:4_000], key_fn=lambda event: event["user"])
    config = {
        "job.home": str(tmp_path / "home"),
        "task.processing.guarantee": "exactly-once",
        "job.standbytasks.replication.factor": "2",
        "processor.locations": "host-a,host-b,host-c",
        "task.max.epoch.messages": "300",
        "job.drain-monitor.poll.interval.ms": "100",
    }
    job = run_local(_app(system, kafka_topic_prefix, 4), config, processors=3, until="forever", background=True)
    try:
        model = job.job_model
        assert check_standby_invariants(model, replication_factor=2) == []

        def warm() -> bool:
            standbys = job.status().standbys
            return _read(job, events_topic) == 4_000 and len(standbys) == 4 and all(
                s["lag_records"] == 0 and s["lag_epochs"] == 0 and s["applied_records"] > 0
                for s in standbys.values()
            )

        _wait(warm, "tasks read everything and standbys applied their actives' changelogs", job)
        applied = {s["active"]: s["applied_records"] for s in job.status().standbys.values()}
        victim = max(_actives(model), key=lambda pid: len(_actives(model)[pid]))
        lost = _actives(model)[victim]
        holders = {
            active_task_name(name): pid
            for pid, c in model.containers.items()
            for name, t in c.tasks.items()
            if t.mode is TaskMode.STANDBY
        }
        after = job.kill_processor(victim)
        for task in lost:  # promoted where its standby was
            assert task in _actives(after)[holders[task]]
        system.write(events_topic, events[4_000:], key_fn=lambda event: event["user"])
        _wait(lambda: _read(job, events_topic) == 6_000, "the rest read", job)
        status = job.drain(wait=True, timeout=180)
    finally:
        job.stop()
    assert status.state == "drained"
    assert totals_of(job.collect(f"{kafka_topic_prefix}user-counts")) == expected_totals(events)
    tasks = job.metrics()["tasks"]
    for task in lost:
        # The store held ~500 keys (its standby applied them); the promoted task replayed at
        # most the one epoch (300 updates) its standby had not applied, never the whole store.
        assert applied[task] >= 400, applied
        assert tasks[task]["restored_records"] <= 300, tasks[task]
    assert all(tasks[t]["restored_records"] == 0 for t in tasks if t not in lost)

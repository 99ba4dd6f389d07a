"""Drain at its edges, in-process (run_local): an input that ended before the drain, the
deployment after a drain (event-time watermarks, a reused run id), the DrainStates view of a
new run, and a job whose drain monitor is off."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from test_drain_engine import StepClock, events, two_shuffle_app

from samza_nb.api import KV, StreamApplication, Windows
from samza_nb.errors import ConfigError, JobError
from samza_nb.systems import EmbeddedSystem
from samza_nb.testing import run_local

FAST_DRAIN = {"job.drain-monitor.poll.interval.ms": "20"}


@pytest.fixture
def system(tmp_path: Path) -> EmbeddedSystem:
    return EmbeddedSystem("embedded", path=tmp_path / "log")


def _wait_epochs(job: Any, count: int) -> None:
    deadline = time.monotonic() + 60
    while job.epoch < count and time.monotonic() < deadline:
        time.sleep(0.02)
    assert job.epoch >= count, f"the job ran {job.epoch} epochs in 60 s"


def test_a_drain_with_one_input_already_ended_completes(system: EmbeddedSystem) -> None:
    """The ended input's partitions get no drain injected (the SEP injects into active ones
    only) but count as drained; else the merge, and the shuffle after it, waited forever."""
    system.create_stream("a", 2)
    system.create_stream("b", 2)
    app = StreamApplication("merged")
    out = app.output(system.output("counts", partitions=2))
    (
        app.input(system.input("a", partitions=2))
        .merge(app.input(system.input("b", partitions=2)))
        .partition_by(lambda e: e["page"], lambda e: e, op_id="by-page")
        .window(Windows.keyed_tumbling(lambda kv: kv.key, 3_600_000, initial=lambda: 0, fold=lambda kv, n: n + 1),
                op_id="count")
        .map(lambda pane: KV(pane.key.key, pane.message))
        .send_to(out)
    )
    system.write("a", events(0, 50))
    system.end_stream("a")
    system.write("b", events(50, 50))
    job = run_local(app, FAST_DRAIN, until="forever", background=True, clock=StepClock())
    _wait_epochs(job, 2)
    assert job.drain(wait=True, timeout=60).state == "drained"
    assert int(job.collect("counts")["value"].sum()) == 100


@pytest.mark.parametrize("grouping", ["fewer intermediate partitions", "one task per partition"])
def test_a_drain_completes_when_an_upstream_task_ended_before_it(system: EmbeddedSystem, grouping: str) -> None:
    """A task whose inputs all ended sent end-of-stream to the shuffle's aggregate partition
    and never sends a drain: the aggregate partition counts it as drained."""
    system.create_stream("a", 4)
    system.create_stream("b", 2)
    app = StreamApplication("uneven")
    out = app.output(system.output("counts", partitions=2))
    merged = app.input(system.input("a", partitions=4)).merge(app.input(system.input("b", partitions=2)))
    shuffled = merged.partition_by(lambda e: e["page"], lambda e: e, op_id="by-page")
    if grouping == "one task per partition":  # stateless: the SSP grouper has no changelog to match
        shuffled.map(lambda kv: KV(kv.key, 1)).send_to(out)
        config = {"job.systemstreampartition.grouper.factory": "group-by-system-stream-partition"}
    else:
        (
            shuffled.window(Windows.keyed_tumbling(lambda kv: kv.key, 3_600_000, initial=lambda: 0,
                                                   fold=lambda kv, n: n + 1), op_id="count")
            .map(lambda pane: KV(pane.key.key, pane.message))
            .send_to(out)
        )
        config = {"job.intermediate.stream.partitions": "2"}
    system.write("a", events(0, 40))
    system.end_stream("a")
    system.write("b", events(40, 20))
    job = run_local(app, {**FAST_DRAIN, **config}, until="forever", background=True, clock=StepClock())
    _wait_epochs(job, 2)
    time.sleep(0.3)  # caught up: the drain finds the ended tasks done
    assert job.drain(wait=True, timeout=60).state == "drained"
    assert int(job.collect("counts")["value"].sum()) == 60


def test_the_deployment_after_a_drain_counts_its_event_time_windows(system: EmbeddedSystem) -> None:
    """A drain's +inf watermark fires every pane; it is not the next run's watermark floor,
    or every event-time message of the next deployment would be late and dropped."""
    system.create_stream("events", 2)

    def app_of() -> StreamApplication:
        app = StreamApplication("event-time")
        out = app.output(system.output("counts", partitions=2))
        (
            app.input(system.input("events", partitions=2))
            .partition_by(lambda e: e["page"], lambda e: e, op_id="by-page")
            .window(Windows.keyed_tumbling(lambda kv: kv.key, 10_000, initial=lambda: 0,
                                           fold=lambda kv, n: n + 1, event_time=lambda kv: kv.value["ts"]),
                    op_id="count")
            .map(lambda pane: KV(pane.key.key, pane.message))
            .send_to(out)
        )
        return app

    def timed(start: int, count: int, t0: int) -> list[dict[str, Any]]:
        return [{**event, "ts": t0 + 10 * n} for n, event in enumerate(events(start, count))]

    system.write("events", timed(0, 100, 1_000_000))
    first = run_local(app_of(), FAST_DRAIN, until="forever", background=True, clock=StepClock())
    _wait_epochs(first, 3)
    assert first.drain(wait=True, timeout=60).state == "drained"
    system.write("events", timed(100, 100, 2_000_000))
    for partition in (0, 1):
        system.write_watermark("events", partition, 3_000_000)
    system.end_stream("events")
    second = run_local(app_of(), FAST_DRAIN, until="end-of-stream", clock=StepClock())
    assert second.run_id != first.run_id
    assert int(second.collect("counts")["value"].sum()) == 200
    window = next(v for k, v in second.metrics()["operator_counters"].items() if k.endswith("count"))
    assert window["dropped"] == 0


def test_a_drained_run_id_does_not_run_again(system: EmbeddedSystem) -> None:
    """Its tasks' control state says drained: it would stop after one epoch with input left."""
    system.create_stream("events", 2)
    system.write("events", events(0, 300))
    config = {**FAST_DRAIN, "app.run.id": "fixed", "task.max.epoch.messages": "20"}
    job = run_local(two_shuffle_app(system), config, until="forever", background=True, clock=StepClock())
    _wait_epochs(job, 2)
    assert job.drain(wait=True, timeout=60).state == "drained"
    with pytest.raises(ConfigError, match="app.run.id 'fixed' was drained: a drained deployment does not run again"):
        run_local(two_shuffle_app(system), config, until="forever", clock=StepClock())
    system.end_stream("events")
    rest = run_local(two_shuffle_app(system), {**config, "app.run.id": "next"}, until="end-of-stream",
                     clock=StepClock())
    read = job.metrics()["streams"]["events"]["in"] + rest.metrics()["streams"]["events"]["in"]
    assert read == 300


def test_a_new_runs_drain_states_do_not_show_the_previous_runs_drain(system: EmbeddedSystem) -> None:
    system.create_stream("events", 2)
    system.write("events", events(0, 2000))
    config = {**FAST_DRAIN, "task.max.epoch.messages": "20"}
    first = run_local(two_shuffle_app(system), config, until="forever", background=True, clock=StepClock(),
                      processors=2)
    _wait_epochs(first, 3)
    assert first.drain(wait=True, timeout=60).state == "drained"
    second = run_local(two_shuffle_app(system), config, until="forever", background=True, clock=StepClock(),
                       processors=2)
    try:
        _wait_epochs(second, 4)
        view = second.drain_states()
        assert not any(row["drained"] for _epoch, rows in view.history for row in rows)
        assert second.drain(wait=True, timeout=60).state == "drained"
        epochs = [row["drained_epoch"] for row in second.drain_states().rows]
        # Drained in this run, after it was asked. Each processor counts its own epochs (a
        # task's drained epoch is its processor's), so the bound is the lowest epoch at which
        # a processor learned of the drain, not the job's highest epoch then.
        asked = [processor.drain_seen_epoch for processor in second._processors.values()]
        assert None not in asked
        assert min(epochs) >= min(epoch for epoch in asked if epoch is not None)
    finally:
        second.stop()


def test_a_drain_of_a_job_without_its_drain_monitor_is_refused(system: EmbeddedSystem) -> None:
    system.create_stream("events", 2)
    system.write("events", events(0, 200))
    config = {"job.drain-monitor.enabled": "false", "task.max.epoch.messages": "20"}
    job = run_local(two_shuffle_app(system), config, until="forever", background=True, clock=StepClock())
    try:
        with pytest.raises(JobError, match="job.drain-monitor.enabled=false: nothing watches for drain notifications"):
            job.drain()
    finally:
        job.stop()



def test_a_drain_asked_in_this_process_does_not_wait_for_the_monitors_next_poll(system: EmbeddedSystem) -> None:
    """The handle writes the notification and tells this process's monitors to look at once;
    the processors wake from their idle wait. With a poll interval of ten minutes, a drain that
    waited for the monitor's next poll would not end within the 60 s asked."""
    system.create_stream("events", 2)
    system.write("events", events(0, 200))
    config = {"job.drain-monitor.poll.interval.ms": "600000", "task.max.epoch.messages": "20"}
    job = run_local(two_shuffle_app(system), config, until="forever", background=True, clock=StepClock())
    try:
        _wait_epochs(job, 3)
        status = job.drain(wait=True, timeout=60)
        assert status.state == "drained", status
        # Every view read before the drain is counted once (the drain stops the reading).
        read = job.metrics()["streams"]["events"]["in"]
        assert 0 < read <= 200
        assert int(job.collect("window-counts")["value"].sum()) == read
    finally:
        job.stop()

"""Hot standby at runtime: placement invariants, standbys kept warm, promotion on failover."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from samza_nb.errors import ConfigError
from samza_nb.examples.user_counts import (
    build_app,
    expected_totals,
    generate_events,
    totals_of,
    write_events,
)
from samza_nb.grouping.standby import active_task_name, check_standby_invariants
from samza_nb.model import TaskMode
from samza_nb.runtime.task.stores import store_path
from samza_nb.systems import EmbeddedSystem
from samza_nb.testing import run_local


@pytest.fixture
def system(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> EmbeddedSystem:
    monkeypatch.setenv("SAMZA_NB_HOME", str(tmp_path / "home"))
    return EmbeddedSystem("embedded", path=tmp_path / "log")


def _actives(model: Any) -> dict[str, set[str]]:
    return {
        pid: {name for name, task in c.tasks.items() if task.mode is TaskMode.ACTIVE}
        for pid, c in model.containers.items()
    }


def _wait(condition: Any, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} within {timeout} s"
        time.sleep(0.05)


def _caught_up(job: Any, newest: int) -> bool:
    """Every active task read all ``newest`` input messages and every standby applied its
    active's committed changelog."""
    read = sum(
        offset
        for task in job.job_model.active_tasks()
        for key, offset in job.checkpoints.read(task).offsets.items()
        if key.startswith("events#")
    )
    standbys = job.status().standbys
    return read == newest and bool(standbys) and all(
        s["lag_records"] == 0 and s["lag_epochs"] == 0 for s in standbys.values()
    )


def _start(
    system: EmbeddedSystem, events: list[dict[str, Any]], processors: int, locations: str, partitions: int = 4
) -> Any:
    write_events(system, events, partitions=partitions, end=False)
    config = {
        "job.standbytasks.replication.factor": "2",
        "processor.locations": locations,
        "task.max.epoch.messages": "300",
    }
    return run_local(build_app(system, partitions=partitions), config, processors=processors, until="end-of-stream", background=True)


def test_failover_promotes_the_standby_and_restores_only_the_tail(system: EmbeddedSystem) -> None:
    events = generate_events(6_000, users=2_000)
    job = _start(system, events[:4_000], 3, "host-a,host-b,host-c")
    try:
        model = job.job_model
        assert check_standby_invariants(model, replication_factor=2) == []
        _wait(lambda: _caught_up(job, 4_000), "tasks and standbys caught up")
        # Standbys fill the store the active task would use at the standby's location.
        for name in model.standby_tasks():
            holder = next(pid for pid, c in model.containers.items() if name in c.tasks)
            location = model.containers[holder].location_id
            assert store_path(job.store_root, location, active_task_name(name), "counts").exists()
        victim = max(_actives(model), key=lambda pid: len(_actives(model)[pid]))
        lost = _actives(model)[victim]
        holders = {
            active_task_name(name): pid
            for pid, c in model.containers.items()
            for name, t in c.tasks.items()
            if t.mode is TaskMode.STANDBY
        }
        after = job.kill_processor(victim)
        # Promotion: each lost active task runs where its standby was; the rest stay.
        for task in lost:
            assert task in _actives(after)[holders[task]]
        for pid, tasks in _actives(model).items():
            if pid != victim:
                assert tasks <= _actives(after)[pid]
        assert check_standby_invariants(after, replication_factor=2) == []
        system.write("events", events[4_000:], key_fn=lambda event: event["user"])
        system.end_stream("events")
        status = job.wait(timeout=120)
    finally:
        job.stop()
    assert status.state == "finished"
    assert totals_of(job.collect("user-counts")) == expected_totals(events)
    tasks = job.metrics()["tasks"]
    # The promoted tasks replayed at most the tail their standby had not applied (one epoch
    # of at most 300 updates), never their whole store (about 500 keys each).
    for task in lost:
        assert tasks[task]["restored_records"] <= 300, tasks[task]
        assert job.status().tasks[task]["restore"]["records"] == tasks[task]["restored_records"]
    assert all(tasks[t]["restored_records"] == 0 for t in tasks if t not in lost)


def test_killing_a_standby_only_processor_changes_nothing_for_the_actives(system: EmbeddedSystem) -> None:
    events = generate_events(3_000, users=800)
    # Two tasks, each with one standby, over three processors: one holds only a standby.
    job = _start(system, events[:2_000], 3, "host-a,host-b,host-c", partitions=2)
    try:
        model = job.job_model
        assert check_standby_invariants(model, replication_factor=2) == []
        _wait(lambda: _caught_up(job, 2_000), "tasks and standbys caught up")
        idle = next(pid for pid, tasks in _actives(model).items() if not tasks)
        epochs = {pid: p.epoch for pid, p in job._processors.items()}
        after = job.kill_processor(idle)
        assert {pid: t for pid, t in _actives(after).items()} == {
            pid: t for pid, t in _actives(model).items() if pid != idle
        }
        assert check_standby_invariants(after, replication_factor=2) == []
        assert job.status().unassigned_standbys == 0
        system.write("events", events[2_000:], key_fn=lambda event: event["user"])
        system.end_stream("events")
        status = job.wait(timeout=120)
    finally:
        job.stop()
    assert status.state == "finished"
    assert totals_of(job.collect("user-counts")) == expected_totals(events)
    assert all(m["restored_records"] == 0 for m in job.metrics()["tasks"].values())
    assert all(job._processors[pid].epoch >= epochs[pid] for pid in job._processors)


def test_fewer_locations_than_the_replication_factor_is_a_clear_error(system: EmbeddedSystem) -> None:
    write_events(system, generate_events(10, users=5), partitions=4)
    config = {"job.standbytasks.replication.factor": "3", "processor.locations": "host-a,host-b"}
    # Refused when the job is planned (job/compatibility.py), before it takes its lease.
    with pytest.raises(ConfigError, match=r"job.standbytasks.replication.factor=3 places each task's copies at 3 distinct locations, but the job's 2 processor\(s\) are at 2 \(host-a, host-b\): .*or set job.standbytasks.replication.factor=1"):
        run_local(build_app(system), config, processors=2, until="end-of-stream")
    # The refused run left the job free: the next one runs.
    job = run_local(build_app(system), {"processor.locations": "host-a,host-b"}, processors=2, until="end-of-stream")
    assert job.status().state == "finished"


def test_a_running_job_compacts_its_changelogs_and_restores_from_them(system: EmbeddedSystem) -> None:
    events = generate_events(2_400, users=120)  # 20 updates per key
    write_events(system, events[:1_600], partitions=2, end=False)
    config = {
        "processor.locations": "host-a,host-b",
        "task.max.epoch.messages": "200",
        "job.changelog.compaction.min.messages": "50",
    }
    job = run_local(build_app(system, partitions=2), config, processors=2, grouper="host-affinity",
                    until="end-of-stream", background=True)
    try:
        owner = job._processors["0"]
        _wait(lambda: _caught_up_inputs(job, 1_600), "the first 1600 events read")
        moved = sorted(job.job_model.containers["1"].tasks)
        changelog = job.plan.changelog_stream_id("counts")
        partitions = [job.job_model.active_tasks()[t].changelog_partition for t in moved]
        # A compaction that dropped records (an early one may find every key once and keep all).
        _wait(
            lambda: {
                r.partition for r in owner.compactor.results
                if r.stream == changelog and r.records_after < r.records_before
            } >= set(partitions),
            "a compaction of the changelog of processor 1's task that dropped records",
        )
        owner.compactor.join()
        assert owner.compactor.error is None
        written = {p: system.newest_offsets(changelog)[p] for p in partitions}
        job.kill_processor("1")
        system.write("events", events[1_600:], key_fn=lambda event: event["user"])
        system.end_stream("events")
        status = job.wait(timeout=120)
    finally:
        job.stop()
    assert status.state == "finished"
    assert totals_of(job.collect("user-counts")) == expected_totals(events)
    tasks = job.metrics()["tasks"]
    # The moved task rebuilt its store from a compacted changelog: fewer records than it wrote.
    for task, partition in zip(moved, partitions, strict=True):
        assert 0 < tasks[task]["restored_records"] < written[partition], (tasks[task], written)


def _caught_up_inputs(job: Any, newest: int) -> bool:
    return sum(
        offset
        for task in job.job_model.active_tasks()
        for key, offset in job.checkpoints.read(task).offsets.items()
        if key.startswith("events#")
    ) == newest


def test_the_progress_line_says_when_a_failover_left_standbys_without_a_place(system: EmbeddedSystem) -> None:
    from samza_nb.cli import _progress_line

    events = generate_events(1_000, users=300)
    job = _start(system, events, 2, "host-a,host-b")
    try:
        _wait(lambda: _caught_up(job, 1_000), "tasks and standbys caught up")
        assert "unassigned" not in _progress_line(job, time.perf_counter())
        job.kill_processor(next(iter(_actives(job.job_model))))
        # One location left: the survivor runs every task, and no standby has a place.
        assert job.status().unassigned_standbys == 4
        assert "standbys unassigned 4 (too few locations)" in _progress_line(job, time.perf_counter())
    finally:
        job.stop()

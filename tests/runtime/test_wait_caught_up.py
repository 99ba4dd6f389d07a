"""``Job.wait_caught_up``: a running job says when it has read everything its streams hold (no
lag on an input or an intermediate stream), so a backlog can be worked through and drained;
a job that ends or fails first ends the wait with its status or its error."""

from __future__ import annotations

from pathlib import Path

import pytest

from samza_nb.api import StreamApplication
from samza_nb.errors import JobTimeoutError, TaskError
from samza_nb.examples.page_views import (
    build_app,
    expected_counts,
    generate_page_views,
    write_page_views,
)
from samza_nb.systems import EmbeddedSystem
from samza_nb.testing import StepClock, run_local

_CONFIG = {"task.max.epoch.messages": "100"}


@pytest.fixture
def system(tmp_path: Path) -> EmbeddedSystem:
    return EmbeddedSystem("embedded", path=tmp_path / "log")


def _lags(job: object) -> list[int]:
    status = job.status()  # type: ignore[attr-defined]
    return [row["lag"] for row in status.partitions]


def test_a_backlog_read_to_its_end_then_drained_counts_every_view(system: EmbeddedSystem) -> None:
    views = generate_page_views(3_000, seed=11)
    write_page_views(system, views, end=False)  # a stream that goes on: only a drain ends the run
    job = run_local(build_app(system), _CONFIG, until="forever", background=True, clock=StepClock())
    try:
        status = job.wait_caught_up(timeout=120)
        assert status.state == "running"
        assert status.partitions and all(lag == 0 for lag in _lags(job))
        streams = job.metrics()["streams"]
        assert all(entry.get("lag", 0) == 0 for entry in streams.values())  # the shuffle's too
        drained = job.drain(wait=True, timeout=120)
    finally:
        if not job.done:
            job.stop()
    assert drained.state == "drained"
    assert job.collect("page-counts").groupby("key")["value"].sum().to_dict() == expected_counts(views)


def test_a_job_that_ends_first_ends_the_wait_with_its_status(system: EmbeddedSystem) -> None:
    write_page_views(system, generate_page_views(500, seed=12))  # ends: end-of-stream
    job = run_local(build_app(system), _CONFIG, background=True, clock=StepClock())
    job.wait()
    assert job.wait_caught_up(timeout=30).state == "finished"


def test_a_job_that_fails_first_ends_the_wait_with_its_error(system: EmbeddedSystem) -> None:
    write_page_views(system, generate_page_views(500, seed=13), end=False)
    failing = StreamApplication("failing", job_id="1")
    (
        failing.input(system.input("page-views", partitions=4))
        .map(lambda view: 1 // 0 if view["country"] == "BR" else view)
        .send_to(failing.output(system.output("never", partitions=1)))
    )
    job = run_local(failing, _CONFIG, until="forever", background=True, clock=StepClock())
    with pytest.raises(TaskError):
        job.wait_caught_up(timeout=60)


def test_a_job_still_behind_at_the_timeout_says_so(system: EmbeddedSystem) -> None:
    write_page_views(system, generate_page_views(20_000, seed=14), end=False)
    job = run_local(
        build_app(system), {"task.max.epoch.messages": "10"}, until="forever", background=True, clock=StepClock()
    )
    try:
        with pytest.raises(JobTimeoutError, match="not caught up after 0.2 s"):
            job.wait_caught_up(timeout=0.2)
    finally:
        job.stop()

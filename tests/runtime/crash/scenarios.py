"""The crash-matrix scenarios: each builds its app over a given log folder, runs it the way a user
would (possibly killed at a named point by SAMZA_NB_KILL_AT) and says what its outputs must be.

Run as a script, it is the child process the matrix kills:
``python scenarios.py SCENARIO LOG_FOLDER EXECUTOR``.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from typing import Any

from samza_nb.api import KV, StreamApplication, Windows
from samza_nb.drain import read_drain_notifications, write_drain_notification
from samza_nb.examples.page_views import (
    build_app,
    expected_counts,
    generate_page_views,
    write_page_views,
)
from samza_nb.job import Job, run
from samza_nb.systems import EmbeddedSystem

SCENARIOS = ("stateless", "windowed", "two-shuffles", "drain", "rebalance")
EVENTS = generate_page_views(1_200, seed=21)
CONFIG = {"task.max.epoch.messages": "60", "job.drain-monitor.poll.interval.ms": "50"}


def prepare(scenario: str, system: EmbeddedSystem) -> None:
    """Write the scenario's input (the drain scenario leaves it open: a drain ends it)."""
    write_page_views(system, EVENTS, end=scenario != "drain")


def app(scenario: str, system: EmbeddedSystem) -> StreamApplication:
    if scenario in ("windowed", "drain", "rebalance"):
        return build_app(system, name=scenario)
    application = StreamApplication(scenario, job_id="1")
    views = application.input(system.input("page-views", partitions=4, serde="json"))
    if scenario == "stateless":
        out = application.output(system.output("pages", partitions=4, serde="json"))
        views.filter(lambda v: v["country"] == "US").map(lambda v: v["page"]).send_to(out)
        return application
    counts = application.output(system.output("page-counts", partitions=4, serde="json"))
    (
        views.filter(lambda v: v["country"] == "US")
        .partition_by(lambda v: v["user"], lambda v: v, op_id="by-user")
        .map(lambda kv: kv.value)
        .partition_by(lambda v: v["page"], lambda v: v, op_id="by-page")
        .window(
            Windows.keyed_tumbling(lambda kv: kv.key, _HOUR, initial=lambda: 0, fold=lambda kv, n: n + 1),
            op_id="count",
        )
        .map(lambda pane: KV(pane.key.key, pane.message))
        .send_to(counts)
    )
    return application


from datetime import timedelta  # noqa: E402 - kept next to its one use above

_HOUR = timedelta(hours=1)


def execute(scenario: str, system: EmbeddedSystem, executor: str) -> Job:
    """Run the scenario to its end, as its user would."""
    application = app(scenario, system)
    if scenario == "drain":
        job = run(application, CONFIG, until="end-of-stream", background=True, executor=executor)
        deadline = time.monotonic() + 120
        while job.epoch < 2 and time.monotonic() < deadline and not job.status().done:
            time.sleep(0.02)
        if not read_drain_notifications(job.metadata) and not job.status().done:
            write_drain_notification(job.metadata, job.run_id)
        job.wait(timeout=300)
        return job
    if scenario == "rebalance":
        job = run(application, CONFIG, processors=2, grouper="host-affinity", background=True,
                  executor=executor)
        deadline = time.monotonic() + 120
        while job.epoch < 2 and time.monotonic() < deadline and not job.status().done:
            time.sleep(0.02)
        if not job.status().done:
            job.kill_processor("1")
        if not job.status().done:
            job.add_processor()
        job.wait(timeout=300)
        return job
    return run(application, CONFIG, executor=executor)


def expected(scenario: str, job: Job) -> Counter[Any]:
    """What the outputs must hold: the plain-Python result over every input message the job
    consumed (all of them, except a drain stops reading its source)."""
    events = EVENTS
    if scenario == "drain":
        frame = job.app.plan().streams["page-views"].system.read_frame("page-views")
        committed = {
            int(key.rsplit("#", 1)[1]): offset
            for checkpoint in job.checkpoints.read_all().values()
            for key, offset in checkpoint.offsets.items()
            if key.startswith("page-views#")
        }
        events = [
            value for partition, offset, value in zip(frame["partition"], frame["offset"], frame["value"], strict=True)
            if offset < committed.get(int(partition), 0)
        ]
    if scenario == "stateless":
        return Counter(e["page"] for e in events if e["country"] == "US")
    return Counter(expected_counts(events))


def outputs(scenario: str, job: Job) -> Counter[Any]:
    if scenario == "stateless":
        return Counter(job.collect("pages")["value"])
    frame = job.collect("page-counts")
    totals: Counter[Any] = Counter()
    for key, value in zip(frame["key"], frame["value"], strict=True):
        totals[key] += value
    return totals


if __name__ == "__main__":
    name, folder, how = sys.argv[1:4]
    os.environ["SAMZA_NB_KILL_PID"] = str(os.getpid())  # before Spark starts: workers inherit it
    execute(name, EmbeddedSystem("embedded", path=folder), how)

"""The exactly-once quickstart on Kafka, as the child process the Kafka crash tests kill.

``python kafka_scenario.py BOOTSTRAP PREFIX JOB_HOME``: runs the job (filter → partition_by page
→ keyed tumbling count → output topic) under ``task.processing.guarantee=exactly-once`` until
it is killed at ``SAMZA_NB_KILL_AT``, or exits 0 once it has read its whole input.
"""

from __future__ import annotations

import os
import sys
import time
from datetime import timedelta
from typing import Any

from samza_nb.api import KV, StreamApplication, Windows
from samza_nb.examples.page_views import generate_page_views
from samza_nb.job import Job, run
from samza_nb.systems import KafkaSystem

EVENTS = generate_page_views(800, seed=31)


def config(home: str) -> dict[str, str]:
    return {
        "job.home": home,
        "task.max.epoch.messages": "40",
        "job.drain-monitor.poll.interval.ms": "50",
        "task.processing.guarantee": "exactly-once",
    }


def app(system: KafkaSystem, prefix: str) -> StreamApplication:
    application = StreamApplication(f"{prefix}eos", job_id="1")
    views = application.input(system.input(f"{prefix}page-views", partitions=4, serde="json"))
    counts = application.output(system.output(f"{prefix}page-counts", partitions=4, serde="json"))
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
    return application


def prepare(system: KafkaSystem, prefix: str) -> None:
    system.create_stream(f"{prefix}page-views", 4)
    system.write(f"{prefix}page-views", EVENTS, key_fn=lambda view: view["user"])


def start(system: KafkaSystem, prefix: str, home: str) -> Job:
    return run(app(system, prefix), config(home), until="forever", background=True, executor="local")


def caught_up(job: Job) -> bool:
    """Every input partition read to its newest offset and every intermediate one too."""
    status = job.status()
    if status.done:
        return True
    lags = job.metrics()["streams"]
    return bool(status.partitions) and all(
        row["lag"] == 0 for row in status.partitions
    ) and all(entry.get("lag", 0) == 0 for entry in lags.values())


def wait_caught_up(job: Job, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not caught_up(job):
        if time.monotonic() > deadline:
            msg = f"not caught up after {timeout} s: {job.status()!r} {job.metrics()['streams']}"
            raise TimeoutError(msg)
        time.sleep(0.1)


def totals(job: Job, prefix: str) -> dict[Any, int]:
    frame = job.collect(f"{prefix}page-counts")
    result: dict[Any, int] = {}
    for key, value in zip(frame["key"], frame["value"], strict=True):
        result[key] = result.get(key, 0) + value
    return result


if __name__ == "__main__":
    bootstrap, topic_prefix, job_home = sys.argv[1:4]
    os.environ["SAMZA_NB_KILL_PID"] = str(os.getpid())
    running = start(KafkaSystem("kafka", bootstrap), topic_prefix, job_home)
    wait_caught_up(running, 240)
    running.stop()

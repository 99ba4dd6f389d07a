"""A stateful Kafka job whose driver runs on one host of the simulated cluster, its task epochs
on the cluster's executors (tests/services/test_cluster.py drives it; not a test module).

Stages, each a JSON line on stdout: ``ready`` once the first batch is counted; it then waits for
``<control>/<stage>`` files the test writes: ``more`` (write the second batch, say ``moved``
once it is counted), ``last`` (wait for three executor hosts, write the third batch), then
drains and says ``done`` with the counts checked against plain Python.

``processor`` mode (``python cluster_job.py processor prefix control_DIR processor_id [rf]``)
runs one ZooKeeper-coordinated processor of the job instead (with ``rf`` - 1 hot standbys per
task), its epochs on the cluster's executors: every second it prints a ``tick`` line (the active
tasks it runs, where and their restores, the locations of the job's standbys) until
``<control>/drain`` exists, then drains the job and says ``done``.

Usage: python cluster_job.py prefix control_DIR
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from samza_nb.api import StreamApplication
from samza_nb.examples.page_views import build_app, expected_counts, generate_page_views
from samza_nb.job import run
from samza_nb.model import TaskMode
from samza_nb.runtime.executors.cluster_epochs import executor_hosts
from samza_nb.runtime.processor.standby import standby_locations
from samza_nb.services import read_service_env
from samza_nb.systems import KafkaSystem

logging.basicConfig(level=logging.WARNING, stream=sys.stdout)
logging.getLogger("samza_nb.runtime.executors.spark_jobs").setLevel(logging.DEBUG)

BATCHES = [generate_page_views(1_500, seed=seed) for seed in (13, 14, 15)]


def say(stage: str, job: Any, **data: Any) -> None:
    metrics = job.metrics()
    tasks = metrics["tasks"]
    numbers = ("restores", "full_restores", "restored_records")
    hosts = job._executor.cluster.task_hosts()
    print(json.dumps({
        "stage": stage, "hosts": hosts,
        "tasks": {task: {n: entry[n] for n in numbers} for task, entry in tasks.items()},
        # Stores rebuilt although their files were there, and why (each line names its task).
        "rebuilt": metrics["rebuilt_stores"],
        **data,
    }), flush=True)


def wait(what: str, done: Any, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            msg = f"cluster_job: {what} did not happen within {timeout:g} s"
            raise SystemExit(msg)
        time.sleep(0.2)


def counted(job: Any, topic: str, events: int) -> None:
    def read() -> bool:
        assert not job.status().done, job.status().error
        return bool(job.metrics()["streams"][topic].get("in", 0) >= events)

    wait(f"reading {events} events", read)


def page_counts_app(system: KafkaSystem, prefix: str, partitions: int = 4) -> StreamApplication:
    """The quickstart's US views per page and hour, on Kafka topics named after ``prefix``."""
    return build_app(
        system, name=f"{prefix}-pages", partitions=partitions, window=timedelta(hours=1), stream_prefix=f"{prefix}-"
    )


def page_totals(frame: Any) -> dict[str, int]:
    """Views per page summed over the windows of a collected counts frame."""
    totals: dict[str, int] = {}
    for key, value in zip(frame["key"], frame["value"], strict=True):
        totals[key] = totals.get(key, 0) + value
    return totals


def processor(prefix: str, control: Path, processor_id: str, replication_factor: str = "1") -> None:
    """One processor of a ZooKeeper job whose input topic (6 partitions) the test made and fills,
    with hot standbys when ``replication_factor`` is above 1."""
    env = read_service_env()
    system = KafkaSystem("kafka", bootstrap_servers=env["SAMZA_NB_KAFKA_BOOTSTRAP"])
    config = {
        "job.coordinator.factory": "zookeeper",
        "job.coordinator.zk.connect": f"{env['SAMZA_NB_ZK_CONNECT']}/{prefix}",
        "job.coordinator.zk.session.timeout.ms": "4000",
        "job.debounce.time.ms": "500",
        "processor.id": processor_id,
        "job.standbytasks.replication.factor": replication_factor,
        "job.home": str(Path(os.environ["SAMZA_NB_HOST_ROOT"]) / "jobs" / prefix),
        "task.max.epoch.messages": "200",
        "job.drain-monitor.poll.interval.ms": "100",
        "spark.master": os.environ["SAMZA_NB_SPARK_MASTER"],
        "spark.executor.memory": "512m",
        # One core on each host's worker: every processor's epochs can run on every host.
        "spark.cores.max": "3",
        "spark.locality.wait": "10s",
    }
    job = run(page_counts_app(system, prefix, 6), config, until="forever", background=True, executor="spark")
    while not (control / "drain").exists():
        assert not job.status().done, job.status().error
        model = job.job_model
        container = model.containers.get(processor_id) if model is not None else None
        actives = sorted(n for n, t in container.tasks.items() if t.mode is TaskMode.ACTIVE) if container else []
        standbys = {task: sorted(at) for task, at in standby_locations(model).items()} if model is not None else {}
        say("tick", job, runs=actives, standbys=standbys)
        time.sleep(1.0)
    status = job.drain(wait=True, timeout=300)
    say("done", job, state=status.state)


def main(prefix: str, control: Path) -> None:
    topic = f"{prefix}-page-views"
    system = KafkaSystem("kafka", bootstrap_servers=read_service_env()["SAMZA_NB_KAFKA_BOOTSTRAP"])
    system.create_stream(topic, 4)
    system.write(topic, BATCHES[0])
    app = page_counts_app(system, prefix)
    config = {
        # Below the host's private disk: each executor host keeps its tasks' stores on its own.
        "job.home": str(Path(os.environ["SAMZA_NB_HOST_ROOT"]) / "jobs" / prefix),
        "task.max.epoch.messages": "200",
        "job.drain-monitor.poll.interval.ms": "100",
        "spark.master": os.environ["SAMZA_NB_SPARK_MASTER"],
        "spark.executor.memory": "512m",
        # Every core of the cluster (no spark.cores.max): when h3 is lost the job keeps the
        # other hosts' cores, and when h3 comes back it takes h3's again. With fewer, Spark
        # would replace h3's executor on another host's spare core and never come back to h3.
        # A task epoch waits this long for its host's executor before Spark runs it on another
        # host, where its stores must be restored (Spark's default is 3 s).
        "spark.locality.wait": "10s",
    }
    job = run(app, config, until="forever", background=True, executor="spark")
    counted(job, topic, len(BATCHES[0]))
    say("ready", job)
    wait("the test's go for a second batch", (control / "more").exists)
    system.write(topic, BATCHES[1])
    counted(job, topic, len(BATCHES[0]) + len(BATCHES[1]))
    say("moved", job)
    wait("the test's go for a third batch", (control / "last").exists)
    context = job._executor.context()  # type: ignore[attr-defined]
    wait("three executor hosts", lambda: len(executor_hosts(context)) == 3, timeout=180)
    system.write(topic, BATCHES[2])
    counted(job, topic, sum(map(len, BATCHES)))
    status = job.drain(wait=True, timeout=300)
    totals = page_totals(job.collect(f"{prefix}-page-counts"))
    expected = expected_counts([event for batch in BATCHES for event in batch])
    say("done", job, state=status.state, exact=totals == expected)


if __name__ == "__main__":
    if sys.argv[1] == "processor":
        processor(sys.argv[2], Path(sys.argv[3]), *sys.argv[4:])
    else:
        main(sys.argv[1], Path(sys.argv[2]))

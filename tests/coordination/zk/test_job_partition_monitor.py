"""A ZooKeeper job's leader watches its inputs' partition counts in their system
(``job.coordinator.monitor-partition-change.frequency.ms``): when a Kafka input gains partitions
while the job runs, its processors agree on a new job model with the new partitions' tasks, and
those tasks read what is then written there.

The Tansu test broker does not implement CreatePartitions (Kafka API 37; its ApiVersions
response lists no such key, and AdminClient.create_partitions fails with
``_UNSUPPORTED_FEATURE: CreatePartitions (KIP-195) not supported by broker``), so the input
gains its partitions the way Tansu allows: deleted and created again with more, while it holds
no messages (so no checkpoint points past its new end)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from samza_nb.api import StreamApplication
from samza_nb.job import Job, run
from samza_nb.job.preparation import input_partition_counts
from samza_nb.systems import EmbeddedSystem, KafkaSystem

from .conftest import wait_until

pytestmark = pytest.mark.services


def _copy(system: KafkaSystem, prefix: str) -> StreamApplication:
    app = StreamApplication(f"{prefix}grow", job_id="1")
    app.input(system.input(f"{prefix}in", serde="json")).send_to(app.output(system.output(f"{prefix}out", serde="json")))
    return app


def _grow(bootstrap: str, topic: str, partitions: int) -> None:
    """The topic again with ``partitions`` partitions (Tansu cannot add partitions in place)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.delete_topics([topic], operation_timeout=10).values():
        future.result(timeout=15)
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result(timeout=15)


@pytest.fixture
def jobs() -> Iterator[dict[str, Job]]:
    started: dict[str, Job] = {}
    yield started
    for job in started.values():
        job.stop()


def test_a_kafka_input_that_gains_partitions_gets_a_new_agreed_model_with_their_tasks(
    kafka_bootstrap: str, kafka_topic_prefix: str, zk_connect: str, tmp_path: Path, jobs: dict[str, Job]
) -> None:
    system = KafkaSystem("kafka", bootstrap_servers=kafka_bootstrap)
    system.create_stream(f"{kafka_topic_prefix}in", 2)
    system.create_stream(f"{kafka_topic_prefix}out", 1)
    for pid in ("p1", "p2"):
        config = {
            "job.coordinator.factory": "zookeeper",
            "job.coordinator.zk.connect": zk_connect,
            "job.coordinator.zk.session.timeout.ms": "4000",
            "job.debounce.time.ms": "300",
            "job.coordinator.monitor-partition-change.frequency.ms": "200",
            "processor.id": pid,
            "job.home": str(tmp_path / pid),
        }
        jobs[pid] = run(_copy(system, kafka_topic_prefix), config, executor="local", background=True, until="forever")

    def agreed_tasks() -> set[str] | None:
        """The tasks of the model both processors run, once they run the same one."""
        coordinators: list[Any] = [job.coordinator for job in jobs.values()]
        model = coordinators[0].job_model
        if len({c.job_model_version for c in coordinators}) != 1 or model is None:
            return None
        return set(model.task_to_processor()) if set(model.containers) == {"p1", "p2"} else None

    first = wait_until(agreed_tasks, 60, "the first agreed model over p1 and p2")
    assert first == {"Partition 0", "Partition 1"}
    leader: Any = jobs["p1"].coordinator
    version = leader.job_model_version

    _grow(kafka_bootstrap, f"{kafka_topic_prefix}in", 4)
    wait_until(lambda: agreed_tasks() == {f"Partition {p}" for p in range(4)}, 60, "a model with 4 tasks")
    assert int(leader.job_model_version) > int(version)
    for job in jobs.values():
        assert job.status().error is None

    # The new partitions' tasks run: what is written to every partition reaches the output.
    for partition in range(4):
        system.write(f"{kafka_topic_prefix}in", [{"p": partition, "i": i} for i in range(5)], partition=partition)
    deadline = time.monotonic() + 90
    while len(system.read(f"{kafka_topic_prefix}out")) < 20 and time.monotonic() < deadline:
        time.sleep(0.2)
    values = system.read(f"{kafka_topic_prefix}out")["value"]
    assert sorted((v["p"], v["i"]) for v in values) == [(p, i) for p in range(4) for i in range(5)]


def test_the_counts_come_from_the_inputs_system_and_a_missing_input_is_left_out(tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    for stream, partitions in (("clicks", 3), ("views", 2), ("out", 1)):
        system.create_stream(stream, partitions)
    app = StreamApplication("counts")
    app.input(system.input("clicks")).merge(app.input(system.input("views"))).send_to(app.output(system.output("out")))
    counts = input_partition_counts(app.plan({"job.home": str(tmp_path / "home")}))
    assert counts() == {"clicks": 3, "views": 2}  # inputs only, read from the log now
    system.delete_stream("views")
    assert counts() == {"clicks": 3}

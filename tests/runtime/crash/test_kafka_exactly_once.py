"""Exactly-once on the Kafka test broker under SIGKILL: a child process runs the quickstart
with ``task.processing.guarantee=exactly-once`` and is killed at a named point of an epoch —
mid-transaction (outputs, changelog or checkpoint appended, not committed), right after a task's
commit, or on the driver after its tasks committed; the job restarts, catches up and drains, and
its window counts (as samza_nb reads its output topic) equal the plain-Python count: nothing lost,
nothing counted twice.

Tansu shows aborted and open transactions to ``read_committed`` readers, so the external
``read_committed`` view of the output topic is asserted only on a broker that hides them (run
with ``SAMZA_NB_KAFKA_BOOTSTRAP`` pointing at a real Kafka)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from samza_nb.examples.page_views import expected_counts
from samza_nb.runtime.task.exactly_once import checkpoint_topic, read_topic_checkpoints
from samza_nb.systems import KafkaSystem

sys.path.insert(0, str(Path(__file__).parent))
import kafka_scenario as scenario  # noqa: E402

pytestmark = [pytest.mark.services, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]

#: point → the hit that kills (4 tasks reach a task point per epoch: the 6th is in epoch 2).
POINTS = {
    "after-output-append": 6,
    "mid-transaction": 6,
    "after-transaction-commit": 7,
    "after-flush-before-commit": 3,
}


def _read_committed_totals(bootstrap: str, topic: str) -> dict[str, int]:
    """The output topic as an external read_committed consumer sees it (JSON keys and values)."""
    import json

    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": topic + "-check",
                         "isolation.level": "read_committed", "enable.partition.eof": True})
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(4)])
        totals: dict[str, int] = {}
        ended: set[int] = set()
        deadline = time.monotonic() + 60
        while len(ended) < 4 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                ended.add(message.partition())
                continue
            if message.value() is not None and message.key() is not None:
                key = json.loads(message.key())
                totals[key] = totals.get(key, 0) + json.loads(message.value())
        return totals
    finally:
        consumer.close()


@pytest.mark.parametrize("point", list(POINTS))
def test_killed_mid_epoch_on_kafka_counts_each_input_once(
    point: str, kafka_bootstrap: str, kafka_topic_prefix: str, tmp_path: Path
) -> None:
    system = KafkaSystem("kafka", kafka_bootstrap)
    scenario.prepare(system, kafka_topic_prefix)
    home = str(tmp_path / "home")
    env = dict(os.environ)
    env.update(
        SAMZA_NB_KILL_AT=f"{point}:{POINTS[point]}",
        SAMZA_NB_KILL_COUNTER=str(tmp_path / "kill-counter"),
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
    )
    child = subprocess.run(
        [sys.executable, scenario.__file__, kafka_bootstrap, kafka_topic_prefix, home],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=300, check=False,
        start_new_session=True,
    )
    assert child.returncode == -signal.SIGKILL, (
        f"the child was not killed at {point} (exit {child.returncode}):\n{child.stderr.decode()[-3000:]}"
    )
    job = scenario.start(system, kafka_topic_prefix, home)
    try:
        scenario.wait_caught_up(job, 180)
        status = job.drain(wait=True, timeout=180)
        assert status.state == "drained", status
    finally:
        job.stop()
    want = expected_counts(scenario.EVENTS)
    got = scenario.totals(job, kafka_topic_prefix)
    assert got == want, f"lost { {k: v - got.get(k, 0) for k, v in want.items() if got.get(k, 0) < v} }, " \
                        f"doubled { {k: v - want.get(k, 0) for k, v in got.items() if v > want.get(k, 0)} }"
    checkpoints = read_topic_checkpoints(system, checkpoint_topic(job.plan))
    assert sorted(checkpoints) == sorted(job.status().tasks)
    assert all(checkpoint.seq > 1 for checkpoint in checkpoints.values())
    if not system._is_tansu():
        assert _read_committed_totals(kafka_bootstrap, f"{kafka_topic_prefix}page-counts") == want

"""Under exactly-once a task epoch first asks whether an earlier attempt committed it. A worker
that committed the task's previous epoch trusts its memory that nobody did, except when the
epoch runs again after lost workers: another worker of the lost attempt may have committed it,
and committing it again would show its outputs twice to read_committed readers."""

from __future__ import annotations

from typing import Any

import pytest

from samza_nb.runtime import exactly_once
from samza_nb.runtime.checkpoints import Checkpoint
from samza_nb.runtime.epoch import EpochAssignment
from samza_nb.runtime.exactly_once import TaskTransaction


def _transaction(retry: int) -> TaskTransaction:
    assignment = EpochAssignment(
        task_name="Partition 0", producer="p", seq=1, now_ms=0, run_id="r", location_id="a",
        store_root="/nowhere", changelog_partition=0, ssps=[], start_offsets={}, bounds={},
        control={}, producer_counts={}, retry=retry,
    )
    transaction = TaskTransaction.__new__(TaskTransaction)  # no Kafka: the decision only
    transaction.system = None  # type: ignore[assignment]
    transaction.topic = "__samza_checkpoint_ver_1_for_app_1"
    transaction.assignment = assignment
    return transaction


@pytest.mark.parametrize(("retry", "reads_the_topic"), [(0, False), (1, True), (2, True)])
def test_a_retried_epoch_reads_what_was_committed_instead_of_trusting_the_workers_memory(
    monkeypatch: pytest.MonkeyPatch, retry: int, reads_the_topic: bool
) -> None:
    committed_by_another_worker = Checkpoint(seq=2, offsets={"in#0": 10})
    reads: list[Any] = []

    def read(system: Any, topic: str) -> dict[str, Checkpoint]:
        reads.append(topic)
        return {"Partition 0": committed_by_another_worker}

    monkeypatch.setattr(exactly_once, "read_topic_checkpoints", read)
    # This worker committed epoch 0 of the task: it remembers seq 1 as the next to commit.
    monkeypatch.setitem(exactly_once._COMMITTED, ("__samza_checkpoint_ver_1_for_app_1", "Partition 0"), 1)
    found = _transaction(retry).committed_elsewhere()
    assert bool(reads) == reads_the_topic
    assert found == (committed_by_another_worker if reads_the_topic else None)

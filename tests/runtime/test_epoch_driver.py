"""EpochDriver plans the epochs of a processor's tasks: new plans are persisted before the
epoch runs, every task's in one metadata-store transaction, and a task whose epoch did not
commit replays its pending plan (same offsets, processing time and producer id)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from samza_nb.api import StreamApplication
from samza_nb.metadata.in_memory import InMemoryMetadataStore
from samza_nb.model import SystemStreamPartition, TaskModel
from samza_nb.runtime.checkpoints import CheckpointStore
from samza_nb.runtime.epoch import ssp_key
from samza_nb.runtime.processor.epoch_driver import EpochDriver, newest_offsets
from samza_nb.systems import EmbeddedSystem


class _CountingStore(InMemoryMetadataStore):
    """An in-memory metadata store that counts its write transactions."""

    def __init__(self) -> None:
        super().__init__()
        self.transactions: list[list[str]] = []

    def put(self, key: str, value: bytes) -> None:
        self.transactions.append([key])
        super().put(key, value)

    def put_all(self, entries: Mapping[str, bytes], **kwargs: Any) -> None:
        self.transactions.append(sorted(entries))
        super().put_all(entries, **kwargs)


def _driver(tmp_path: Path) -> tuple[EpochDriver, _CountingStore, list[TaskModel], dict[str, int]]:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream("numbers", 3)
    system.write("numbers", list(range(30)))
    app = StreamApplication("planning", config={"job.home": str(tmp_path / "home")})
    out = app.output(system.output("out", partitions=3))
    app.input(system.input("numbers", partitions=3)).send_to(out)
    plan = app.plan()
    store = _CountingStore()
    driver = EpochDriver(plan, CheckpointStore(store), run_id="run-1", store_root=str(tmp_path / "stores"))
    tasks = [TaskModel(f"Partition {p}", [SystemStreamPartition("embedded", "numbers", p)], p) for p in range(3)]
    return driver, store, tasks, newest_offsets(plan)


def test_new_plans_of_every_task_are_written_in_one_transaction(tmp_path: Path) -> None:
    driver, store, tasks, newest = _driver(tmp_path)
    assignments = driver.assignments(tasks, "host-a", now_ms=1_000, newest=newest, drain=False, counts={})
    assert [a.task_name for a in assignments] == ["Partition 0", "Partition 1", "Partition 2"]
    assert len(store.transactions) == 1 and len(store.transactions[0]) == 3
    for task, assignment in zip(tasks, assignments, strict=True):
        (ssp,) = task.ssps
        key = ssp_key(ssp.stream, ssp.partition)
        assert assignment.start_offsets == {key: 0}
        assert assignment.bounds == {key: newest[key]} and newest[key] == 10
        assert assignment.now_ms == 1_000 and assignment.seq == 0


def test_a_task_whose_epoch_did_not_commit_replays_its_pending_plan(tmp_path: Path) -> None:
    driver, store, tasks, newest = _driver(tmp_path)
    first = driver.assignments(tasks, "host-a", now_ms=1_000, newest=newest, drain=False, counts={})
    # Nothing committed: the next epoch (later, with more input) runs the same plans and
    # writes none.
    more = {key: offset + 5 for key, offset in newest.items()}
    again = driver.assignments(tasks, "host-a", now_ms=9_000, newest=more, drain=False, counts={})
    assert len(store.transactions) == 1
    for before, after in zip(first, again, strict=True):
        assert (after.producer, after.bounds, after.now_ms) == (before.producer, before.bounds, before.now_ms)


class _ReadCountingStore(InMemoryMetadataStore):
    """An in-memory metadata store that counts its reads."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: list[str] = []

    def get(self, key: str) -> bytes | None:
        self.reads.append(key)
        return super().get(key)


def test_an_idle_processor_asks_the_store_for_pending_plans_once_per_seq() -> None:
    from samza_nb.runtime.checkpoints import Checkpoint, EpochPlan

    store = _ReadCountingStore()
    checkpoints = CheckpointStore(store)
    assert checkpoints.pending_plan("Partition 0", 3) is None
    reads = len(store.reads)
    for _ in range(20):  # the idle loop's looks
        assert checkpoints.pending_plan("Partition 0", 3) is None
    assert len(store.reads) == reads
    # A plan this process writes is found at once, and replayed until its epoch commits.
    plan = EpochPlan(3, 0, {"in#0": 10}, plan_id="p3")
    checkpoints.write_plans({"Partition 0": plan})
    assert checkpoints.pending_plan("Partition 0", 3) == plan
    assert checkpoints.pending_plan("Partition 0", 3) == plan
    checkpoints.write_all({"Partition 0": Checkpoint(4, {"in#0": 10})})
    assert checkpoints.pending_plan("Partition 0", 4) is None
    # A task that comes back from another processor may have a plan from there: asked again.
    other = CheckpointStore(store)
    other.write_plans({"Partition 0": EpochPlan(4, 0, {"in#0": 20}, plan_id="elsewhere")})
    assert checkpoints.pending_plan("Partition 0", 4) is None  # still this process's belief
    checkpoints.forget(["Partition 0"])
    replay = checkpoints.pending_plan("Partition 0", 4)
    assert replay is not None and replay.plan_id == "elsewhere"

"""Failover restore with and without a hot standby, and restore before/after compaction.

Part 1 — for stores of each size (keys): a one-task stateful app (a running count per user in
a LocalTable, samza_nb/examples/user_counts.py) on two processors at two locations writes one
key per user; once every key is in the store (and, with replication factor 2, the standby has
applied it), the processor running the active task is killed and a short tail is written. The
task's restore (records replayed, seconds) on the processor it moved to is printed for
replication factor 2 (the standby is promoted; only the tail it lacked is replayed) and 1 (the
store is rebuilt from the changelog), with their ratio. Totals are checked against plain Python.

Part 2 — a store of ``--compaction-keys`` keys after ``--compaction-updates`` updates: a full
restore from the changelog before and after the embedded log compacts it.

    .venv/bin/python bench/failover.py [--sizes 10000 100000 1000000] [--executor local|spark]
        [--compaction-keys 100000] [--compaction-updates 1000000]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

from _scratch import scratch_dir

from samza_nb.examples.user_counts import (
    build_app,
    expected_totals,
    generate_events,
    totals_of,
    write_events,
)
from samza_nb.job import run
from samza_nb.model import TaskMode
from samza_nb.runtime.task.stores import ChangelogRef, TaskStore, is_tombstone, store_path
from samza_nb.systems import EmbeddedSystem

TAIL = 1_000


def _active_processor(job: Any, task: str) -> str:
    return next(
        pid
        for pid, c in job.job_model.containers.items()
        if task in c.tasks and c.tasks[task].mode is TaskMode.ACTIVE
    )


def _wait(job: Any, read: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        task = next(iter(job.job_model.active_tasks()))
        done = job.checkpoints.read(task).offsets.get("events#0", 0)
        standbys = job.status().standbys
        if done >= read and all(s["lag_records"] == 0 and s["lag_epochs"] == 0 for s in standbys.values()):
            return
        time.sleep(0.2)
    msg = f"the job did not catch up in {timeout} s: {job.status()}"
    raise RuntimeError(msg)


def failover_once(root: Path, keys: int, replication_factor: int, executor: str) -> tuple[int, float, float]:
    """(restored records, restore seconds, failover seconds: from the kill until the task
    committed its first epoch at its new place)."""
    name = f"failover-{keys}-rf{replication_factor}"
    system = EmbeddedSystem("embedded", path=root / name / "log")
    events = generate_events(keys + TAIL, users=keys)
    write_events(system, events[:keys], partitions=1, end=False)
    config = {
        "job.home": str(root / name / "home"),
        "job.standbytasks.replication.factor": str(replication_factor),
        "processor.locations": "host-a,host-b",
        "task.max.epoch.messages": "200000",
    }
    job = run(build_app(system, name=name, partitions=1), config, processors=2, grouper="host-affinity",
              until="end-of-stream", background=True, executor=executor)
    try:
        _wait(job, keys, timeout=max(600, keys / 500))
        task = next(iter(job.job_model.active_tasks()))
        seq = job.checkpoints.read_committed(task).seq
        killed = time.perf_counter()
        job.kill_processor(_active_processor(job, task))
        system.write("events", events[keys:], key_fn=lambda event: event["user"])
        system.end_stream("events")
        deadline = time.monotonic() + max(600, keys / 500)
        while job.checkpoints.read_committed(task).seq <= seq and time.monotonic() < deadline:
            time.sleep(0.01)
        downtime = time.perf_counter() - killed
        job.wait(timeout=max(600, keys / 500))
    finally:
        job.stop()
    assert totals_of(job.collect("user-counts")) == expected_totals(events), "counts lost or doubled"
    metrics = job.metrics()["tasks"][task]
    return int(metrics["restored_records"]), float(metrics["restore_seconds"]), downtime


def compaction_once(root: Path, keys: int, updates: int) -> list[tuple[str, int, float, int]]:
    """Full restores of a ``keys``-key store after ``updates`` updates, before and after
    compaction: (label, restored records, seconds, records in the changelog)."""
    system = EmbeddedSystem("embedded", path=root / "compaction" / "log")
    stream = "bench-1-s-changelog"
    system.create_stream(stream, 1, compacted=True)

    def store(location: str) -> TaskStore:
        path = store_path(root / "compaction" / "stores", location, "Partition 0", "s")
        return TaskStore("s", path, ChangelogRef(system, stream, 0), "Partition 0", "bench")

    writer = store("writer")
    per_epoch = keys
    epochs = max(1, updates // per_epoch)
    for seq in range(epochs):
        writer.open(seq)
        for key in range(per_epoch):
            writer.put(f"user-{key}".encode(), f"{seq}".encode())
        writer.flush({"seq": seq + 1}, seq)
        writer.close()
    results = []
    for label in ("before compaction", "after compaction"):
        if label == "after compaction":
            result = system.compact(stream, 0, system.newest_offsets(stream)[0], is_tombstone=is_tombstone,
                                    tombstone_retention_ms=86_400_000)
            assert result is not None
            print(f"  compaction: {result.records_before:,} -> {result.records_after:,} records in "
                  f"{result.seconds:.2f} s")
        reader = store(label.replace(" ", "-"))
        reader.open(epochs)
        count = sum(1 for _ in reader.items())
        reader.close()
        assert count == keys
        in_log = sum(len(records) for _f, records in system.read_batches(stream, 0, 0, 2**62))
        results.append((label, reader.restored_records, reader.restore_seconds, in_log))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--executor", default="local", choices=["local", "spark"])
    parser.add_argument("--compaction-keys", type=int, default=100_000)
    parser.add_argument("--compaction-updates", type=int, default=1_000_000)
    parser.add_argument("--skip-failover", action="store_true")
    args = parser.parse_args(argv)
    root = scratch_dir("samza-nb-failover-")
    os.environ.setdefault("SAMZA_NB_HOME", str(root / "home"))
    if not args.skip_failover:
        print(f"failover: kill the processor of the active task (one task; executor {args.executor})")
        print("  restore: records replayed and seconds; failover: seconds from the kill to the task's")
        print("  first committed epoch at its new place (ratio: without / with a standby)")
        print(f"{'keys':>10}  {'standby: restored':>17} {'s':>6} {'failover s':>10}  "
              f"{'no standby: restored':>20} {'s':>6} {'failover s':>10}  {'restore':>8} {'failover':>8}")
        for keys in args.sizes:
            with_records, with_seconds, with_down = failover_once(root, keys, 2, args.executor)
            without_records, without_seconds, without_down = failover_once(root, keys, 1, args.executor)
            # A standby that had caught up leaves nothing to restore: no ratio then.
            ratio = f"{without_seconds / with_seconds:>7.1f}x" if with_seconds > 0 else "  (none)"
            print(f"{keys:>10,}  {with_records:>17,} {with_seconds:>6.2f} {with_down:>10.2f}  "
                  f"{without_records:>20,} {without_seconds:>6.2f} {without_down:>10.2f}  "
                  f"{ratio} {without_down / with_down:>7.1f}x", flush=True)
    print(f"restore of a {args.compaction_keys:,}-key store after {args.compaction_updates:,} updates")
    for label, records, seconds, in_log in compaction_once(root, args.compaction_keys, args.compaction_updates):
        print(f"  {label:<18} changelog {in_log:>10,} records; restored {records:>10,} in {seconds:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

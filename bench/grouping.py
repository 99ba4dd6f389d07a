"""Times task grouping at scale and checks movement, balance and the standby invariant.

10,000 tasks over 1,000 processors on 100 locations, with full locality (every task has a
previous processor and a recorded location). Measured:

* HostAffinityGrouper regrouping the steady state, and after one processor dies: time, tasks
  moved against the lower bound (that processor's tasks plus what balance requires, from
  ``min_moves``), max − min tasks per processor;
* the baseline in the same run: Samza's GroupByContainerIds with host affinity on the same
  input, and the ratios;
* a processor joining where the dead one was, with the processors' store reports: how many of
  its tasks have their stores there (with and without the reports), moves, time;
* replication factor 2 with ``assign_with_standbys`` and ``failover``: the standby invariant
  for every task, balance of active and of all tasks.

Targets: grouping under 200 ms, moved == lower bound, max − min ≤ 1, no standby violation.
Exits 1 when a target is missed. Run: ``.venv/bin/python bench/grouping.py [--repeat 5]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import TypeVar

from samza_nb.grouping import (
    GroupByContainerIds,
    GrouperMetadata,
    HostAffinityGrouper,
    assign_with_standbys,
    balance,
    check_standby_invariants,
    failover,
    min_moves,
    moved_tasks,
    task_assignment,
)
from samza_nb.model import JobModel, SystemStreamPartition, TaskModel

T = TypeVar("T")


def _timed(repeat: int, action: Callable[[], T]) -> tuple[float, T]:
    """Median wall time in ms over ``repeat`` runs, and the last result."""
    times = []
    result: T | None = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = action()
        times.append((time.perf_counter() - start) * 1000)
    assert result is not None
    return statistics.median(times), result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--processors", type=int, default=1_000)
    parser.add_argument("--locations", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    tasks = [
        TaskModel(f"Partition {i}", [SystemStreamPartition("kafka", "events", i)], i)
        for i in range(args.tasks)
    ]
    locality = {
        f"processor-{i:05d}": f"host-{i % args.locations:04d}" for i in range(args.processors)
    }
    grouper = HostAffinityGrouper()
    initial = grouper.group(tasks, GrouperMetadata(processor_locality=locality))
    previous = task_assignment(initial)
    full = GrouperMetadata(
        processor_locality=locality,
        previous_task_to_processor=previous,
        task_locality={name: locality[pid] for name, pid in previous.items()},
    )
    dead = sorted(locality)[7]
    after_death = full.without_processors([dead])
    names = [t.name for t in tasks]
    bound = min_moves(previous, after_death.processor_locality, names)
    baseline_grouper = GroupByContainerIds(host_affinity=True)

    print(
        f"{args.tasks} tasks, {args.processors} processors, {args.locations} locations, "
        f"median of {args.repeat}"
    )
    failures: list[str] = []
    rows = []
    for label, metadata in (("steady state", full), (f"{dead} dies", after_death)):
        ours_ms, ours = _timed(args.repeat, partial(grouper.group, tasks, metadata))
        base_ms, base = _timed(args.repeat, partial(baseline_grouper.group, tasks, metadata))
        live = metadata.processor_locality
        expected = min_moves(previous, live, names)
        ours_moved = len(moved_tasks(previous, ours))
        base_moved = len(moved_tasks(previous, base))
        rows.append(
            (
                label,
                ours_ms,
                base_ms,
                ours_moved,
                base_moved,
                expected,
                balance(ours),
                balance(base),
            )
        )
        if ours_ms > 200:
            failures.append(f"{label}: HostAffinityGrouper took {ours_ms:.0f} ms (target < 200 ms)")
        if ours_moved != expected:
            failures.append(f"{label}: moved {ours_moved} tasks, lower bound {expected}")
        if balance(ours).spread > 1:
            failures.append(f"{label}: max - min = {balance(ours).spread}")

    print()
    print(f"{'scenario':<26}{'grouper':<34}{'ms':>8}{'moved':>8}{'bound':>8}{'max-min':>9}")
    for label, ours_ms, base_ms, ours_moved, base_moved, expected, ours_b, base_b in rows:
        print(
            f"{label:<26}{'HostAffinityGrouper':<34}{ours_ms:>8.1f}{ours_moved:>8}{expected:>8}{ours_b.spread:>9}"
        )
        print(
            f"{'':<26}{'GroupByContainerIds(host_affinity)':<34}{base_ms:>8.1f}{base_moved:>8}{expected:>8}{base_b.spread:>9}"
        )
        ratio = ours_ms / base_ms if base_ms else float("inf")
        moved_ratio = (
            f"{base_moved / ours_moved:.1f}x fewer moves"
            if ours_moved
            else f"{base_moved} vs 0 moves"
        )
        print(f"{'':<26}ratio ours/baseline time {ratio:.2f}; {moved_ratio}")
    print(f"lower bound after one death: {bound} (its tasks plus what balance requires)")

    # A processor joins where the dead one was (a restart at its host), one processor per host
    # as in issue #38: its share should be the dead one's tasks, whose stores are still there.
    # The coordinator's task locality names where the survivors took them; the processors'
    # store reports name both places.
    hosts = {pid: f"host-{i:05d}" for i, pid in enumerate(sorted(locality))}
    first = task_assignment(grouper.group(tasks, GrouperMetadata(processor_locality=hosts)))
    regrouped = task_assignment(
        grouper.group(tasks, GrouperMetadata(processor_locality=hosts, previous_task_to_processor=first)
                      .without_processors([dead]))
    )
    home = hosts[dead]
    joined = {**{pid: h for pid, h in hosts.items() if pid != dead}, "processor-new": home}
    stores: dict[str, dict[str, int]] = {}
    for name, pid in first.items():
        stores.setdefault(hosts[pid], {})[name] = 1
    for name, pid in regrouped.items():
        if pid != previous[name]:
            stores.setdefault(joined[pid], {})[name] = 2
    blind = GrouperMetadata(
        processor_locality=joined,
        previous_task_to_processor=regrouped,
        task_locality={name: joined[pid] for name, pid in regrouped.items()},
    )
    rejoin_ms, rejoined = _timed(args.repeat, partial(grouper.group, tasks, blind.with_store_locality(stores)))
    blind_rejoined = grouper.group(tasks, blind)

    def at_home(containers: object) -> tuple[int, int]:
        mine = next(c for c in containers if c.processor_id == "processor-new")  # type: ignore[attr-defined]
        return sum(1 for name in mine.tasks if name in stores[home]), len(mine.tasks)

    found, share = at_home(rejoined)
    blind_found, _ = at_home(blind_rejoined)
    rejoin_moved = len(moved_tasks(regrouped, rejoined))
    print(
        f"one processor per host, {dead} dies, a processor joins at {home}: {found} of its {share} "
        f"tasks have their stores there ({blind_found} without the stores' report: the others "
        f"restore in full), {rejoin_moved} moved, {rejoin_ms:.1f} ms"
    )
    if found != share:
        failures.append(f"rejoin: {share - found} of the new processor's tasks have no store at {home}")
    if rejoin_moved != min_moves(regrouped, joined, names):
        failures.append(f"rejoin: moved {rejoin_moved}, lower bound {min_moves(regrouped, joined, names)}")

    print()
    replicated_ms, replicated = _timed(
        args.repeat,
        lambda: assign_with_standbys(tasks, GrouperMetadata(processor_locality=locality), 2),
    )
    violations = check_standby_invariants(replicated, locality, replication_factor=2)
    model = JobModel({}, replicated)
    failover_ms, recovered = _timed(args.repeat, lambda: failover(model, [dead], full))
    live = dict(after_death.processor_locality)
    failover_violations = check_standby_invariants(recovered, live, replication_factor=2)
    promoted = moved_tasks(model, recovered)
    on_standby = sum(
        1
        for move in promoted
        if any(
            t.name.startswith(f"Standby-{move.task}-")
            for t in model.containers[move.after or ""].tasks.values()
        )
    )
    print(
        f"replication factor 2: assign_with_standbys {replicated_ms:.1f} ms, "
        f"{len(violations)} violations, active max-min {balance(replicated).spread}, "
        f"all tasks max-min {balance(replicated, mode=None).spread}"
    )
    print(
        f"failover of {dead}: {failover_ms:.1f} ms, {len(failover_violations)} violations, "
        f"{len(promoted)} active tasks moved, {on_standby} of them onto their standby, "
        f"active max-min {balance(recovered).spread}, all tasks max-min "
        f"{balance(recovered, mode=None).spread}"
    )
    if violations or failover_violations:
        failures.append(f"standby invariant: {(violations + failover_violations)[:3]}")
    if on_standby != len(promoted):
        failures.append(
            f"failover: {len(promoted) - on_standby} tasks not started on their standby"
        )

    print()
    if failures:
        print("MISSED: " + "; ".join(failures))
        return 1
    print("all targets met: < 200 ms, moved == lower bound, max - min <= 1, no standby violation")
    return 0


if __name__ == "__main__":
    sys.exit(main())

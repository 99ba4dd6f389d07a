"""An epoch as one Spark job: on one machine a partition per core, on a cluster a partition per
group of a host's tasks on that host.

On a master whose executors share this machine's disk (runtime/executors/masters.py), any executor can
open any task's stores, so the epoch's task epochs are split into about equal groups, one per
Spark core. On a cluster, a task's stores are on the host that ran its last epoch: each host's
tasks (runtime/executors/host_placement.py) are grouped per core of that host, and each group's partition
prefers that host (runtime/executors/cluster_epochs.py). There a task's stores are those of its name at
the executor's host, not at its processor's location: the processor (the Spark driver) may sit
on any host, or die and hand the task to a processor elsewhere, while the store stays on the disk
of the host that ran the task. Each result says that host, and the processor reports holding the
task's stores there (runtime/processor/store_reports.py). Either way a lost Python worker fails the job
with :class:`~samza_nb.errors.WorkerLostError`, and nothing of the epoch is committed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from samza_nb.config import Config
from samza_nb.errors import WorkerLostError
from samza_nb.runtime.epoch import EpochAssignment, EpochResult
from samza_nb.runtime.executors.cluster_epochs import (
    executor_hosts,
    run_located,
    this_host,
    wait_for_executors,
)
from samza_nb.runtime.executors.host_placement import HostPlacement
from samza_nb.runtime.executors.lost_workers import failure_reason, python_worker_lost
from samza_nb.runtime.executors.worker_epochs import collector_paused, plan_in_worker
from samza_nb.runtime.task.task import run_task_epoch

_log = logging.getLogger("samza_nb.runtime.executors.spark_jobs")

__all__ = ["ClusterJobs", "balanced_groups", "run_as_spark_job", "slots_rdd", "spark_partitions"]


def balanced_groups(
    assignments: list[EpochAssignment], slices: int
) -> list[list[tuple[int, EpochAssignment]]]:
    """The task epochs numbered and split into ``slices`` groups of about equal work: the
    largest backlog first, each onto the group with the least so far (an epoch lasts as long
    as its busiest Spark partition). Tasks with nothing to read still spread out: each counts
    one message."""
    groups: list[list[tuple[int, EpochAssignment]]] = [[] for _ in range(slices)]
    loads = [0] * slices
    sized = sorted(((a.backlog(), index, a) for index, a in enumerate(assignments)), key=lambda s: (-s[0], s[1]))
    for size, index, assignment in sized:
        lightest = loads.index(min(loads))
        groups[lightest].append((index, assignment))
        loads[lightest] += size + 1
    return groups


def spark_partitions(config: Config, tasks: int, parallelism: int) -> int:
    """How many Spark partitions carry an epoch's ``tasks`` task epochs: ``job.spark.partitions``
    when set, else Spark's default parallelism (its cores); never more than the tasks.

    Spark costs tens of milliseconds per partition it runs (scheduling, handing the work to a
    Python worker), so 64 tasks on 2 cores run as 2 partitions of 32 task epochs each. Measured
    (bench/latency.py, 4 tasks, 2 cores): one partition per core instead of one per task or two
    per core cuts the median epoch from about 300 to 200 ms at the same throughput."""
    configured = config.get_int("job.spark.partitions")
    wanted = configured if configured > 0 else max(1, parallelism)
    return max(1, min(tasks, wanted))


#: Slice count -> the RDD of that many one-element partitions of the current SparkContext.
_SLOTS: dict[int, Any] = {}
_SLOTS_LOCK = threading.Lock()


def slots_rdd(context: Any, slices: int) -> Any:
    """An RDD of ``slices`` partitions, made once per SparkContext and shared by the
    process's jobs: an epoch's task epochs travel in its job's function (a few KB), so no
    epoch ships data through ``parallelize`` (a temporary file and a JVM read each time:
    about 10 ms of a 35 ms job here, and 15 ms of each job's start)."""
    with _SLOTS_LOCK:
        rdd = _SLOTS.get(slices)
        if rdd is None or rdd.context is not context:
            rdd = _SLOTS[slices] = context.parallelize(range(slices), slices)
        return rdd


def _task_runner(digest: str, blob: bytes, *, at_host: bool = False) -> Callable[[EpochAssignment], EpochResult]:
    """What a Python worker runs per task epoch; ``at_host``: on a cluster, the task's stores
    are at the executor's host (its result says which)."""

    def run_one(assignment: EpochAssignment) -> EpochResult:
        worker_plan = plan_in_worker(digest, blob)
        if at_host:
            assignment = replace(assignment, location_id=this_host())
        with collector_paused():
            result = run_task_epoch(worker_plan, assignment)
        if at_host:
            result.location_id = assignment.location_id
        return result

    return run_one


def _lost(error: Exception, assignments: list[EpochAssignment]) -> WorkerLostError:
    tasks = ", ".join(a.task_name for a in assignments)
    msg = (
        f"a Spark Python worker running the epoch of tasks {tasks} (checkpoint seqs "
        f"{min(a.seq for a in assignments)}-{max(a.seq for a in assignments)}) ended "
        f"before it returned: {failure_reason(error)}; nothing of the epoch was committed"
    )
    return WorkerLostError(msg)


def run_as_spark_job(
    context: Any,
    config: Config,
    digest: str,
    blob: bytes,
    assignments: list[EpochAssignment],
    *,
    at_host: bool = False,
) -> list[EpochResult]:
    """The epoch as one Spark job of one partition per core, on executors sharing this disk
    (``at_host``: on a cluster's executors, wherever Spark puts them)."""
    slices = spark_partitions(config, len(assignments), context.defaultParallelism)
    # The index puts the results back in the assignments' order.
    groups = balanced_groups(assignments, slices)
    run_one = _task_runner(digest, blob, at_host=at_host)

    def run_partition(slot: int, _items: Any) -> Any:
        for index, assignment in groups[slot]:
            yield index, run_one(assignment)

    try:
        done = dict(slots_rdd(context, slices).mapPartitionsWithIndex(run_partition, True).collect())
    except Exception as error:  # py4j's Py4JJavaError: Spark's failure, as text
        if not python_worker_lost(error):
            raise
        raise _lost(error, assignments) from error
    return [done[index] for index in range(len(assignments))]


def task_key(assignment: EpochAssignment) -> str:
    """On a cluster a task's stores are those of its name at its executor's host: the task's
    name is its key, whichever processor runs it."""
    return assignment.task_name


class ClusterJobs:
    """Epochs on a cluster's executors, each task on the host its stores are on."""

    def __init__(self, config: Config) -> None:
        self._config = config
        self._lock = threading.Lock()
        self.placement = HostPlacement()
        self._waited = False

    def task_hosts(self) -> dict[str, str]:
        """Task -> the host that runs its epochs (its stores are there)."""
        with self._lock:
            return self.placement.tasks_by_host()

    def held(
        self,
        stores: Mapping[str, Mapping[str, int]],
        copies: Mapping[str, Mapping[str, int]],
        standbys: Mapping[str, Iterable[str]],
        arrived: Iterable[str],
        mine: Iterable[str],
    ) -> None:
        """Where the job's processors reported holding the tasks' stores and the standbys'
        copies (host -> {task -> epoch}), the hosts of their standbys now, the tasks that came
        to this processor and those it runs now (runtime/executors/host_placement.py)."""
        with self._lock:
            self.placement.held(stores, copies, standbys, arrived, mine)

    def run(
        self, context: Any, digest: str, blob: bytes, assignments: list[EpochAssignment]
    ) -> list[EpochResult]:
        with self._lock:
            first, self._waited = not self._waited, True
        hosts = wait_for_executors(context) if first else executor_hosts(context)
        if not hosts:  # none registered yet: Spark runs the job wherever executors come
            return run_as_spark_job(context, self._config, digest, blob, assignments, at_host=True)
        keys = [task_key(a) for a in assignments]
        with self._lock:
            placed = self.placement.place(keys, hosts)
        cores = max(1, int(context.defaultParallelism) // len(hosts))
        groups: list[tuple[str, list[tuple[int, EpochAssignment]]]] = []
        for host in hosts:
            mine = [(index, a) for index, a in enumerate(assignments) if placed[keys[index]] == host]
            if not mine:
                continue
            slices = spark_partitions(self._config, len(mine), cores)
            for group in balanced_groups([a for _, a in mine], slices):
                if group:
                    groups.append((host, [(mine[j][0], a) for j, a in group]))
        try:
            ran = run_located(context, groups, _task_runner(digest, blob, at_host=True))
        except Exception as error:  # py4j's Py4JJavaError: Spark's failure, as text
            if not python_worker_lost(error):
                raise
            raise _lost(error, assignments) from error
        ran_on = {keys[index]: host for index, _result, host in ran}
        moved = {key: host for key, host in ran_on.items() if placed[key] != host}
        if moved:
            _log.info("tasks ran off their hosts (their stores are there now): %s", moved)
        if _log.isEnabledFor(logging.DEBUG):
            wanted = [(host, [a.task_name for _i, a in group]) for host, group in groups]
            _log.debug("epoch on hosts %s, groups %s, ran on %s", hosts, wanted, ran_on)
        with self._lock:
            self.placement.noted(ran_on, hosts)
        done = {index: result for index, result, _host in ran}
        return [done[index] for index in range(len(assignments))]

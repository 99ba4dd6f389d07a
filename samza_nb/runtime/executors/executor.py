"""Executors: where a processor's task epochs run (a seam inside StreamProcessor).

``spark`` (the product path and the default) runs every task epoch of a processor's epoch on
Spark's Python workers: with a local master on resident workers (runtime/executors/resident_workers.py),
else as one Spark job whose partitions (one per core) each run a group of them. ``local`` runs
them one after the other in this process, so operator and window semantics are tested in
milliseconds without a JVM (``samza_nb.testing.run_local``). Both run the same
:func:`run_task_epoch`.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
import threading
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from samza_nb.config import Config
from samza_nb.errors import ConfigError, WorkerLostError
from samza_nb.runtime.epoch import EpochAssignment, EpochResult
from samza_nb.runtime.executors.lost_workers import (
    rerun_when_workers_are_lost,
)
from samza_nb.runtime.executors.masters import (
    check_master,
    is_local_master,
    on_this_machine,
    running_context,
)
from samza_nb.runtime.executors.resident_workers import ResidentWorkers, ResidentWorkersClosed
from samza_nb.runtime.executors.spark_jobs import (
    ClusterJobs,
    run_as_spark_job,
    slots_rdd,
    spark_partitions,
)
from samza_nb.runtime.task.exactly_once import exactly_once
from samza_nb.runtime.task.task import run_task_epoch

if TYPE_CHECKING:
    from samza_nb.plan.execution_plan import ExecutionPlan

_log = logging.getLogger("samza_nb.runtime.executors.executor")

__all__ = [
    "DRIVER_TASKS_PER_CORE",
    "Executor",
    "LocalExecutor",
    "SparkExecutor",
    "executor_names",
    "get_executor",
    "spark_partitions",
]


class Executor(ABC):
    """Runs the task epochs of one processor epoch and returns their results in order."""

    name: str = ""
    #: Python workers lost mid-epoch (each epoch then ran again, or the job failed), the last
    #: loss's message.
    workers_lost: int = 0
    last_worker_lost: str | None = None

    @abstractmethod
    def run_epoch(self, plan: ExecutionPlan, assignments: list[EpochAssignment]) -> list[EpochResult]:
        """Run every assignment (each task epoch never raises; failures are in the results)."""

    def start(self) -> None:  # noqa: B027 - executors without a session have nothing to start
        """Prepare (for Spark: get the session) before the first epoch."""

    def start_ahead(self) -> None:  # noqa: B027 - executors without a session have nothing to start
        """What of :meth:`start` costs nothing to begin before the job has set up (Spark: the
        resident workers, when the session already runs)."""

    def ui_url(self) -> str | None:
        """The address of the executor's web UI (Spark's, when it is on), else None."""
        return None

    def close(self) -> None:  # noqa: B027 - executors that hold nothing have nothing to close
        """Give back what the executor holds between epochs (Spark: its resident workers)."""

    def release_stores(self, folders: list[str]) -> None:  # noqa: B027 - none kept open
        """Close the stores of the tasks at ``folders`` if kept open between epochs (Spark:
        its resident workers keep those of the tasks they ran): the tasks may run elsewhere
        next, and their stores be opened at this location by another process."""

    def places_on_hosts(self) -> bool:
        """Whether task epochs run on hosts this executor chooses (a Spark cluster), so it
        wants to hear where the job's processors hold the tasks' stores."""
        return False

    def stores_held(  # noqa: B027 - no hosts to choose
        self,
        stores: Mapping[str, Mapping[str, int]],
        copies: Mapping[str, Mapping[str, int]],
        standbys: Mapping[str, Iterable[str]],
        arrived: Iterable[str],
        mine: Iterable[str],
    ) -> None:
        """Where the job's processors reported holding the active tasks' stores and the
        standbys' copies (each location -> {task -> epoch}), where the tasks' standbys are now
        (task -> locations), which tasks came to this processor since its last epoch and which
        active tasks it runs now, for :meth:`places_on_hosts` executors."""


class LocalExecutor(Executor):
    """Task epochs in this process, one after the other (tests and debugging)."""

    name = "local"

    def run_epoch(self, plan: ExecutionPlan, assignments: list[EpochAssignment]) -> list[EpochResult]:
        return [run_task_epoch(plan, assignment) for assignment in assignments]


class SparkExecutor(Executor):
    """Task epochs on Spark's Python workers.

    The SparkContext is the process's: the notebook's or test suite's when one is running and
    no ``spark.master`` is configured (stopping it would break every handle the user holds),
    else :func:`samza_nb.runtime.executors.spark.get_spark_context` for the configured master
    (a context only: epochs are RDD jobs, and Spark SQL's session would cost seconds of CPU).

    With a ``local`` master and ``job.spark.resident.workers`` on (the default), the workers
    are resident (runtime/executors/resident_workers.py): one long-running Spark job holds one Python
    worker per Spark core (``job.spark.partitions`` when set), and each epoch hands them its
    task epochs over a local socket, instead of paying 25–60 ms for a Spark job per epoch. The
    resident job gives its cores back when no epoch came for ``job.spark.resident.idle.ms``,
    once no epoch runs while another Spark job of the session is active, and when the job
    ends. Otherwise an epoch is one Spark job whose partitions (one per core) each run a group
    of its task epochs.

    An epoch with at most ``job.spark.driver.epoch.max.messages`` messages to read runs in this
    process instead, on a copy of the plan as a Python worker would unpickle it: a Spark job
    costs 25–60 ms whatever it carries, while such an epoch (the end-of-stream or drain
    messages a shuffle passes on, a quiet stream's few new messages) takes a few milliseconds.
    Spark's own ``take()`` once ran small jobs on the driver the same way
    (``spark.localExecution.enabled``). Only when resident workers are off (they keep the
    tasks' stores open, and handing them an epoch costs a millisecond or two), and when this
    process runs task code as a worker would and about as fast:

    - a ``local`` master: the workers' stores are on this machine;
    - at-least-once: under exactly-once a task's transactional producer stays in the Python
      worker that last ran it;
    - this process hashes strings as the workers do (``PYTHONHASHSEED=0``, what PySpark gives
      its workers and ``bin/pyspark`` its driver): user code may key by ``hash()``;
    - no side inputs (read whole, whatever the epoch's backlog) and at most
      :data:`DRIVER_TASKS_PER_CORE` task epochs per Spark core (each opens its stores:
      milliseconds, one after another here);
    - every task's previous epoch ran in this executor, at the same location: any other epoch
      may restore or catch up its stores from their changelogs, work the backlog does not
      count.
    """

    name = "spark"

    def __init__(self, config: Config, spark: Any = None) -> None:
        self._config = config
        #: The SparkContext epochs run on (the one of a SparkSession given as ``spark``).
        self._context: Any = getattr(spark, "sparkContext", spark)
        self._lock = threading.Lock()
        self._pickled: weakref.WeakKeyDictionary[Any, tuple[str, bytes]] = weakref.WeakKeyDictionary()
        #: Partitions -> an RDD of that many one-element partitions (of the session's context).
        #: Plan digest -> the plan as a worker unpickles it, for epochs run in this process.
        self._driver_plans: dict[str, Any] = {}
        #: Epochs run in this process (small enough) and on Spark's workers, since the start.
        self.epochs_in_driver = 0
        self.epochs_on_spark = 0
        #: Resident worker pools this executor started (each is one long-running Spark job).
        self.resident_jobs = 0
        self._pool: ResidentWorkers | None = None
        #: Set by close(): no new pool starts after it, and a lost worker's epoch is not retried.
        self._closed = False
        self.workers_lost = 0
        self.last_worker_lost = None
        self._idle_s = config.get_int("job.spark.resident.idle.ms") / 1000
        #: (task, location) -> the checkpoint seq of its last epoch run by this executor: a
        #: task whose next epoch follows it has its stores up to date here.
        self._last_seq: dict[tuple[str, str], int] = {}
        #: On a cluster (executors on other hosts): which host runs each task's epochs.
        self.cluster = ClusterJobs(config)
        #: Whether :meth:`start` began the resident workers' start already.
        self._started_pool = False

    def start_ahead(self) -> None:
        running = running_context()
        if running is None or running.master != self._config.get_str("spark.master", running.master):
            return  # the session starts (or changes master) in start(), where Ctrl-C is handled
        self.start()

    def start(self) -> None:
        context = self.context()
        if self._started_pool:
            return
        self._started_pool = True
        if self._resident_workers_on(context):
            # Its workers connect while the job sets up and plans its first epoch: the pool
            # starts on a thread of its own (mostly waits on the JVM), so the job's own start
            # goes on meanwhile; the first epoch takes the pool, or makes it if this failed.
            threading.Thread(
                target=self._start_pool, args=(context,), name="samza-nb-pool-start", daemon=True
            ).start()

    def _start_pool(self, context: Any) -> None:
        try:
            self._resident_workers(context)
        except Exception as error:  # noqa: BLE001 - the first epoch tries again and reports it
            _log.debug("resident workers did not start ahead of the first epoch: %s", error)

    def ui_url(self) -> str | None:
        context = self._context
        if context is None:
            return None
        try:
            url = context.uiWebUrl
        except Exception:  # a stopped session has no UI
            return None
        return str(url) if url else None

    def context(self) -> Any:
        """The SparkContext this executor's epochs run on (started on first use)."""
        with self._lock:
            if self._context is None:
                self._context = _context_for(self._config)
            return self._context

    def _pickle(self, plan: ExecutionPlan) -> tuple[str, bytes]:
        with self._lock:
            entry = self._pickled.get(plan)
            if entry is None:
                from pyspark import cloudpickle

                blob = cloudpickle.dumps(plan)
                entry = self._pickled[plan] = (hashlib.sha256(blob).hexdigest(), blob)
            return entry

    def run_epoch(self, plan: ExecutionPlan, assignments: list[EpochAssignment]) -> list[EpochResult]:
        context = self.context()
        digest, blob = self._pickle(plan)
        in_driver = self._runs_in_driver(plan, assignments, context)
        driver_plan: Any = None
        with self._lock:
            self._last_seq.update(((a.task_name, a.location_id), a.seq) for a in assignments)
            if in_driver:
                self.epochs_in_driver += 1
                driver_plan = self._driver_plans.get(digest)
                if driver_plan is None:
                    from pyspark import cloudpickle

                    driver_plan = self._driver_plans[digest] = cloudpickle.loads(blob)
            else:
                self.epochs_on_spark += 1
        if in_driver:
            return [run_task_epoch(driver_plan, assignment) for assignment in assignments]
        resident = self._resident_workers_on(context)
        closed_pools = [0]  # pools found closed before they were handed anything

        def attempt(assignments: list[EpochAssignment]) -> list[EpochResult]:
            if resident:
                results = self._on_resident_workers(context, digest, blob, assignments, closed_pools)
                if results is not None:
                    return results
            return self._as_spark_job(context, digest, blob, assignments)

        # A worker lost mid-epoch costs a rerun of the epoch (runtime/executors/lost_workers.py).
        return rerun_when_workers_are_lost(
            attempt,
            assignments,
            retries=self._config.get_int("job.spark.epoch.retries"),
            stopping=self._stopping,
            noted=self._worker_lost,
        )

    def places_on_hosts(self) -> bool:
        context = self._context
        return context is not None and not on_this_machine(str(context.master))

    def stores_held(
        self,
        stores: Mapping[str, Mapping[str, int]],
        copies: Mapping[str, Mapping[str, int]],
        standbys: Mapping[str, Iterable[str]],
        arrived: Iterable[str],
        mine: Iterable[str],
    ) -> None:
        self.cluster.held(stores, copies, standbys, arrived, mine)

    def _as_spark_job(
        self, context: Any, digest: str, blob: bytes, assignments: list[EpochAssignment]
    ) -> list[EpochResult]:
        """The epoch as one Spark job (runtime/executors/spark_jobs.py); on a cluster, each task on the
        host its stores are on."""
        if not on_this_machine(str(context.master)):
            return self.cluster.run(context, digest, blob, assignments)
        return run_as_spark_job(context, self._config, digest, blob, assignments)

    def _stopping(self) -> bool:
        with self._lock:
            return self._closed

    def _worker_lost(self, error: WorkerLostError) -> None:
        with self._lock:
            self.workers_lost += 1
            self.last_worker_lost = str(error)

    def _on_resident_workers(
        self,
        context: Any,
        digest: str,
        blob: bytes,
        assignments: list[EpochAssignment],
        closed_pools: list[int],
    ) -> list[EpochResult] | None:
        """The epoch's results from resident workers; None when no pool can be made here (or
        pools closed twice before they were handed anything: they are giving their cores
        back). A lost worker closes its pool and raises WorkerLostError."""
        while True:
            pool = self._resident_workers(context)
            if pool is None:
                return None
            try:
                return pool.run(digest, blob, assignments)
            except ResidentWorkersClosed:  # closed before any task epoch was handed out
                closed_pools[0] += 1
                if closed_pools[0] >= 2:
                    return None

    def _resident_workers_on(self, context: Any) -> bool:
        # The resident job's group is a thread's local property: PySpark's pinned threads
        # (its default) keep other threads' jobs out of it.
        pinned = os.environ.get("PYSPARK_PIN_THREAD", "true").lower() != "false"
        return (
            pinned
            and self._config.get_bool("job.spark.resident.workers")
            and bool(is_local_master(str(context.master)))
        )

    def _resident_workers(self, context: Any) -> ResidentWorkers | None:
        """This executor's open pool (a new one when it has none); None when a pool cannot be
        made here (the epoch then runs as a Spark job of its own)."""
        with self._lock:
            pool = self._pool
            if pool is not None and not pool.closed and pool.context is context:
                return pool
        configured = self._config.get_int("job.spark.partitions")
        slots = slots_rdd(context, configured if configured > 0 else max(1, int(context.defaultParallelism)))
        with self._lock:
            if self._closed:
                # The job released its executor (a leaving processor's last epoch may still
                # come): no new pool would be closed again, holding cores and store locks, so
                # the epoch runs as a Spark job of its own.
                return None
            pool = self._pool
            if pool is not None and not pool.closed and pool.context is context:
                return pool  # another processor's epoch made it meanwhile
            try:
                pool = self._pool = ResidentWorkers(context, slots, idle_s=self._idle_s)
            except OSError as error:  # e.g. a socket path too long under a long TMPDIR
                _log.warning("resident workers unavailable (%s); one Spark job per epoch", error)
                return None
            self.resident_jobs += 1
            return pool

    def close(self) -> None:
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            # The stores its workers keep are closed before this returns (or, when an epoch
            # still ran or a worker was lost, the workers waited for, bounded): the job's lease
            # goes next, and with it the job home to whoever takes it.
            pool.end()

    def release_stores(self, folders: list[str]) -> None:
        with self._lock:
            pool = self._pool
        if pool is None or pool.closed:
            return  # its workers closed their stores when they returned
        try:
            pool.release(folders)
        except ResidentWorkersClosed:
            pass  # a worker was gone: the pool closed, and the others closed theirs

    def _runs_in_driver(self, plan: ExecutionPlan, assignments: list[EpochAssignment], context: Any) -> bool:
        """Whether this epoch is small enough to run here (see the class docstring)."""
        limit = self._config.get_int("job.spark.driver.epoch.max.messages")
        if limit <= 0 or plan.side_inputs or exactly_once(plan):
            return False
        if self._resident_workers_on(context):  # they keep the tasks' stores open
            return False
        if not is_local_master(str(context.master)) or not _hashes_as_workers(context):
            return False
        if len(assignments) > DRIVER_TASKS_PER_CORE * max(1, int(context.defaultParallelism)):
            return False
        with self._lock:
            last = self._last_seq
            if any(last.get((a.task_name, a.location_id)) != a.seq - 1 for a in assignments):
                return False
        return sum(a.backlog() for a in assignments) <= limit


#: Task epochs per Spark core an epoch run in the driver may have (each opens its stores,
#: 4–5 ms here, one after another in the driver).
DRIVER_TASKS_PER_CORE = 4


def _hashes_as_workers(context: Any) -> bool:
    """Whether this process's ``hash()`` of a string equals the Python workers': both
    unsalted. PySpark gives its workers this process's ``PYTHONHASHSEED``, else 0."""
    workers = str(getattr(context, "environment", {}).get("PYTHONHASHSEED", "0"))
    return sys.flags.hash_randomization == 0 and workers == "0"


def _context_for(config: Config) -> Any:
    from samza_nb.runtime.executors.spark import get_spark_context

    if "spark.master" in config:
        check_master(config["spark.master"])
    else:
        running = running_context()
        if running is not None:
            return running
    return get_spark_context(config)


_EXECUTORS: dict[str, Callable[..., Executor]] = {
    LocalExecutor.name: lambda config, spark=None: LocalExecutor(),
    SparkExecutor.name: SparkExecutor,
}


def executor_names() -> list[str]:
    return sorted(_EXECUTORS)


def get_executor(name: str, config: Config, spark: Any = None) -> Executor:
    """An executor by name (``spark`` or ``local``)."""
    factory = _EXECUTORS.get(name)
    if factory is None:
        msg = f"unknown executor {name!r}; known: {', '.join(executor_names())}"
        raise ConfigError(msg)
    return factory(config, spark=spark)

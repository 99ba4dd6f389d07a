"""The Job: the handle a notebook or the CLI holds on a running (or finished) application.

``run(app)`` plans the application, creates its streams, starts a job coordinator
(``job.coordinator.factory``, embedded by default) and one :class:`StreamProcessor` per
processor it hosts, and returns the Job. The coordinator decides job models; each processor
runs its container in epochs on the executor (Spark by default). The Job answers status,
metrics, drain, DrainStates, collect and the views, and changes processors and groupers
through its coordinator (``kill_processor``, ``add_processor``, ``regroup``, ``rebalance``).
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from samza_nb.config import Config
from samza_nb.coordination.coordinator import get_job_coordinator
from samza_nb.coordination.embedded_lease import EmbeddedJobLease
from samza_nb.drain import write_drain_notification
from samza_nb.errors import JobError, JobInterruptedError, JobTimeoutError
from samza_nb.job.charts import JobChart, LagHeatmap
from samza_nb.job.compatibility import check_job
from samza_nb.job.home import job_home, make_job_home, metadata_store_path, resolve_run_id
from samza_nb.job.host import ProcessorHost
from samza_nb.job.metrics import JobMetrics
from samza_nb.job.overview import JobOverview, LatestMessages
from samza_nb.job.preparation import (
    check_grouping,
    check_inputs,
    create_streams,
    existing_job_data,
    forget_cached_offsets,
    initial_processors,
    input_partition_counts,
    model_calculator,
    open_metadata_store,
)
from samza_nb.job.progress import JobProgress
from samza_nb.job.run_state import ENDED, RunState, check_until
from samza_nb.job.status import DrainStatesView, JobStatus, ProcessorStatus
from samza_nb.job.views import JobViews
from samza_nb.metadata import JobHomeGuard, MetadataStore
from samza_nb.model import JobModel
from samza_nb.plan.execution_plan import ExecutionPlan
from samza_nb.runtime.executors.executor import get_executor
from samza_nb.runtime.executors.interrupts import plain_interrupts
from samza_nb.runtime.processor.epoch_driver import EpochDriver
from samza_nb.runtime.processor.processor import StreamProcessor
from samza_nb.runtime.processor.retention import SHARED_STORE_PASS_INTERVAL_S
from samza_nb.runtime.task.exactly_once import close_task_producers, open_checkpoint_store

__all__ = ["DrainStatesView", "Job", "JobStatus", "ProcessorStatus", "job_home", "metadata_store_path"]

#: How often :meth:`Job.wait_caught_up` looks whether the job ended meanwhile.
_CATCH_UP_LOOK_S = 0.05


class Job:
    """A running (or finished) application. Created by :func:`run`.

    It is composed of a :class:`~samza_nb.job.host.ProcessorHost` (the processors this process
    runs, and changes to them through the coordinator), a :class:`~samza_nb.job.views.JobViews`
    (what it shows) and a :class:`~samza_nb.job.progress.JobProgress` (what its processors
    report), around one :class:`~samza_nb.job.run_state.RunState`.
    """

    def __init__(
        self,
        app: Any,
        config: Config,
        *,
        processors: int | None = None,
        grouper: str | None = None,
        until: str | int = "end-of-stream",
        clock: Callable[[], int] | None = None,
        executor: str = "spark",
        spark: Any = None,
        lease_wait: bool = False,
        lease_timeout: float | None = None,
    ):
        check_until(until)
        self.app = app
        self.plan: ExecutionPlan = app.plan(config)
        self.config: Config = self.plan.config
        self._until = until
        self._clock = clock or (lambda: int(time.time() * 1000))
        check_inputs(self.plan)
        check_grouping(self.plan)
        self.coordinator_name = self.config.get_str("job.coordinator.factory") or "embedded"
        # A process of a distributed job hosts one processor; the embedded coordinator all.
        hosted = initial_processors(self.config, processors, single=self.coordinator_name != "embedded")
        check_job(self.plan, executor, hosted, spark)
        self._executor = get_executor(executor, self.config, spark)
        # On a Spark session already running, its resident workers start now: they connect
        # while the job takes its lease and sets up (a Spark job takes tens of milliseconds).
        self._executor.start_ahead()
        try:
            self.system = self.plan.default_system
            self.home = make_job_home(self.plan)
            self.metadata: MetadataStore = open_metadata_store(self.config, self.home)
            self.store_root = str(self.home / "stores")
            # One incarnation of the job at a time: with the embedded coordinator the job
            # home's lease, taken before anything is written; a ZooKeeper processor is fenced
            # by its session.
            self.lease = (
                EmbeddedJobLease(self.home, self.metadata, label=f"{self.plan.app_name}-{self.plan.job_id}")
                if self.coordinator_name == "embedded"
                else None
            )
            if self.lease is not None:
                self.lease.acquire(wait=lease_wait, timeout=lease_timeout)
        except BaseException:
            self._executor.close()
            raise
        try:
            JobHomeGuard(self.home, self.metadata).check(existing_job_data(self.plan, Path(self.store_root)))
            self._setup(hosted, grouper, executor, spark)
        except BaseException:
            self._release()
            raise

    def _release(self) -> None:
        executor = getattr(self, "_executor", None)
        if executor is not None:
            executor.close()
        close_task_producers(self.plan)
        if self.lease is not None:
            self.lease.release()
        self.metadata.release_session()

    def _setup(self, hosted: dict[str, str], grouper: str | None, executor: str, spark: Any) -> None:
        self.checkpoints = open_checkpoint_store(
            self.plan,
            self.metadata,
            fence=None if self.lease is None else self.lease.fence,
            guard=None if self.lease is not None else self._session_guard,
        )
        # A ZooKeeper processor learns the run id its group agreed on once it joined (start).
        self._run = RunState(
            resolve_run_id(self.metadata, self.config.get_str("app.run.id")) if self.lease else ""
        )
        forget_cached_offsets(self.plan)
        if self.lease is not None:
            create_streams(self.plan)
        # A distributed job's streams are created by its leader only, before its first model.
        setup: dict[str, Any] = {} if self.lease is not None else {"before_first_publish": self._create_streams}
        if self.coordinator_name == "zookeeper":  # its leader watches the inputs' partition counts
            setup["partition_counts"] = input_partition_counts(self.plan)
        self._driver = EpochDriver(
            self.plan, self.checkpoints, run_id=self.run_id, store_root=self.store_root, lease=self.lease
        )
        self.coordinator = get_job_coordinator(
            self.coordinator_name,
            calculator=model_calculator(self.plan, grouper, one_process=self.lease is not None),
            metadata=self.metadata,
            run_id=self.run_id,
            config=self.config,
            **setup,
        )
        self._host = ProcessorHost(self.plan.app_name, self.config, self.coordinator, self._run, self._new_processor)
        metrics = JobMetrics()
        self._views = JobViews(
            self.plan,
            self._host,
            self._run,
            checkpoints=self.checkpoints,
            metrics=metrics,
            driver=self._driver,
            executor=self._executor,
            one_process=self.lease is not None,
        )
        self._progress = JobProgress(
            self._run,
            self._host,
            self._views,
            metadata=self.metadata,
            checkpoints=self.checkpoints,
            metrics=metrics,
            driver=self._driver,
            until=self._until,
            one_process=self.lease is not None,
            release=self._release,
        )
        for pid, location in hosted.items():
            self._host.add(pid, location)

    def _new_processor(self, processor_id: str, location: str) -> StreamProcessor:
        return StreamProcessor(
            processor_id,
            location,
            plan=self.plan,
            checkpoints=self.checkpoints,
            metadata=self.metadata,
            executor=self._executor,
            driver=self._driver,
            events=self._progress,
            until=self._until,
            clock=self._clock,
            owns_retention=self._host.owns_retention,
            # Every task's checkpoint is a request away in a distributed job's store.
            retention_interval_s=0.0 if self.lease is not None else SHARED_STORE_PASS_INTERVAL_S,
        )

    def _create_streams(self, _model: JobModel) -> None:
        create_streams(self.plan)

    def _session_guard(self, transaction: Any) -> None:
        """A distributed coordinator's fence on commits (its processor's session is live)."""
        self.coordinator.fence(transaction)  # type: ignore[attr-defined]

    @property
    def run_id(self) -> str:
        """The deployment this run belongs to (a distributed job's group agrees on it at start)."""
        return self._run.run_id

    @property
    def drain_seen_epoch(self) -> int | None:
        """The highest processor epoch when the first processor saw the drain notification."""
        return self._run.drain_seen_epoch

    @property
    def _processors(self) -> dict[str, StreamProcessor]:
        return self._host.running

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self, background: bool) -> Job:
        self._run.state = "running"
        self._views.begin()
        try:
            with plain_interrupts():  # Ctrl-C while Spark starts: not PySpark's handler either
                self._starting()
        except KeyboardInterrupt as interrupt:
            # Ctrl-C while Spark starts (a fresh kernel's JVM takes seconds): the job stops and
            # releases its lease, and the error carries the Job, so a notebook still binds it.
            self.stop()
            raise self.interrupted() from interrupt
        except BaseException:
            # Spark did not start, or no first model (e.g. fewer locations than the standby
            # replication factor): the processors stop and the lease is released first.
            self.stop()
            raise
        if not background:
            try:
                self.wait()
            except KeyboardInterrupt as interrupt:
                self.stop()
                raise self.interrupted() from interrupt
        return self

    def _starting(self) -> None:
        self._executor.start()
        if self.lease is None:
            # Join the group first: the run id is the one the group agrees on.
            self.coordinator.start()
            generator = self.coordinator.run_id_generator(self.metadata)  # type: ignore[attr-defined]
            self._run.run_id = self._driver.run_id = generator.run_id()
        for processor in self._host.all():
            self._host.start(processor)
        if self.lease is not None:
            self.coordinator.start()

    def interrupted(self) -> JobInterruptedError:
        """The error of a foreground wait that Ctrl-C interrupted, once the job stopped."""
        msg = (
            f"interrupted: job {self.plan.app_name!r} {self._run.state} after epoch {self.epoch}; "
            "its checkpoints are committed and a new run continues from them"
        )
        error = JobInterruptedError(msg)
        error.job = self
        return error

    def wait(self, timeout: float | None = None) -> JobStatus:
        """Wait until the job ends. Raises JobTimeoutError (a TimeoutError) after ``timeout``
        seconds, the job still running, and the job's error (for example TaskError) if it
        failed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with plain_interrupts():  # Ctrl-C: a KeyboardInterrupt here, not PySpark's handler
            if not self._host.join(deadline):
                msg = f"job {self.plan.app_name!r} still running after {timeout} s (epoch {self.epoch})"
                raise JobTimeoutError(msg)
        self.coordinator.stop()
        error = self._run.error
        if error is not None:
            if isinstance(error, JobError):
                error.job = self  # the handle stays reachable: ``except TaskError as e: e.job``
            raise error
        return self.status()

    def wait_caught_up(self, timeout: float | None = None) -> JobStatus:
        """Wait until every task has read everything its streams hold (no lag on any input or
        intermediate stream): the moment to drain a job that works through a backlog. It is
        looked at each time a processor finds nothing to read, so it returns right after the
        epoch that caught up. Returns at once when the job ended (raising its error when it
        failed); raises JobTimeoutError (a TimeoutError) after ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with plain_interrupts(), self._progress.catching_up() as caught_up:
            while not caught_up.wait(_CATCH_UP_LOOK_S):
                if self._run.ended:
                    return self.wait()  # its status, or its error
                if deadline is not None and time.monotonic() > deadline:
                    msg = f"job {self.plan.app_name!r} not caught up after {timeout} s (epoch {self.epoch})"
                    raise JobTimeoutError(msg)
        return self.status()

    def stop(self) -> JobStatus:
        """Stop after the epoch in flight (its checkpoints are committed)."""
        self._run.stop_requested = True
        self._host.request_stop()
        self._host.join()
        self.coordinator.stop()
        self._release()
        if self._run.state == "running":
            self._run.state = "stopped"
        return self.status()

    # -- drain -------------------------------------------------------------------------------
    def drain(self, wait: bool = False, timeout: float | None = None) -> JobStatus:
        """Request a drain: writes a drain notification for this run and returns at once
        (``wait=True`` waits until every task drained and the job stopped). A job that has
        ended has nothing to drain: the notification would drain its next run at start."""
        if self.done:  # the run's state, without reading every checkpoint and input end
            msg = f"job {self.plan.app_name!r} has already {self.state}; there is nothing to drain"
            raise JobError(msg)
        if not self.config.get_bool("job.drain-monitor.enabled"):
            # The notification would wait in the store and drain the run's next start instead.
            msg = (
                f"job {self.plan.app_name!r} runs with job.drain-monitor.enabled=false: nothing "
                "watches for drain notifications; stop it with stop(), or run it with the "
                "drain monitor on to drain it"
            )
            raise JobError(msg)
        write_drain_notification(self.metadata, self.run_id)
        for processor in self._host.all():  # this process's: no poll interval to wait out
            processor.look_for_drain_now()
        return self.wait(timeout) if wait else self.status()

    def drain_states(self) -> DrainStatesView:
        """Per task and SSP: drained, upstream tasks heard from / expected, the epoch it drained
        at; ``.history`` replays propagation epoch by epoch."""
        history = self._progress.drain_history()
        return DrainStatesView.build(history, self._views.producer_counts(), self._views.task_ssps())

    # -- what it shows (JobViews) --------------------------------------------------------------
    @property
    def epoch(self) -> int:
        """The highest epoch of any processor."""
        return self._host.epoch

    @property
    def state(self) -> str:
        """Where the run stands: "created", "running", or how it ended ("finished", "stopped",
        "failed", "drained"), as :meth:`status` says, without reading any store (a loop that
        waits for the end asks this; ``status()`` reads every checkpoint and input end)."""
        return self._run.state

    @property
    def done(self) -> bool:
        """Whether the run has ended, as ``status().done`` says, without reading any store."""
        return self._run.state in ENDED

    def status(self) -> JobStatus:
        """State, epoch, processors, tasks (epochs, lag, done, restore), input partitions,
        standbys and the operators that skipped, dropped or failed."""
        return self._views.status()

    def standby_lags(self) -> dict[str, dict[str, Any]]:
        """Per standby task of this process's processors: where it runs and how far it is
        behind its active's committed checkpoint (records of the changelog, epochs)."""
        return self._views.standby_lags()

    def metrics(self) -> dict[str, Any]:
        """Per task and per stream: messages in/out, lag, epoch time, restores; changelog
        compactions and their failures; Spark Python workers lost mid-epoch."""
        return self._views.metrics()

    def operator_watermarks(self) -> dict[str, dict[str, tuple[int, int]]]:
        """Per task and operator: (input watermark, output watermark) as last committed."""
        return self._views.operator_watermarks()

    def collect(self, output_stream_id: str) -> Any:
        """The messages of an output stream as a DataFrame (partition, offset, key, value,
        timestamp); a KV sent to an output is split into key and value."""
        return self._views.collect(output_stream_id)

    def show(self, target: str | None = None, n: int = 20) -> JobOverview | LatestMessages:
        """The latest ``n`` messages of a stream (input, intermediate or output) or operator,
        or with no target the job at a glance. An operator is sampled inside the tasks from
        the next epoch on (its stream, for inputs, outputs and shuffles, is read back)."""
        return self._views.show(target, n)

    def lag_heatmap(self) -> LagHeatmap:
        """Lag per task and input stream partition, as committed (control messages left out)."""
        return self._views.lag_heatmap()

    def average_rate(self) -> float | None:
        """Input messages read per second, from the job's start to the commit that read its
        last input message so far (None before it read any)."""
        return self._views.average_rate()

    def plot(self, *panels: str, x: str = "seconds") -> JobChart:
        """The job's course after every committed epoch, drawn in real units on one time axis
        (seconds since the job started): by default the input rate (messages/s over the last
        10 s, with the job's average rate, both as RunProgress computes them) and the input lag
        (messages); panels may also be messages_in, messages_out and epoch, and ``x`` may be
        "epoch". ``.to_frame()`` gives the numbers."""
        return self._views.plot(*panels, x=x)

    @property
    def spark_ui(self) -> str | None:
        """The Spark UI's address when the job runs on Spark with the UI on
        (``spark.ui.enabled=true``), else None."""
        return self._views.spark_ui

    # -- its processors and grouper (ProcessorHost) ------------------------------------------
    @property
    def job_model(self) -> JobModel:
        """The job model the processors run now (no containers before the first one)."""
        return self._host.job_model

    @property
    def grouper(self) -> str:
        """The registry name of the grouper that computed the current JobModel."""
        return self._host.grouper

    @property
    def grouper_options(self) -> dict[str, Any]:
        """The options the current grouper was given (``rebalance(grouper, **options)``)."""
        return self._host.grouper_options

    @property
    def processors(self) -> dict[str, str]:
        """The live processors: processor id → location id (a grouper may leave one idle)."""
        return self._host.processors

    @property
    def replication_factor(self) -> int:
        """Copies of each task's state: 1 active + standbys (``job.standbytasks.replication.factor``,
        or what :meth:`regroup` set)."""
        return self._host.replication_factor

    def propose(
        self,
        processors: Mapping[str, str] | None = None,
        grouper: str | None = None,
        *,
        replication_factor: int | None = None,
        **options: Any,
    ) -> JobModel:
        """The model :meth:`regroup` would apply to these processors (and grouper), unapplied."""
        return self._host.propose(processors, grouper, replication_factor=replication_factor, **options)

    def regroup(
        self,
        processors: Mapping[str, str],
        grouper: str | None = None,
        *,
        replication_factor: int | None = None,
        **options: Any,
    ) -> JobModel:
        """Set the live processors (id → location) and optionally the grouper (and the standby
        ``replication_factor``) in one step: the running job moves from its model to the new
        one with no model in between. On failure the job keeps its processors, grouper and
        model."""
        return self._host.regroup(processors, grouper, replication_factor=replication_factor, **options)

    def kill_processor(self, processor_id: str) -> JobModel:
        """Remove a processor; its tasks move per the grouper (host affinity keeps the rest).
        With standbys (``job.standbytasks.replication.factor`` > 1) each of its active tasks is
        promoted onto the processor holding its standby and replays only its store's tail."""
        return self._host.kill_processor(processor_id)

    def add_processor(self, location_id: str | None = None) -> JobModel:
        """Add a processor (the next free number as its id) at ``location_id``; by default at
        its entry of ``processor.locations``, as ``run(processors=N)`` places the first N, or
        at this process's location."""
        return self._host.add_processor(location_id)

    def rebalance(self, grouper: str | None = None, **options: Any) -> JobModel:
        """Regroup the tasks (optionally with another grouper); moved tasks continue from their
        checkpoints. A grouper that fails leaves the running JobModel as it was."""
        return self._host.rebalance(grouper, **options)

    def __repr__(self) -> str:
        return f"Job({self.plan.app_name!r}, state={self._run.state!r}, epoch={self.epoch})"

    def _repr_html_(self) -> str:
        return (
            f"<p>Job <b>{html.escape(self.plan.app_name)}</b> (grouper "
            f"<code>{html.escape(self.grouper)}</code>)</p>{self.status()._repr_html_()}"
        )

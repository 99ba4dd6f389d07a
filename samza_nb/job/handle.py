"""The Job: the handle a notebook or the CLI holds on a running (or finished) application.

``run(app)`` plans the application, creates its streams, starts a job coordinator
(``job.coordinator.factory``, embedded by default) and one :class:`StreamProcessor` per
processor it hosts, and returns the Job. The coordinator decides job models; each processor
runs its container in epochs on the executor (Spark by default). The Job answers status,
metrics, drain, DrainStates, collect and the views, and changes processors and groupers
through its coordinator (``kill_processor``, ``add_processor``, ``regroup``, ``rebalance``).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from samza_nb.config import Config
from samza_nb.coordination.coordinator import get_job_coordinator
from samza_nb.coordination.embedded_lease import EmbeddedJobLease
from samza_nb.coordination.job_model_calculator import JobModelCalculator
from samza_nb.drain import cleanup, write_drain_notification
from samza_nb.errors import ConfigError, JobError, JobInterruptedError, JobTimeoutError
from samza_nb.job.compatibility import check_job
from samza_nb.job.history import JobHistory
from samza_nb.job.home import (
    job_home,
    make_job_home,
    mark_run_ended,
    metadata_store_path,
    resolve_run_id,
)
from samza_nb.job.metrics import JobMetrics
from samza_nb.job.preparation import (
    check_grouping,
    check_inputs,
    create_streams,
    existing_job_data,
    initial_processors,
    input_partition_counts,
    job_inputs,
    open_metadata_store,
)
from samza_nb.job.regrouping import JobRegrouping
from samza_nb.job.status import DrainStatesView, JobStatus, ProcessorStatus
from samza_nb.metadata import JobHomeGuard, MetadataStore, NamespacedMetadataStore
from samza_nb.model import JobModel
from samza_nb.plan.execution_plan import ExecutionPlan
from samza_nb.runtime.epoch import EpochResult
from samza_nb.runtime.executors.executor import get_executor
from samza_nb.runtime.executors.interrupts import plain_interrupts
from samza_nb.runtime.plan_systems import default_system_of, system_of
from samza_nb.runtime.processor.epoch_driver import EpochDriver
from samza_nb.runtime.processor.processor import StreamProcessor
from samza_nb.runtime.task.exactly_once import close_task_producers, open_checkpoint_store

__all__ = ["DrainStatesView", "Job", "JobStatus", "ProcessorStatus", "job_home", "metadata_store_path", "run"]

_UNTIL = ("end-of-stream", "caught-up", "forever")
_DONE_NAMESPACE = "samza-nb-task-done-v1"


class Job(JobRegrouping):
    """A running (or finished) application. Created by :func:`run`."""

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
        self.system = self.plan.default_system
        self.home = make_job_home(self.plan)
        self.metadata: MetadataStore = open_metadata_store(self.config, self.home)
        self.store_root = str(self.home / "stores")
        # One incarnation of the job at a time: with the embedded coordinator the job home's
        # lease, taken before anything is written; a ZooKeeper processor is fenced by its session.
        self.lease = (
            EmbeddedJobLease(self.home, self.metadata, label=f"{self.plan.app_name}-{self.plan.job_id}")
            if self.coordinator_name == "embedded"
            else None
        )
        if self.lease is not None:
            self.lease.acquire(wait=lease_wait, timeout=lease_timeout)
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

    def _setup(self, hosted: dict[str, str], grouper: str | None, executor: str, spark: Any) -> None:
        self.checkpoints = open_checkpoint_store(
            self.plan,
            self.metadata,
            fence=None if self.lease is None else self.lease.fence,
            guard=None if self.lease is not None else self._session_guard,
        )
        # A ZooKeeper processor learns the run id its group agreed on once it joined (start).
        self.run_id = resolve_run_id(self.metadata, self.config.get_str("app.run.id")) if self.lease else ""
        # What this process saw of the job's streams may be of topics made again since (broker
        # data lost, or deleted and created by another process): a run starts from the broker.
        for stream_id in self.plan.streams:
            system_of(self.plan, stream_id).forget_cached_offsets(stream_id)
        default = default_system_of(self.plan)
        if default is not None:
            for store in self.plan.store_names:
                default.forget_cached_offsets(self.plan.changelog_stream_id(store))
        if self.lease is not None:
            create_streams(self.plan)
        # A distributed job's streams are created by its leader only, before its first model.
        setup: dict[str, Any] = {} if self.lease is not None else {"before_first_publish": self._create_streams}
        if self.coordinator_name == "zookeeper":  # its leader watches the inputs' partition counts
            setup["partition_counts"] = input_partition_counts(self.plan)
        self._executor = get_executor(executor, self.config, spark)
        self._driver = EpochDriver(
            self.plan, self.checkpoints, run_id=self.run_id, store_root=self.store_root, lease=self.lease
        )
        self._metrics = JobMetrics()
        self._timeline = JobHistory()
        self._samples: dict[str, deque[str]] = {}
        self._lock = threading.RLock()
        self._progress = threading.RLock()
        self._state = "created"
        self._error: BaseException | None = None
        self._stop_requested = False
        self._done_tasks: set[str] = set()
        self._done_read_for: JobModel | None = None
        self._history: list[dict[str, Any]] = []
        self._leaving: set[str] = set()
        self._stopped: set[str] = set()
        #: The highest processor epoch when the first processor saw the drain notification.
        self.drain_seen_epoch: int | None = None
        if grouper is None and self.lease is None and "task.name.grouper.factory" not in self.config:
            # Processes of a distributed job have their own ids: Samza's standalone grouper.
            grouper = "group-by-container-ids"
        calculator = JobModelCalculator(
            job_inputs(self.plan),
            grouper=grouper,
            replication_factor=self.config.get_int("job.standbytasks.replication.factor"),
            # A distributed job's processes join one at a time: the first ones run with the
            # standbys their locations allow (status().unassigned_standbys) until more join.
            place_fewer_standbys=self.lease is None,
        )
        self.coordinator = get_job_coordinator(
            self.coordinator_name,
            calculator=calculator,
            metadata=self.metadata,
            run_id=self.run_id,
            config=self.config,
            **setup,
        )
        self._processors: dict[str, StreamProcessor] = {}
        for pid, location in hosted.items():
            self._add(pid, location)

    def _add(self, processor_id: str, location: str) -> StreamProcessor:
        processor = StreamProcessor(
            processor_id,
            location,
            plan=self.plan,
            checkpoints=self.checkpoints,
            metadata=self.metadata,
            executor=self._executor,
            driver=self._driver,
            events=self,
            until=self._until,
            clock=self._clock,
            owns_retention=self._owns_retention,
        )
        self._processors[processor_id] = processor
        self.coordinator.attach(processor_id, location, processor)
        return processor

    def _start_processor(self, processor: StreamProcessor) -> None:
        processor.start(
            drain_monitor=self.config.get_bool("job.drain-monitor.enabled"),
            poll_interval_ms=self.config.get_int("job.drain-monitor.poll.interval.ms"),
            run_id=self.run_id,
        )

    def _create_streams(self, _model: JobModel) -> None:
        create_streams(self.plan)

    def _session_guard(self, transaction: Any) -> None:
        """A distributed coordinator's fence on commits (its processor's session is live)."""
        self.coordinator.fence(transaction)  # type: ignore[attr-defined]

    def _owns_retention(self, processor: StreamProcessor) -> bool:
        # Retention needs every consumer's checkpoint: the leader's first processor owns it.
        return self.coordinator.is_leader and processor.processor_id == min(self._processors)

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self, background: bool) -> Job:
        self._state = "running"
        self._timeline.begin()
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
            self.run_id = self._driver.run_id = generator.run_id()
        for processor in list(self._processors.values()):
            self._start_processor(processor)
        if self.lease is not None:
            self.coordinator.start()

    def interrupted(self) -> JobInterruptedError:
        """The error of a foreground wait that Ctrl-C interrupted, once the job stopped."""
        msg = (
            f"interrupted: job {self.plan.app_name!r} {self._state} after epoch {self.epoch}; "
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
            for processor in list(self._processors.values()):
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                if not processor.join(left):
                    msg = f"job {self.plan.app_name!r} still running after {timeout} s (epoch {self.epoch})"
                    raise JobTimeoutError(msg)
        self.coordinator.stop()
        if self._error is not None:
            if isinstance(self._error, JobError):
                self._error.job = self  # the handle stays reachable: ``except TaskError as e: e.job``
            raise self._error
        return self.status()

    def stop(self) -> JobStatus:
        """Stop after the epoch in flight (its checkpoints are committed)."""
        self._stop_requested = True
        for processor in list(self._processors.values()):
            processor.request_stop()
        for processor in list(self._processors.values()):
            processor.join()
        self.coordinator.stop()
        self._release()
        if self._state == "running":
            self._state = "stopped"
        return self.status()

    def _finish(self, state: str) -> None:
        if self._state != "running":
            return
        self._state = state
        mark_run_ended(self.metadata, self.run_id, drained=state == "drained")
        if state == "drained":
            cleanup(self.metadata, self.run_id)
        for processor in list(self._processors.values()):
            processor.request_stop()

    # -- what processors report (ProcessorEvents) --------------------------------------------
    def epoch_committed(self, processor: StreamProcessor, results: list[EpochResult]) -> None:
        with self._progress:
            self._metrics.record(results)
            self._record_views(results)
            finished = [r.task_name for r in results if r.end_of_stream or r.drained]
            self._done_tasks.update(finished)
            if self.lease is None:
                # Processes of a distributed job learn of each other's finished tasks through
                # the metadata store: a task that ended is never restarted by a rebalance.
                done = NamespacedMetadataStore(self.metadata, _DONE_NAMESPACE)
                if finished:
                    done.put_all({task: self.run_id.encode() for task in finished})
                self._done_tasks.update(
                    task for task, run in done.all().items() if run.decode() == self.run_id
                )
            # A task that has not committed in this run still holds the previous run's state
            # (drained, maybe): not this run's DrainStates.
            control = {
                task: cp.control
                for task, cp in self.checkpoints.cached().items()
                if not self.run_id or cp.control.get("runId") in (None, self.run_id)
            }
            # The history replays drain propagation; an epoch that changed no DrainStates adds
            # nothing to replay, and a job idling for hours must not grow it epoch by epoch.
            if not self._history or _drains(control) != _drains(self._history[-1]["control"]):
                self._history.append(
                    {"processor": processor.processor_id, "epoch": processor.epoch, "control": control}
                )
            if not self._finish_if_all_done() and self._until == "caught-up" and self._caught_up():
                self._finish("finished")

    def processor_idle(self, processor: StreamProcessor) -> None:
        if self.lease is None and self._state == "running":
            # A process of a distributed job whose own tasks ended learns here that the
            # others' did: no epoch of its own commits any more to tell it.
            done = NamespacedMetadataStore(self.metadata, _DONE_NAMESPACE).all()
            with self._progress:
                self._done_tasks.update(t for t, run in done.items() if run.decode() == self.run_id)
                if self._finish_if_all_done():
                    return
        if self._until != "caught-up":
            return
        with self._progress:
            if self._state == "running" and not self._finish_if_all_done() and self._caught_up():
                self._finish("finished")

    def rejoins_when_fenced(self) -> bool:
        # A distributed coordinator's session ended: it rejoins; the embedded lease was taken.
        return self.lease is None

    def is_done(self, task: str) -> bool:
        if task not in self._done_tasks and self.lease is None:
            # A new model may hand this process tasks another process finished: read what the
            # group recorded once per model, before any of them is opened again.
            model = self.coordinator.job_model
            if model is not self._done_read_for:
                self._done_read_for = model
                done = NamespacedMetadataStore(self.metadata, _DONE_NAMESPACE).all()
                with self._progress:
                    self._done_tasks.update(t for t, run in done.items() if run.decode() == self.run_id)
                    if task in self._done_tasks:
                        self._finish_if_all_done()
        return task in self._done_tasks

    def _finish_if_all_done(self) -> bool:
        model = self.job_model
        if model.containers and all(t in self._done_tasks for t in model.active_tasks()):
            drained = any(p.drain_requested for p in self._processors.values())
            self._finish("drained" if drained else "finished")
            return True
        return False

    def drain_seen(self, processor: StreamProcessor) -> None:
        with self._progress:
            if self.drain_seen_epoch is None:
                self.drain_seen_epoch = self.epoch
        # Every processor drains: one DrainMonitor seeing the notification is enough.
        for other in list(self._processors.values()):
            if not other.drain_requested:
                other.drain_seen_epoch = other.epoch
                other.drain_requested = True

    def processor_stopped(self, processor: StreamProcessor) -> None:
        with self._progress:
            self._stopped.add(processor.processor_id)
            if processor.error is not None and self._error is None:
                self._error = processor.error
                self._state = "failed"
                for other in list(self._processors.values()):
                    other.request_stop()
            if processor.processor_id in self._leaving:
                return
            if set(self._processors) - self._leaving <= self._stopped:
                # The last processor stopped: the job has ended, the next run may take over.
                if self._state == "running":
                    self._state = "stopped" if self._stop_requested else "finished"
                self._release()

    def _caught_up(self) -> bool:
        """Whether every task of the job has read everything there is: this process's tasks
        by its own checkpoints, other processes' by what they committed to the shared store.
        A survivor whose peer died with unread input waits until a new model gives it the
        peer's tasks and it has read them too (it would otherwise say "finished" over them)."""
        lags = self._ssp_lags()
        if any(lag for (task, _ssp), lag in lags.items() if task not in self._done_tasks):
            return False
        # An input made again behind a checkpoint shows no lag, and is still to be read.
        return not self._driver.inputs_made_again(t for t in self._task_ssps() if t not in self._done_tasks)

    # -- drain -------------------------------------------------------------------------------
    def drain(self, wait: bool = False, timeout: float | None = None) -> JobStatus:
        """Request a drain: writes a drain notification for this run and returns at once
        (``wait=True`` waits until every task drained and the job stopped). A job that has
        ended has nothing to drain: the notification would drain its next run at start."""
        status = self.status()
        if status.done:
            msg = f"job {self.plan.app_name!r} has already {status.state}; there is nothing to drain"
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
        return self.wait(timeout) if wait else self.status()

    def drain_states(self) -> DrainStatesView:
        """Per task and SSP: drained, upstream tasks heard from / expected, the epoch it drained
        at; ``.history`` replays propagation epoch by epoch."""
        with self._progress:
            history = list(self._history)
        return DrainStatesView.build(history, self._producer_counts(), self._task_ssps())

def _drains(control: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Each task's DrainStates within its committed control state."""
    return {task: state.get("drain", {}) for task, state in control.items()}


def check_until(until: Any) -> None:
    """``until`` as run() takes it, or a ConfigError naming the choices."""
    if not (isinstance(until, int) and not isinstance(until, bool) and until > 0) and until not in _UNTIL:
        msg = f"until must be one of {list(_UNTIL)} or a positive number of epochs, got {until!r}"
        raise ConfigError(msg)


def run(
    app: Any,
    config: Config | dict[str, Any] | None = None,
    *,
    processors: int | None = None,
    grouper: str | None = None,
    until: str | int = "end-of-stream",
    background: bool = False,
    clock: Callable[[], int] | None = None,
    executor: str = "spark",
    lease_wait: bool = False,
    lease_timeout: float | None = None,
) -> Job:
    """Run ``app``; returns the Job (finished unless ``background=True``).

    ``processors`` overrides ``job.container.count``; ``grouper`` overrides
    ``task.name.grouper.factory``; ``executor="local"`` runs task epochs in this process
    instead of on Spark (tests; see :func:`samza_nb.testing.run_local`). One run of a job at a
    time: another run holding the job's lease fails this one at once, naming it, unless
    ``lease_wait`` (then up to ``lease_timeout`` seconds).
    """
    check_until(until)
    if not callable(getattr(app, "plan", None)):
        msg = f"run() takes a StreamApplication, got {type(app).__name__} {app!r:.60}"
        raise ConfigError(msg)
    job = Job(
        app,
        Config.of(config),
        processors=processors,
        grouper=grouper,
        until=until,
        clock=clock,
        executor=executor,
        lease_wait=lease_wait,
        lease_timeout=lease_timeout,
    )
    return job.start(background)

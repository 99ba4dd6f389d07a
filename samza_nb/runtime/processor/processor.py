"""StreamProcessor: one processor of a job, running its container of tasks in epochs.

A processor never decides assignments. Its coordinator hands it a job model
(``on_new_job_model``); it runs the active tasks of its container epoch after epoch on its
executor (Spark by default): plan the epoch, run every task epoch as one Spark job, commit the
checkpoints, apply retention when it owns it. ``on_job_model_expired`` stops work after the
epoch in flight has committed and returns only then, so a task is never run by two processors
at once. Each processor has its own DrainMonitor on the job's metadata store (Drain SEP) and
its own epoch count; ``until=N`` means N epochs of every processor.

What a processor reports (committed results, a drain it saw, its failure) goes to the
:class:`ProcessorEvents` of the process that hosts it: the :class:`~samza_nb.job.handle.Job`.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from samza_nb.drain import DrainMonitor
from samza_nb.errors import CommitConflictError, JobLeaseError
from samza_nb.metadata import MetadataStore
from samza_nb.model import ContainerModel, JobModel, SystemStreamPartition, TaskMode, TaskModel
from samza_nb.runtime.checkpoints import CheckpointStore
from samza_nb.runtime.epoch import EpochResult
from samza_nb.runtime.executors.executor import Executor
from samza_nb.runtime.faults import reached as kill_point
from samza_nb.runtime.processor.compaction import ChangelogCompactor
from samza_nb.runtime.processor.epoch_driver import (
    EpochDriver,
    newest_offsets,
    processing_time,
    producer_counts,
    ssp_lags,
)
from samza_nb.runtime.processor.retention import BackgroundRetention
from samza_nb.runtime.processor.standby import StandbyProgress, StandbyTasks, standby_locations
from samza_nb.runtime.processor.store_reports import StoreReports
from samza_nb.runtime.task.stores import task_store_folder

if TYPE_CHECKING:
    from samza_nb.plan.execution_plan import ExecutionPlan

__all__ = ["ProcessorEvents", "StreamProcessor"]

_IDLE_SLEEP_S = 0.2
_log = logging.getLogger(__name__)


class ProcessorEvents(Protocol):
    """What a processor tells the job hosting it."""

    def epoch_committed(self, processor: StreamProcessor, results: list[EpochResult]) -> None:
        """Results of tasks whose checkpoints were just committed."""

    def is_done(self, task: str) -> bool:
        """Whether ``task`` reached end-of-stream or drained (it needs no more epochs)."""

    def processor_idle(self, processor: StreamProcessor) -> None:
        """The processor found nothing to do (no epoch ran): a job that runs until caught up
        may be done although no epoch committed (inputs that hold nothing)."""

    def drain_seen(self, processor: StreamProcessor) -> None:
        """The processor's DrainMonitor saw a drain notification for the job's run."""

    def processor_stopped(self, processor: StreamProcessor) -> None:
        """The processor's loop ended (``processor.error`` says whether it failed)."""

    def rejoins_when_fenced(self) -> bool:
        """Whether a fenced commit means "wait for the coordinator's next model" (a distributed
        coordinator rejoins with a new session) rather than "stop" (a newer incarnation)."""


class StreamProcessor:
    """Runs one processor's container (see the module docstring)."""

    def __init__(
        self,
        processor_id: str,
        location_id: str,
        *,
        plan: ExecutionPlan,
        checkpoints: CheckpointStore,
        metadata: MetadataStore,
        executor: Executor,
        driver: EpochDriver,
        events: ProcessorEvents,
        until: str | int,
        clock: Callable[[], int],
        owns_retention: Callable[[StreamProcessor], bool],
        retention_interval_s: float = 0.0,
    ) -> None:
        self.processor_id = processor_id
        self.location_id = location_id
        self.plan = plan
        self.checkpoints = checkpoints
        self.executor = executor
        self.driver = driver
        self.events = events
        self._until = until
        self._clock = clock
        self._owns_retention = owns_retention
        self._metadata = metadata
        self.epoch = 0
        self.state = "created"
        self.error: BaseException | None = None
        self.drain_requested = False
        #: This processor's epoch when its DrainMonitor saw the notification.
        self.drain_seen_epoch: int | None = None
        #: Tasks that ran an epoch since the drain was requested (their drain is injected):
        #: after that, a drain alone is no reason for an epoch.
        self._drain_ran: set[str] = set()
        self._model: JobModel | None = None
        self._container: ContainerModel | None = None
        self._counts: dict[str, int] = {}
        self._cond = threading.Condition()
        self._paused = True
        self._stale_cache = False
        self._locations_stale = False
        #: Tasks that came to this processor since its last epoch (they may have run elsewhere).
        self._arrived: set[str] = set()
        self._in_epoch = False
        self._stop = False
        self._thread: threading.Thread | None = None
        #: Set when the loop has ended (after the job heard of it). join() waits on this, not
        #: on Thread.join: in CPython 3.11 a KeyboardInterrupt inside Thread.join can leave a
        #: running thread marked as stopped (bpo-45274), and a wait interrupted once would
        #: then take the job for ended.
        self._ended = threading.Event()
        self._monitor: DrainMonitor | None = None
        self._has_windows = bool(plan.window_ms) or any(
            spec.opcode.value == "window" for spec in plan.operators.values()
        )
        self._timer_ms = plan.window_ms or 1000
        self._min_interval_s = plan.config.get_int("task.epoch.min.interval.ms") / 1000
        #: How long a processor that had nothing to do waits before it looks again: the poll
        #: interval, doubling while it stays idle up to _IDLE_SLEEP_S (each look reads the
        #: input's newest offsets and, when caught up, the metadata store).
        self._poll_s = plan.config.get_int("task.poll.interval.ms") / 1000
        self._idle_wait_s = self._poll_s
        self._last_epoch_at = 0.0
        #: Compacts changelogs in the background when this processor owns retention.
        self.compactor = ChangelogCompactor(plan)
        #: Deletes consumed intermediate data when this processor owns retention, a pass at
        #: most every ``retention_interval_s`` (each reads every task's checkpoint).
        self.retention = BackgroundRetention(plan, min_interval_s=retention_interval_s)
        self.standby_tasks = StandbyTasks(plan, checkpoints, processor_id, driver.store_root)
        #: Which tasks' stores this processor reported holding at its location (host affinity).
        self.store_reports = StoreReports(metadata, processor_id, has_stores=bool(plan.store_names))

    @property
    def standbys(self) -> dict[str, StandbyProgress]:
        """Progress of this processor's standby tasks, by standby task name."""
        return self.standby_tasks.progress

    def __repr__(self) -> str:
        return f"StreamProcessor({self.processor_id!r} at {self.location_id!r}, {self.state}, epoch {self.epoch})"

    # -- the coordinator's callbacks ---------------------------------------------------------
    def on_job_model_expired(self) -> None:
        with self._cond:
            self._paused = True
            self._cond.notify_all()
            while self._in_epoch:
                self._cond.wait(0.1)
            # Any of its tasks may run elsewhere before the next model hands them back.
            self._stale_cache = True
        self._release_task_stores()
        kill_point("in-rebalance")

    def on_new_job_model(self, processor_id: str, job_model: JobModel) -> None:
        with self._cond:
            # Not expired: only standby tasks changed. The epoch in flight finishes with the
            # old ones before this returns, so no standby step touches a store its task now
            # opens elsewhere at this location.
            standbys_only = not self._paused
            before = set(self._container.tasks) if self._container is not None else set()
            self._model = job_model
            self._container = job_model.containers.get(processor_id)
            # Tasks arriving from another processor resume from the store's checkpoint, never
            # from one this process cached when it last ran them.
            after = set(self._container.tasks) if self._container is not None else set()
            self.checkpoints.forget(after if self._stale_cache else after - before)
            self.store_reports.forget(None if self._stale_cache else (before ^ after))
            # Tasks that arrive may have run on another processor's executors, and standbys
            # may have moved: on a cluster, the executor places the epochs by where the stores
            # were reported and where the standbys are (read before the next epoch, not on the
            # coordinator's thread).
            self._locations_stale = True
            self._arrived |= after if self._stale_cache else after - before
            self._stale_cache = False
            active = {
                name: task.ssps for name, task in job_model.active_tasks().items()
            }
            self._counts = producer_counts(self.plan, active)
            self._paused = False
            self._cond.notify_all()
            while standbys_only and self._in_epoch and threading.current_thread() is not self._thread:
                self._cond.wait(0.1)

    def on_coordinator_stop(self) -> None:
        self.request_stop()

    def on_coordinator_failure(self, error: BaseException) -> None:
        self.error = self.error or error
        self.request_stop()

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self, *, drain_monitor: bool, poll_interval_ms: int, run_id: str) -> None:
        self.store_reports.run_id = run_id
        if drain_monitor:
            self._monitor = DrainMonitor(self._metadata, run_id, poll_interval_ms=poll_interval_ms)
            self._monitor.register_callback(self._on_drain)
            self._monitor.start()
        self.state = "running"
        self._thread = threading.Thread(
            target=self._run, name=f"samza-nb-processor-{self.processor_id}", daemon=True
        )
        self._thread.start()

    def request_stop(self) -> None:
        """Stop after the epoch in flight commits (does not wait)."""
        with self._cond:
            self._stop = True
            self._cond.notify_all()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the loop to end; True when it has."""
        thread = self._thread
        if thread is None:
            return True
        if thread is threading.current_thread():
            return self._ended.is_set()
        return self._ended.wait(timeout)

    @property
    def alive(self) -> bool:
        return self._thread is not None and not self._ended.is_set()

    @property
    def container(self) -> ContainerModel | None:
        return self._container

    def active_tasks(self) -> list[str]:
        container = self._container
        if container is None:
            return []
        return sorted(name for name, task in container.tasks.items() if task.mode is TaskMode.ACTIVE)

    def look_for_drain_now(self) -> None:
        """This process wrote a drain notification for the run: its monitor looks at once."""
        if self._monitor is not None:
            self._monitor.check_now()

    def wake(self) -> None:
        """End an idle wait: the loop looks for work now (a drain was requested)."""
        with self._cond:
            self._cond.notify_all()

    def _on_drain(self) -> None:
        if not self.drain_requested:
            self.drain_seen_epoch = self.epoch
            self.drain_requested = True
            self.events.drain_seen(self)
            self.wake()

    # -- the loop ----------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            while True:
                with self._cond:
                    while not self._stop and (self._paused or self._model is None):
                        self._cond.wait(_IDLE_SLEEP_S)
                    if self._stop:
                        break
                    model, container = self._model, self._container
                    self._in_epoch = True
                try:
                    worked = self._one_epoch(model, container)
                except JobLeaseError as fenced:
                    if not self.events.rejoins_when_fenced():
                        raise
                    self._after_refused_commit(fenced, container)
                    worked = False
                finally:
                    with self._cond:
                        self._in_epoch = False
                        self._cond.notify_all()
                if isinstance(self._until, int) and self.epoch >= self._until:
                    break
                if worked:
                    self._idle_wait_s = self._poll_s
                else:
                    self.events.processor_idle(self)
                    with self._cond:
                        self._cond.wait(self._idle_wait_s)
                    self._idle_wait_s = min(2 * self._idle_wait_s, max(self._poll_s, _IDLE_SLEEP_S))
            self.retention.join()
            self.state = "stopped" if self._stop else "finished"
        except BaseException as error:  # the processor thread must report every failure
            self.error = error
            self.state = "failed"
        finally:
            try:
                self._release_task_stores()
                if self._monitor is not None:
                    self._monitor.stop()
                self._retention_stopped()
                self.compactor.join()
                self.events.processor_stopped(self)
            finally:
                self._ended.set()

    def _after_refused_commit(self, error: JobLeaseError, container: ContainerModel | None) -> None:
        """After a commit or plan write of a distributed job was refused: wait for the
        coordinator's next model, or go on from the store. A refused write wrote nothing, except
        on Azure, where the tasks' checkpoints before the one that changed were written (they
        are read again like the others). The refused epoch does not count (``until=N`` means N
        epochs that committed)."""
        self.epoch -= 1  # counted when it began; a distributed job's lease check raises nothing
        if isinstance(error, CommitConflictError):
            # A processor frozen between its fence check and its writes wrote a task's
            # checkpoint after this one read it: the same epoch plan's (a pending plan is
            # replayed, so its outputs carry one tag). If this processor still holds its
            # fence, its tasks resume from what the store holds; if not, it is that frozen one.
            _log.warning("processor %s: %s", self.processor_id, error)
            try:
                self.checkpoints.check_fence()
            except JobLeaseError as fenced:
                error = fenced
            else:
                _log.warning("processor %s: reading its tasks' checkpoints again", self.processor_id)
                if container is not None:
                    self.checkpoints.forget(container.tasks)
                self._release_task_stores()
                return
        _log.warning("processor %s: %s; waiting for the next job model", self.processor_id, error)
        # This process's session ended under it (frozen past its timeout): the coordinator
        # rejoins and hands over a model.
        with self._cond:
            self._paused = True
            self._stale_cache = True
        self._release_task_stores()

    def _release_task_stores(self) -> None:
        """Have the executor close the stores it keeps open of this processor's active tasks
        (resident workers keep them between epochs): the tasks may run elsewhere next, and
        another process at this location may open their stores (Samza closes a container's
        stores when its job model expires)."""
        container = self._container
        if container is None:
            return
        location = container.location_id or self.location_id
        folders = [task_store_folder(self.driver.store_root, location, name) for name in self.active_tasks()]
        try:
            self.executor.release_stores(folders)
        except Exception as error:  # the stores close when the workers return anyway
            _log.warning("processor %s: releasing its tasks' stores failed: %s", self.processor_id, error)

    def _retention_stopped(self) -> None:
        """Wait for a retention pass still running and end its thread. A pass fails the
        processor through ``join()``; one that failed after the processor had failed (mostly
        the same cause: a store gone away, read on the retention thread) is logged at INFO:
        the processor's error is the one reported, and the next pass deletes what it left."""
        try:
            self.retention.close()
        except Exception as error:
            level = logging.INFO if self.error is not None else logging.WARNING
            _log.log(level, "processor %s: intermediate-stream retention failed: %s", self.processor_id, error)

    def _one_epoch(self, model: JobModel | None, container: ContainerModel | None) -> bool:
        """Run one epoch of this processor's active tasks; False when there was nothing to do."""
        if model is None:
            return False
        if container is None:  # the grouper gave this processor nothing: idle epochs
            if isinstance(self._until, int):  # still count (``until`` is a number of epochs)
                self._count_epoch()
            return False
        tasks = [
            task
            for name, task in sorted(container.tasks.items())
            if task.mode is TaskMode.ACTIVE and not self.events.is_done(name)
        ]
        standbys = [task for _, task in sorted(container.tasks.items()) if task.mode is TaskMode.STANDBY]
        if not tasks:
            return self._standby_epoch(container, standbys, counts=True)
        newest = newest_offsets(self.plan)
        if self._idle(tasks_ssps := {t.name: t.ssps for t in tasks}, newest):
            return self._standby_epoch(container, standbys, counts=False)
        wait = self._last_epoch_at + self._min_interval_s - time.monotonic()
        if wait > 0:  # task.epoch.min.interval.ms spaces epochs out
            with self._cond:
                self._cond.wait(wait)
        self.driver.check_lease()
        self.epoch += 1
        self._last_epoch_at = time.monotonic()
        now = processing_time(self._clock())
        location = container.location_id or self.location_id
        drain = self.drain_requested
        assignments = self.driver.assignments(
            tasks, location, now_ms=now, newest=newest, drain=drain, counts=self._counts
        )
        with self._cond:  # set by the coordinator's thread
            stale, arrived = self._locations_stale, self._arrived
            self._locations_stale, self._arrived = False, set()
        if stale and self.executor.places_on_hosts():
            actives, copies = self.store_reports.held()
            self.executor.stores_held(actives, copies, standby_locations(model), arrived, self.active_tasks())
        results = self.executor.run_epoch(self.plan, assignments)
        kill_point("after-flush-before-commit")
        committed, failure = self.driver.commit(results)
        kill_point("mid-commit")
        self.events.epoch_committed(self, committed)
        self.store_reports.actives_committed(location, committed)
        # Inputs deleted before they were read, and stores rebuilt because they were corrupt.
        for note in (note for result in committed for note in (*result.deleted_unread, *result.rebuilt)):
            _log.warning("processor %s: %s", self.processor_id, note)
        if failure is not None:
            raise failure
        self._standby_epoch(container, standbys, counts=False)
        if self._owns_retention(self):
            all_ssps = {name: task.ssps for name, task in model.active_tasks().items()}
            # One read of every checkpoint serves both, whichever asks first: the compactor
            # now (when it may compact), else the retention thread when its pass starts.
            read_all = functools.cache(self.checkpoints.read_all)
            self.compactor.after_epoch(model, read_all)
            self.retention.after_epoch(all_ssps, read_all)
        injected = drain and not self._drain_ran.issuperset(tasks_ssps)
        if drain:
            self._drain_ran.update(tasks_ssps)
        return injected or any(
            a.bounds.get(key, 0) > a.start_offsets.get(key, 0) for a in assignments for key in a.bounds
        ) or not self._caught_up(tasks_ssps, newest)

    # -- hot standby (runtime/processor/standby.py) -------------------------------------------------------
    def _standby_epoch(self, container: ContainerModel, standbys: list[TaskModel], *, counts: bool) -> bool:
        """Bring every standby task to its active's committed checkpoint; True when one had
        records to apply. ``counts``: this is the processor's epoch (it has no active task to
        run), counted like one when it works or when ``until`` is a number of epochs."""
        location = container.location_id or self.location_id
        behind = self.standby_tasks.behind(standbys, location)
        if counts and (behind or isinstance(self._until, int)):
            self._count_epoch()
        for progress in self.standby_tasks.catch_up(behind):
            self.store_reports.standby_stepped(location, progress.task, progress.active, progress.applied_seq)
        return bool(behind)

    def _count_epoch(self) -> None:
        """An epoch of this processor that runs no active task (standbys only, or nothing)."""
        self.driver.check_lease()
        self.epoch += 1
        self._last_epoch_at = time.monotonic()

    def _idle(self, task_ssps: dict[str, frozenset[SystemStreamPartition]], newest: dict[str, int]) -> bool:
        """Whether an epoch now would do nothing: no message to read, no window timer due, no
        drain still to enter a task and no epoch left pending by a crash. A quiet processor submits no Spark job
        (epochs still count when ``until`` is a number)."""
        if isinstance(self._until, int):
            return False
        if self.drain_requested and not self._drain_ran.issuperset(task_ssps):
            return False  # the drain enters each task in an epoch (what crosses shuffles is read)
        if not self._caught_up(task_ssps, newest):
            return False
        if self.driver.inputs_made_again(task_ssps):
            return False
        if self._has_windows and (time.monotonic() - self._last_epoch_at) * 1000 >= self._timer_ms:
            return False
        return not any(self.driver.has_pending_plan(task) for task in task_ssps)

    def _caught_up(self, task_ssps: dict[str, frozenset[SystemStreamPartition]], newest: dict[str, int]) -> bool:
        lags = ssp_lags(task_ssps, self.checkpoints.cached(), newest)
        return not any(lags.values())

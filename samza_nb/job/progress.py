"""What a job's processors report, and the run's course it makes: metrics and the views' points
after each commit, the tasks that ended, drain propagation, and the run's end (finished,
drained, failed or stopped). A part of :class:`~samza_nb.job.handle.Job`: the processors'
:class:`~samza_nb.runtime.processor.processor.ProcessorEvents`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from samza_nb.drain import cleanup
from samza_nb.job.home import mark_run_ended
from samza_nb.metadata import NamespacedMetadataStore

if TYPE_CHECKING:
    from samza_nb.job.host import ProcessorHost
    from samza_nb.job.metrics import JobMetrics
    from samza_nb.job.run_state import RunState
    from samza_nb.job.views import JobViews
    from samza_nb.metadata import MetadataStore
    from samza_nb.model import JobModel
    from samza_nb.runtime.checkpoints import CheckpointStore
    from samza_nb.runtime.epoch import EpochResult
    from samza_nb.runtime.processor.epoch_driver import EpochDriver
    from samza_nb.runtime.processor.processor import StreamProcessor

__all__ = ["JobProgress"]

#: Where the processes of a distributed job record the tasks that ended in a run.
_DONE_NAMESPACE = "samza-nb-task-done-v1"

#: How often an idle processor of a distributed job reads the tasks the others ended and, for
#: ``until="caught-up"``, their checkpoints and the inputs' ends: each look is requests to the
#: shared store (ZooKeeper, Azure) and the brokers, and a processor waits idle up to five times
#: a second.
_SHARED_READ_INTERVAL_S = 1.0


class JobProgress:
    """The events of a job's processors, and the run's course they make."""

    def __init__(
        self,
        run: RunState,
        host: ProcessorHost,
        views: JobViews,
        *,
        metadata: MetadataStore,
        checkpoints: CheckpointStore,
        metrics: JobMetrics,
        driver: EpochDriver,
        until: str | int,
        one_process: bool,
        release: Callable[[], None],
    ) -> None:
        self._run = run
        self._host = host
        self._views = views
        self._metadata = metadata
        self._checkpoints = checkpoints
        self._metrics = metrics
        self._driver = driver
        self._until = until
        #: Whether one process hosts every processor (the embedded coordinator); else the
        #: processes learn of each other's ended tasks through the metadata store.
        self._one_process = one_process
        self._release = release
        self._history: list[dict[str, Any]] = []
        self._done_read_for: JobModel | None = None
        self._stopped: set[str] = set()
        self._next_shared_read = 0.0
        #: Set while someone waits for the job to catch up, once it has (looked at when a
        #: processor finds nothing to read).
        self._caught_up_now = threading.Event()
        self._catch_up_waiters = 0

    @contextmanager
    def catching_up(self) -> Iterator[threading.Event]:
        """An event set once the job has read everything its streams hold, for as long as the
        caller waits for it (:meth:`~samza_nb.job.handle.Job.wait_caught_up`)."""
        with self._run.lock:
            if not self._catch_up_waiters:
                self._caught_up_now.clear()
            self._catch_up_waiters += 1
        try:
            yield self._caught_up_now
        finally:
            with self._run.lock:
                self._catch_up_waiters -= 1

    def drain_history(self) -> list[dict[str, Any]]:
        """Per epoch that changed DrainStates: the processor, its epoch and the tasks' control."""
        with self._run.lock:
            return list(self._history)

    # -- what processors report (ProcessorEvents) --------------------------------------------
    def epoch_committed(self, processor: StreamProcessor, results: list[EpochResult]) -> None:
        run = self._run
        with run.lock:
            self._metrics.record(results)
            self._views.record(results)
            finished = [r.task_name for r in results if r.end_of_stream or r.drained]
            run.done_tasks.update(finished)
            if not self._one_process:
                # Processes of a distributed job learn of each other's finished tasks through
                # the metadata store: a task that ended is never restarted by a rebalance.
                done = self._done_store()
                if finished:
                    done.put_all({task: run.run_id.encode() for task in finished})
                run.done_tasks.update(t for t, r in done.all().items() if r.decode() == run.run_id)
            # A task that has not committed in this run still holds the previous run's state
            # (drained, maybe): not this run's DrainStates.
            control = {
                task: cp.control
                for task, cp in self._checkpoints.cached().items()
                if not run.run_id or cp.control.get("runId") in (None, run.run_id)
            }
            # The history replays drain propagation; an epoch that changed no DrainStates adds
            # nothing to replay, and a job idling for hours must not grow it epoch by epoch.
            if not self._history or _drains(control) != _drains(self._history[-1]["control"]):
                self._history.append(
                    {"processor": processor.processor_id, "epoch": processor.epoch, "control": control}
                )
            if not self._finish_if_all_done() and self._until == "caught-up" and self._caught_up():
                self.finish("finished")

    def processor_idle(self, processor: StreamProcessor) -> None:
        run = self._run
        if not self._one_process:
            # What an idle process of a distributed job looks at is in the shared store (the
            # tasks the others ended, their checkpoints) and the inputs' ends: once a second,
            # not at every idle wait.
            now = time.monotonic()
            if now < self._next_shared_read:
                return
            self._next_shared_read = now + _SHARED_READ_INTERVAL_S
            if run.state == "running":
                # A process whose own tasks ended learns here that the others' did: no epoch
                # of its own commits any more to tell it.
                done = self._done_store().all()
                with run.lock:
                    run.done_tasks.update(t for t, r in done.items() if r.decode() == run.run_id)
                    if self._finish_if_all_done():
                        return
        if self._catch_up_waiters and not self._caught_up_now.is_set():
            with run.lock:
                if run.state == "running" and self._caught_up():
                    self._caught_up_now.set()
        if self._until != "caught-up":
            return
        with run.lock:
            if run.state == "running" and not self._finish_if_all_done() and self._caught_up():
                self.finish("finished")

    def rejoins_when_fenced(self) -> bool:
        # A distributed coordinator's session ended: it rejoins; the embedded lease was taken.
        return not self._one_process

    def is_done(self, task: str) -> bool:
        run = self._run
        if task not in run.done_tasks and not self._one_process:
            # A new model may hand this process tasks another process finished: read what the
            # group recorded once per model, before any of them is opened again.
            model = self._host.coordinator.job_model
            if model is not self._done_read_for:
                self._done_read_for = model
                done = self._done_store().all()
                with run.lock:
                    run.done_tasks.update(t for t, r in done.items() if r.decode() == run.run_id)
                    if task in run.done_tasks:
                        self._finish_if_all_done()
        return task in run.done_tasks

    def drain_seen(self, processor: StreamProcessor) -> None:
        with self._run.lock:
            if self._run.drain_seen_epoch is None:
                self._run.drain_seen_epoch = self._host.epoch
        # Every processor drains: one DrainMonitor seeing the notification is enough.
        for other in self._host.all():
            if not other.drain_requested:
                other.drain_seen_epoch = other.epoch
                other.drain_requested = True
                other.wake()

    def processor_stopped(self, processor: StreamProcessor) -> None:
        run = self._run
        with run.lock:
            self._stopped.add(processor.processor_id)
            if processor.error is not None and run.error is None:
                run.error = processor.error
                run.state = "failed"
                self._host.request_stop()
            if self._host.is_leaving(processor.processor_id):
                return
            if self._host.staying() <= self._stopped:
                # The last processor stopped: the job has ended, the next run may take over.
                if run.state == "running":
                    run.state = "stopped" if run.stop_requested else "finished"
                self._release()

    # -- the run's end -------------------------------------------------------------------------
    def finish(self, state: str) -> None:
        """The run ends in ``state`` (finished or drained): recorded, and every processor stops."""
        run = self._run
        if run.state != "running":
            return
        run.state = state
        mark_run_ended(self._metadata, run.run_id, drained=state == "drained")
        if state == "drained":
            cleanup(self._metadata, run.run_id)
        self._host.request_stop()

    def _finish_if_all_done(self) -> bool:
        model = self._host.job_model
        if model.containers and all(t in self._run.done_tasks for t in model.active_tasks()):
            drained = any(p.drain_requested for p in self._host.all())
            self.finish("drained" if drained else "finished")
            return True
        return False

    def _caught_up(self) -> bool:
        """Whether every task of the job has read everything there is: this process's tasks
        by its own checkpoints, other processes' by what they committed to the shared store.
        A survivor whose peer died with unread input waits until a new model gives it the
        peer's tasks and it has read them too (it would otherwise say "finished" over them)."""
        done = self._run.done_tasks
        lags = self._views.ssp_lags()
        if any(lag for (task, _ssp), lag in lags.items() if task not in done):
            return False
        # An input made again behind a checkpoint shows no lag, and is still to be read.
        return not self._driver.inputs_made_again(t for t in self._views.task_ssps() if t not in done)

    def _done_store(self) -> NamespacedMetadataStore:
        return NamespacedMetadataStore(self._metadata, _DONE_NAMESPACE)


def _drains(control: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Each task's DrainStates within its committed control state."""
    return {task: state.get("drain", {}) for task, state in control.items()}

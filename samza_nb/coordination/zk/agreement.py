"""A processor's side of a ZooKeeper version (SAMZA.md §8.5 steps 5–7 and 9).

Every processor reads each new version, stops work only if its own active tasks changed (a
change of standbys alone drops the leaving ones and keeps working), and joins the version's
barrier; on DONE the leader records the version as active and the processors whose work
changed start it and record where their tasks now run.
"""

from __future__ import annotations

from samza_nb.coordination.assignments import LocalityManager, update_task_assignments
from samza_nb.coordination.zk.barrier import DONE, TIMED_OUT
from samza_nb.coordination.zk.leadership import ZkLeadership
from samza_nb.coordination.zk.state import ZkState
from samza_nb.model import JobModel, TaskMode

__all__ = ["ZkAgreement", "active_work"]


def active_work(model: JobModel, processor_id: str) -> tuple[object, ...] | None:
    """What of a processor's container an expiry is about: its location and active tasks
    (standby tasks may come and go without stopping the processor's work)."""
    container = model.containers.get(processor_id)
    if container is None:
        return None
    return (
        container.location_id,
        frozenset(
            (name, task) for name, task in container.tasks.items() if task.mode is TaskMode.ACTIVE
        ),
    )


class ZkAgreement:
    """How this processor takes the versions the leader publishes."""

    def __init__(self, state: ZkState, leadership: ZkLeadership) -> None:
        self._state = state
        self._leadership = leadership
        self.model: JobModel | None = None  # the model this processor runs (agreed)
        self.model_version: str | None = None
        self._latest: tuple[str, JobModel] | None = None  # the newest model read
        self._seen_version: str | None = None
        self._primed = False
        self.expired = False  # this processor's work was stopped for a newer model
        self._standbys_moved = False  # the newest model read changes only this one's standbys
        self.working = False  # the listener runs a model handed over by on_new_job_model

    def expire_work(self) -> None:
        """Stop the work this processor runs (its model is no longer agreed)."""
        if self.working and not self.expired:
            self._state.listener().on_job_model_expired()
        self.working = False
        self.expired = True

    """How this processor takes the versions the leader publishes."""

    # -- every processor: new versions and the barrier (§8.5 steps 5–7) ------------------------
    def on_version_data(self, data: bytes | None, stat: object) -> bool:
        if self._state.stopped:
            return False
        version = data.decode().strip() if data else ""
        if not self._primed and not version:
            self._primed = True
            return True
        if not version or version == self._seen_version:
            return True
        if not self._primed:
            # The version found at start is history; only a change is news (Samza subscribes).
            self._primed = True
            self._seen_version = version
            return True
        self._seen_version = version
        self._state.schedule("version-change", 0, lambda: self._on_version_change(version))
        return True

    def _on_version_change(self, version: str) -> None:
        state = self._state
        model = state.versions.read(version)
        self._latest = (version, model)
        pid = state.processor_id
        if self.model is None or active_work(self.model, pid) != active_work(model, pid):
            if self.working and not self.expired:
                state.listener().on_job_model_expired()
                self.working = False
            self.expired = True
        elif self.model.containers.get(pid) != model.containers.get(pid):
            # Placing or moving a standby never expires this processor's active work (issue
            # #15): it keeps running and takes the new standby set when the model is agreed.
            self._standbys_moved = True
            self._drop_leaving_standbys(self.model, model)
        if pid not in state.barrier.expected(version):
            return  # a model made before this processor registered; the next one counts on it
        state.barrier.join(version, pid)
        epoch = state.epoch

        def settled(outcome: str) -> None:
            if epoch == state.epoch:
                state.schedule(f"barrier-{version}", 0, lambda: self._on_barrier(version, outcome))

        state.barrier.watch_state(version, settled)

    def _drop_leaving_standbys(self, running: JobModel, model: JobModel) -> None:
        """Before joining the barrier, stop the standbys ``model`` takes away from this
        processor: the epoch in flight finishes with them, so none of their steps still runs
        when the model's new holders start (they may open the same store at this location)."""
        pid = self._state.processor_id
        mine, new = running.containers.get(pid), model.containers.get(pid)
        if mine is None or new is None or not self.working or self.expired:
            return
        kept = {name: task for name, task in mine.tasks.items() if name in new.tasks}
        if len(kept) < len(mine.tasks):
            interim = running.replace(
                containers={**running.containers, pid: mine.replace(tasks=kept)}
            )
            self._state.listener().on_new_job_model(pid, interim)

    def _on_barrier(self, version: str, outcome: str) -> None:
        state = self._state
        if state.scheduler is not None:
            state.scheduler.cancel(f"expire-{version}")  # settled: nothing left to expire
        if outcome == TIMED_OUT:
            self._leadership.barrier_timed_out()
            return
        if outcome != DONE or self._latest is None:
            return
        leading = self._leadership.leading
        if leading:
            state.versions.set_active(version)
        latest_version, model = self._latest
        if latest_version != version:
            return  # a newer version is already on its way
        if leading and state.metadata is not None:
            update_task_assignments(state.metadata, model, write_locality=False)
        self._accept(version, model)

    def _accept(self, version: str, model: JobModel) -> None:
        state = self._state
        pid = state.processor_id
        start = self.expired
        standbys_moved, self._standbys_moved = self._standbys_moved and self.working, False
        if start or standbys_moved:
            self.expired = False
            container = model.containers.get(pid)
            if container is not None:
                location = state.location
                tasks = dict.fromkeys(container.tasks, location)
                state.locality.write(tasks)
                if state.metadata is not None:
                    manager = LocalityManager(state.metadata)
                    manager.write_task_locality(tasks)
                    manager.write_processor_locality({pid: location})
        with state.changed:
            self.model = model
            self.model_version = version
            state.changed.notify_all()
        if start or standbys_moved:
            # Not expired (standbys only): the processor finishes its epoch in flight with the
            # old standbys before this returns (StreamProcessor.on_new_job_model).
            self.working = True
            state.listener().on_new_job_model(pid, model)

    def start_with_active_model(self) -> None:
        """§8.5 step 9: run the last agreed model at once when it is also the latest."""
        versions = self._state.versions
        active = versions.active()
        current, _ = versions.current()
        if active is None or active != current:
            return
        model = versions.read(active)
        self._latest = (active, model)
        self.expired = True
        self._accept(active, model)

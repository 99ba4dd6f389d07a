"""A processor's side of a ZooKeeper version (SAMZA.md §8.5 steps 5–7 and 9).

Every processor reads each new version, stops work only if its own active tasks changed (a
change of standbys alone drops the leaving ones and keeps working), and joins the version's
barrier; on DONE the leader records the version as active and the processors whose work
changed start it and record where their tasks now run.
"""

from __future__ import annotations

from samza_nb.coordination.assignments import LocalityManager, update_task_assignments
from samza_nb.coordination.zk._base import _PROCESSOR_CHANGE, ZkCoordinatorBase
from samza_nb.coordination.zk.barrier import DONE, TIMED_OUT
from samza_nb.coordination.zk.fencing import active_work
from samza_nb.model import JobModel

__all__ = ["ZkAgreement"]


class ZkAgreement(ZkCoordinatorBase):
    """How this processor takes the versions the leader publishes."""

    # -- every processor: new versions and the barrier (§8.5 steps 5–7) ------------------------
    def _on_version_data(self, data: bytes | None, stat: object) -> bool:
        if self._stopped:
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
        self._schedule("version-change", 0, lambda: self._on_version_change(version))
        return True

    def _on_version_change(self, version: str) -> None:
        model = self._versions.read(version)
        self._latest = (version, model)
        pid = self.processor_id
        if self._model is None or active_work(self._model, pid) != active_work(model, pid):
            if self._working and not self._expired:
                self._listener().on_job_model_expired()
                self._working = False
            self._expired = True
        elif self._model.containers.get(pid) != model.containers.get(pid):
            # Placing or moving a standby never expires this processor's active work (issue
            # #15): it keeps running and takes the new standby set when the model is agreed.
            self._standbys_moved = True
            self._drop_leaving_standbys(self._model, model)
        if pid not in self._barrier.expected(version):
            return  # a model made before this processor registered; the next one counts on it
        self._barrier.join(version, pid)
        epoch = self._epoch

        def settled(state: str) -> None:
            if epoch == self._epoch:
                self._schedule(f"barrier-{version}", 0, lambda: self._on_barrier(version, state))

        self._barrier.watch_state(version, settled)

    def _drop_leaving_standbys(self, running: JobModel, model: JobModel) -> None:
        """Before joining the barrier, stop the standbys ``model`` takes away from this
        processor: the epoch in flight finishes with them, so none of their steps still runs
        when the model's new holders start (they may open the same store at this location)."""
        pid = self.processor_id
        mine, new = running.containers.get(pid), model.containers.get(pid)
        if mine is None or new is None or not self._working or self._expired:
            return
        kept = {name: task for name, task in mine.tasks.items() if name in new.tasks}
        if len(kept) < len(mine.tasks):
            interim = running.replace(
                containers={**running.containers, pid: mine.replace(tasks=kept)}
            )
            self._listener().on_new_job_model(pid, interim)

    def _on_barrier(self, version: str, state: str) -> None:
        if self._scheduler is not None:
            self._scheduler.cancel(f"expire-{version}")  # settled: nothing left to expire
        if state == TIMED_OUT:
            if self._leading:
                self._schedule(_PROCESSOR_CHANGE, self.debounce, self._do_on_processor_change)
            return
        if state != DONE or self._latest is None:
            return
        if self._leading:
            self._versions.set_active(version)
        latest_version, model = self._latest
        if latest_version != version:
            return  # a newer version is already on its way
        if self._leading and self._metadata is not None:
            update_task_assignments(self._metadata, model, write_locality=False)
        self._accept(version, model)

    def _accept(self, version: str, model: JobModel) -> None:
        pid = self.processor_id
        start = self._expired
        standbys_moved, self._standbys_moved = self._standbys_moved and self._working, False
        if start or standbys_moved:
            self._expired = False
            container = model.containers.get(pid)
            if container is not None:
                location = self._locations[pid]
                tasks = dict.fromkeys(container.tasks, location)
                self._locality.write(tasks)
                if self._metadata is not None:
                    manager = LocalityManager(self._metadata)
                    manager.write_task_locality(tasks)
                    manager.write_processor_locality({pid: location})
        with self._changed:
            self._model = model
            self._model_version = version
            self._changed.notify_all()
        if start or standbys_moved:
            # Not expired (standbys only): the processor finishes its epoch in flight with the
            # old standbys before this returns (StreamProcessor.on_new_job_model).
            self._working = True
            self._listener().on_new_job_model(pid, model)

    def _start_with_active_model(self) -> None:
        """§8.5 step 9: run the last agreed model at once when it is also the latest."""
        active = self._versions.active()
        current, _ = self._versions.current()
        if active is None or active != current:
            return
        model = self._versions.read(active)
        self._latest = (active, model)
        self._expired = True
        self._accept(active, model)

"""A processor's side of an Azure round (SAMZA.md §10.5 step 4): joining and confirming.

Every ``upgrade.check.interval`` a processor looks for ``START <v>`` of a version other than
its own. Listed in it, it stops its work if its container changed, writes its row in ``v`` and
waits for the barrier: ``END <v>`` confirms the version (heartbeats move to ``v``, older rows
go, task locality is written, the container starts); ``TIMEOUT`` or a newer version gives the
round up. Left out of it, it stops its work and waits to be listed again; listed again after
the leader broke its fencing lease, it takes the lease anew once its work stopped.
"""

from __future__ import annotations

import logging

from samza_nb.coordination.assignments import LocalityManager
from samza_nb.coordination.azure._base import AzureCoordinatorBase
from samza_nb.coordination.azure.blob import BARRIER_END, BARRIER_START, BARRIER_TIMEOUT
from samza_nb.coordination.azure.processors import UNASSIGNED
from samza_nb.model import JobModel

__all__ = ["AzureAgreement"]

_log = logging.getLogger(__name__)


class AzureAgreement(AzureCoordinatorBase):
    """How this processor takes the versions the leader publishes."""

    def _check_upgrade(self) -> None:
        pid = self.processor_id
        if self._pending is not None:
            self._poll_pending()
            return
        barrier = self.blob.read_barrier()
        if barrier is None or barrier[1] == self._version:
            broken = self._broken_fence_lease
            if barrier is not None and broken is not None and broken == self._fence_lease and self._working:
                self._retake_broken_fence(barrier[1])
            return
        if pid not in self.blob.read_processors():
            # A round without this processor (its heartbeats looked stale to the leader): its
            # tasks go to others, so it stops work now and waits to be listed again, whether
            # the round is still open or already ended (a short round may start and end
            # between two looks). Samza's processor keeps running its old model here.
            if self._working:
                _log.warning(
                    "processor %s was left out of version %s: stopping work", pid, barrier[1]
                )
                self._listener().on_job_model_expired()
                self._working = False
                self._expired = True
            return
        if barrier[0] != BARRIER_START:
            return
        bundle = self.blob.read_bundle()
        if bundle is None or bundle.curr_version != barrier[1] or bundle.curr_model is None:
            return
        # Listed again after the leader dropped it (it may have missed the version leaving it
        # out, frozen meanwhile): its work stops and it holds a fencing lease again first.
        if not self._regain_fence_lease():
            return
        # A processor the grouper left without a container joins the barrier and stays idle.
        version, model = barrier[1], bundle.curr_model
        mine_before = self._model.containers.get(pid) if self._model is not None else None
        if self._model is None or mine_before != model.containers.get(pid):
            if self._working:
                self._listener().on_job_model_expired()
                self._working = False
            self._expired = True
        self._write_row(version)
        self._pending = (version, model)
        self._poll_pending()

    def _poll_pending(self) -> None:
        assert self._pending is not None
        version, model = self._pending
        barrier = self.blob.read_barrier()
        if barrier == (BARRIER_END, version):
            self._pending = None
            self._confirm(version, model)
        elif barrier is None or barrier[1] != version:
            self._abandon(version)
        elif barrier[0] == BARRIER_TIMEOUT:
            self._abandon(version)

    def _abandon(self, version: str) -> None:
        _log.info(
            "processor %s gives up version %s (barrier timed out)", self.processor_id, version
        )
        self._pending = None
        self.table.delete(version, self.processor_id)

    def _confirm(self, version: str, model: JobModel) -> None:
        pid = self.processor_id
        previous = self._version
        with self._changed:
            self._version = version  # heartbeats now refresh the row of this version
        for old in {previous or UNASSIGNED, UNASSIGNED}:
            if old != version:
                self.table.delete(old, pid)
        start = self._expired
        container = model.containers.get(pid)
        if start and container is not None and self._metadata is not None:
            manager = LocalityManager(self._metadata)
            manager.write_task_locality(dict.fromkeys(container.tasks, self.location_id))
            manager.write_processor_locality({pid: self.location_id})
        with self._changed:
            self._model = model
            self._model_version = version
            self._changed.notify_all()
        if start:
            self._expired = False
            self._working = True
            self._listener().on_new_job_model(pid, model)

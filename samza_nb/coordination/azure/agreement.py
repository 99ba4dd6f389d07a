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
from collections.abc import Callable

from samza_nb.coordination.assignments import LocalityManager
from samza_nb.coordination.azure.blob import BARRIER_END, BARRIER_START, BARRIER_TIMEOUT
from samza_nb.coordination.azure.fencing import ProcessorFence
from samza_nb.coordination.azure.processors import UNASSIGNED, ProcessorRow
from samza_nb.coordination.azure.state import AzureState
from samza_nb.model import JobModel

__all__ = ["AzureAgreement"]

_log = logging.getLogger(__name__)


class AzureAgreement:
    """How this processor takes the versions the leader publishes; ``taken_over(row)`` stops
    the coordinator when another process took this processor id over."""

    def __init__(
        self, state: AzureState, fence: ProcessorFence, taken_over: Callable[[ProcessorRow], None]
    ) -> None:
        self._state = state
        self._fence = fence
        self._taken_over = taken_over
        self.model: JobModel | None = None
        self.model_version: str | None = None  # the version of model
        self.pending: tuple[str, JobModel] | None = None
        self.working = False
        self.expired = True

    def check_upgrade(self) -> None:
        state = self._state
        pid = state.processor_id
        if self.pending is not None:
            self._poll_pending()
            return
        barrier = state.blob.read_barrier()
        if barrier is None or barrier[1] == state.version:
            broken = self._fence.broken_lease
            if barrier is not None and broken is not None and broken == self._fence.lease and self.working:
                self._retake_broken_fence(barrier[1])
            return
        if pid not in state.blob.read_processors():
            # A round without this processor (its heartbeats looked stale to the leader): its
            # tasks go to others, so it stops work now and waits to be listed again, whether
            # the round is still open or already ended (a short round may start and end
            # between two looks). Samza's processor keeps running its old model here.
            if self.working:
                _log.warning(
                    "processor %s was left out of version %s: stopping work", pid, barrier[1]
                )
                state.listener().on_job_model_expired()
                self.working = False
                self.expired = True
            return
        if barrier[0] != BARRIER_START:
            return
        bundle = state.blob.read_bundle()
        if bundle is None or bundle.curr_version != barrier[1] or bundle.curr_model is None:
            return
        # Listed again after the leader dropped it (it may have missed the version leaving it
        # out, frozen meanwhile): its work stops and it holds a fencing lease again first.
        if not self._regain_fence_lease():
            return
        # A processor the grouper left without a container joins the barrier and stays idle.
        version, model = barrier[1], bundle.curr_model
        mine_before = self.model.containers.get(pid) if self.model is not None else None
        if self.model is None or mine_before != model.containers.get(pid):
            if self.working:
                state.listener().on_job_model_expired()
                self.working = False
            self.expired = True
        state.write_row(version)
        self.pending = (version, model)
        self._poll_pending()

    def _poll_pending(self) -> None:
        assert self.pending is not None
        version, model = self.pending
        barrier = self._state.blob.read_barrier()
        if barrier == (BARRIER_END, version):
            self.pending = None
            self._confirm(version, model)
        elif barrier is None or barrier[1] != version:
            self._abandon(version)
        elif barrier[0] == BARRIER_TIMEOUT:
            self._abandon(version)

    def _abandon(self, version: str) -> None:
        state = self._state
        _log.info("processor %s gives up version %s (barrier timed out)", state.processor_id, version)
        self.pending = None
        state.table.delete(version, state.processor_id)

    def _confirm(self, version: str, model: JobModel) -> None:
        state = self._state
        pid = state.processor_id
        previous = state.version
        with state.changed:
            state.version = version  # heartbeats now refresh the row of this version
        for old in {previous or UNASSIGNED, UNASSIGNED}:
            if old != version:
                state.table.delete(old, pid)
        start = self.expired
        container = model.containers.get(pid)
        if start and container is not None and state.metadata is not None:
            manager = LocalityManager(state.metadata)
            manager.write_task_locality(dict.fromkeys(container.tasks, state.location_id))
            manager.write_processor_locality({pid: state.location_id})
        with state.changed:
            self.model = model
            self.model_version = version
            state.changed.notify_all()
        if start:
            self.expired = False
            self.working = True
            state.listener().on_new_job_model(pid, model)

    # -- the fencing lease, broken by a leader ---------------------------------------------------
    def _retake_broken_fence(self, version: str) -> None:
        """The leader breaks a processor's fencing lease after publishing a version without it,
        so a broken lease while this processor is still listed in the version it works on is
        a late break: a leader that froze between the two, which another one has replaced
        since (and which listed this processor again). Nothing would ever take the lease back,
        and every commit of this processor would be refused: it stops its work (the epoch in
        flight ends, fenced), takes the lease anew and, still listed in that version, starts
        the work again from the committed checkpoints."""
        state, fence = self._state, self._fence
        pid = state.processor_id
        if fence.renewed() or pid not in state.blob.read_processors():
            return  # held after all, or dropped: the version without it stops its work
        others = fence.others_rows()
        if others:
            self._taken_over(others[0])
            return
        _log.warning(
            "processor %s: its fencing lease was broken while it is listed in version %s of %s "
            "(a late break by a former leader): it stops its work, takes the lease anew and "
            "starts again", pid, version, state.names.container,
        )
        state.listener().on_job_model_expired()
        self.working = False
        self.expired = True
        if state.stopped:
            return
        fence.take()
        # Taken after the check above: a round that drops it from now on breaks the new lease.
        barrier = state.blob.read_barrier()
        if barrier is None or barrier[1] != version or pid not in state.blob.read_processors():
            return  # a newer version: it joins that one as usual
        model = self.model
        if model is None:
            return
        self.expired = False
        self.working = True
        state.listener().on_new_job_model(pid, model)

    def _regain_fence_lease(self) -> bool:
        """Whether this processor holds its fencing lease and may join a version that lists
        it. The leader broke the lease when it dropped the processor (its heartbeats looked
        stale: frozen, cut off), so every commit since is refused. Listed again, it stops the
        work of the old model (the epoch in flight ends first; its commit was fenced) and
        takes the lease anew: only work on the new version commits with it. A lease another
        incarnation took is not regained: this coordinator stops. A storage error leaves the
        round for the next look."""
        from azure.core.exceptions import AzureError

        state, fence = self._state, self._fence
        if fence.lease is None or state.stopped:
            return False
        try:
            if fence.renewed():
                return True
        except AzureError as error:
            _log.warning("processor %s: renewing its fencing lease failed: %s", state.processor_id, error)
            return False
        others = fence.others_rows()
        if others:
            self._taken_over(others[0])
            return False
        if self.working:
            state.listener().on_job_model_expired()
            self.working = False
        self.expired = True
        if state.stopped:  # stopped while its epoch in flight ended: no lease left behind
            return False
        fence.take()
        _log.warning(
            "processor %s was dropped by the leader of %s and is listed again: its work stopped "
            "and it took its fencing lease anew", state.processor_id, state.names.container,
        )
        return True

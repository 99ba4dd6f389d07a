"""Fencing a processor's commits (issue #14): its session, and the job model it works on.

A commit written as ``ZkMetadataStore.put_all(entries, guard=coordinator.fence)`` checks in
the same transaction that this processor's ephemeral node still exists and that no job model
moving its active tasks was activated since the model it works on.
"""

from __future__ import annotations

from typing import Any

from samza_nb.coordination.zk.agreement import ZkAgreement, active_work
from samza_nb.coordination.zk.state import ZkState
from samza_nb.errors import CoordinationError, JobLeaseError
from samza_nb.model import JobModel

__all__ = ["ZkCommitFencing"]


class ZkCommitFencing:
    """The ``fence`` guard of this processor's commits."""

    def __init__(self, state: ZkState, agreement: ZkAgreement) -> None:
        self._state = state
        self._agreement = agreement
        #: (active version, this processor's version) → the first version between them that
        #: moved this processor's work, or None (its commits go on).
        self._moves: dict[tuple[str, str], str | None] = {}

    def fence(self, tx: Any) -> None:
        """Add to a kazoo transaction the check that this processor's session is still live.

        The processor's ephemeral node exists only while the session that registered it does;
        a process frozen past its session timeout resumes without it, so a commit written as
        ``ZkMetadataStore.put_all(entries, guard=coordinator.fence)`` fails with
        :class:`~samza_nb.errors.JobLeaseError` and writes nothing.
        """
        state = self._state
        node = state.node
        if node is None or state.stopped:
            msg = (
                f"processor {state.processor_id!r} has no live ZooKeeper session under "
                f"{state.keys.root}: its commits are fenced"
            )
            raise JobLeaseError(msg)
        tx.check(state.keys.processor(node), 0)
        self._fence_model_version(tx)

    def _first_move(self, running: JobModel, version: int, active: int) -> str | None:
        """The first model published after ``version`` up to ``active`` that does not give
        this processor the location and active tasks it has in ``running`` (None: none).

        Every one, not only the active one: a processor frozen past its session loses its
        tasks in the next model and, once it rejoined, gets them back by host affinity in
        the one after. Comparing only the ends would let its stale epoch commit over the work
        another processor did on those tasks in between. A model cleaned up since counts as
        a move (it is far older than the active one)."""
        pid = self._state.processor_id
        mine = active_work(running, pid)
        for between in range(version + 1, active + 1):
            try:
                model = self._state.versions.read(str(between))
            except CoordinationError:
                return str(between)
            if active_work(model, pid) != mine:
                return str(between)
        return None

    def _fence_model_version(self, tx: Any) -> None:
        """Add the check that no job model moving this processor's active tasks was activated
        since the model it works on (issue #14: commits checked against the model version).

        Why not "activeJobModelVersion == my version": processors whose assignment did not
        change keep working through a rebalance (SAMZA.md §8.5 step 7) and learn of the new
        version only after the leader wrote it as active, so their commits in between would
        be refused, and a processor whose tasks did move starts on DONE, possibly before the
        leader wrote the new version as active. So a commit is allowed when the active
        version is not newer than this processor's model, or when every model published since
        gives this processor the same location and active tasks (standby moves included);
        otherwise it is refused here. The transaction then checks the active version node's
        stat version as read, so an activation between this read and the commit fails the
        write (the store builds the transaction once more, and this check reads the new
        active version).
        """
        state = self._state
        assert state.zk is not None
        with state.changed:
            running, version = self._agreement.model, self._agreement.model_version
        found = state.zk.get(state.keys.active_job_model_version)
        if found is None:
            return  # no tree yet (the leader creates it before the first model)
        active = found[0].decode("utf-8", "replace").strip()
        if running is None or version is None:
            msg = (
                f"processor {state.processor_id!r} works on no agreed job model under "
                f"{state.keys.root}: its commits are fenced"
            )
            raise JobLeaseError(msg)
        if active and active.isdigit() and version.isdigit() and int(active) > int(version):
            if (active, version) not in self._moves:
                self._moves[(active, version)] = self._first_move(running, int(version), int(active))
            moved = self._moves[(active, version)]
            if moved is not None:
                msg = (
                    f"processor {state.processor_id!r} works on job model version {version}, but "
                    f"version {moved} moved its tasks (version {active} is active under "
                    f"{state.keys.root}): its commits are fenced"
                )
                raise JobLeaseError(msg)
        tx.check(state.keys.active_job_model_version, found[1].version)

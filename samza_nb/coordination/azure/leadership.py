"""The leader's side of the Azure protocol (SAMZA.md §10.5 steps 2–3).

The holder of the page blob's lease renews it (a failed renewal demotes), watches the live
processors of the table, publishes the next version's model for them once membership has been
quiet for ``job.debounce.time.ms``, breaks the fencing lease of processors it dropped, and
ends each round's barrier (``END <v>``) or times it out (``TIMEOUT <v>``, then a new round).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from samza_nb.coordination.assignments import LocalityManager, update_task_assignments
from samza_nb.coordination.azure.blob import (
    BARRIER_END,
    BARRIER_START,
    BARRIER_TIMEOUT,
    JobModelBundle,
    LeaseLost,
)
from samza_nb.coordination.azure.lock import AzureLock
from samza_nb.coordination.azure.names import AzureNames
from samza_nb.coordination.azure.state import AzureState
from samza_nb.coordination.job_model_calculator import JobModelCalculator
from samza_nb.coordination.store_locality import StoreLocality
from samza_nb.errors import CoordinationError, MetadataStoreError
from samza_nb.grouping import GrouperMetadata
from samza_nb.metadata.azure_storage import describe_error
from samza_nb.model import JobModel

__all__ = ["STREAMS_LOCK_ID", "AzureLeadership"]

#: The lock a leader holds while it creates the job's streams (blob ``locks/createStreams``).
STREAMS_LOCK_ID = "createStreams"

_log = logging.getLogger(__name__)
#: Tries of breaking a dropped processor's fencing lease when Azure answers with an error.
_BREAK_TRIES = 3


@dataclass
class _Round:
    """The leader's barrier of one version."""

    version: str
    model: JobModel
    started: float
    #: (processor id, incarnation) of the participants.
    members: frozenset[tuple[str, str]]

    @property
    def participants(self) -> frozenset[str]:
        """The participants' processor ids."""
        return frozenset(pid for pid, _ in self.members)


class AzureLeadership:
    """Taking, renewing and losing the leader's lease, and the rounds a leader runs.

    ``lock(lock_id, timeout=...)`` gives a lock of the job (the streams are created under one);
    ``before_first_publish(model)`` runs once, before this leader's first model."""

    def __init__(
        self,
        state: AzureState,
        calculator: JobModelCalculator,
        *,
        lock: Callable[..., AzureLock],
        before_first_publish: Callable[[JobModel], None] | None,
    ) -> None:
        self._state = state
        self.calculator = calculator
        self._lock = lock
        self._before_first_publish = before_first_publish
        self.lease_id: str | None = None
        self._renewed_at = 0.0
        self._round: _Round | None = None
        self._needs_round = False
        #: The live (processor id, incarnation) pairs the leader saw last, and published last.
        self._seen_live: frozenset[tuple[str, str]] | None = None
        self._published_members: frozenset[tuple[str, str]] | None = None
        self._seen_at = 0.0  # when it last changed

    def renewal_due_in(self) -> float | None:
        """Seconds until the leader's lease is to be renewed (None: not leading)."""
        if not self._state.leading:
            return None
        return self._renewed_at + self._state.timings.lease_renew - time.monotonic()

    def check_leader(self) -> None:
        state = self._state
        if state.leading:
            return
        lease = state.blob.acquire_lease(state.timings.lease_duration)
        if lease is None:
            return
        with state.lock:
            self.lease_id = lease
            self._renewed_at = time.monotonic()
            state.leading = True
            self._needs_round = True  # after the debounce (processors starting together)
            self._seen_live = None
        _log.info("processor %s leads %s", state.processor_id, state.names.container)
        state.heartbeat()

    def check_membership(self) -> None:
        state = self._state
        if not state.leading:
            return
        # Processors by id *and* incarnation: one restarted under its id is a change too (the
        # new process waits for a version that lists it; the ids alone would not change).
        live = frozenset((row.processor_id, row.incarnation) for row in state.table.live(state.timings.liveness))
        now = time.monotonic()
        if live != self._seen_live:
            self._seen_live, self._seen_at = live, now
        if now - self._seen_at < state.settings.debounce:
            return  # membership still settling: one round once it is quiet
        current = self._round
        if current is not None and current.members == live:
            return
        if (
            self._needs_round
            or live != self._published_members
            or {pid for pid, _ in live} != set(state.blob.read_processors())
        ):
            self._new_round()

    def _new_round(self) -> None:
        """The leader's doOnProcessorChange: the next version for the live processors."""
        state = self._state
        rows = state.table.live(state.timings.liveness)
        processors = {row.processor_id: row.location_id or "unknown" for row in rows}
        members = frozenset((row.processor_id, row.incarnation) for row in rows)
        if not processors:
            return
        bundle = state.blob.read_bundle()
        barrier = state.blob.read_barrier()
        lease = self.lease_id
        published_version = bundle.curr_version if bundle is not None else None
        if barrier is not None and barrier[0] == BARRIER_START:
            # The previous round never finished: close it before the next one.
            state.blob.publish_barrier(BARRIER_TIMEOUT, barrier[1], lease)
        numbers = [
            int(v)
            for v in (published_version, barrier[1] if barrier else None)
            if v and v.isdigit()
        ]
        version = str(max(numbers) + 1) if numbers else "1"
        previous = bundle.curr_model if bundle is not None else None
        task_locality = (
            LocalityManager(state.metadata).read_task_locality()
            if state.metadata is not None
            else {}
        )
        # Where this deployment's processors reported the tasks' stores (the leader carries the
        # deployment's run id once it adopted one; host affinity holds within a run id).
        stores = (
            StoreLocality(state.metadata).read(state.run_id)
            if state.metadata is not None and state.run_id
            else None
        )
        metadata = GrouperMetadata.from_job_model(previous, processors, task_locality or None, stores)
        model = self.calculator.calculate(processors, metadata, previous)
        if self._before_first_publish is not None:
            setup, self._before_first_publish = self._before_first_publish, None
            # Under the createStreams lock: a leader that took over from one that froze
            # mid-creation waits until that one's lock lease has run out.
            with self._lock(STREAMS_LOCK_ID, timeout=2 * state.timings.lease_duration + 10):
                setup(model)
        dropped = set(state.blob.read_processors()) - set(processors)
        state.blob.publish_bundle(JobModelBundle(previous, model, published_version, version), lease)
        state.blob.publish_barrier(BARRIER_START, version, lease)
        state.blob.publish_processors(sorted(processors), lease)
        for processor_id in dropped:
            self.break_fence(processor_id)
        with state.lock:
            self._round = _Round(version, model, time.monotonic(), members)
            self._published_members = members
            self._needs_round = False
        _log.info(
            "leader %s published job model version %s for %s",
            state.processor_id,
            version,
            sorted(processors),
        )

    def check_barrier(self) -> None:
        state = self._state
        current = self._round
        if current is None or not state.leading:
            return
        joined = {row.processor_id for row in state.table.rows() if row.version == current.version}
        if current.participants <= joined:
            state.blob.publish_barrier(BARRIER_END, current.version, self.lease_id)
            if state.metadata is not None:
                update_task_assignments(state.metadata, current.model, write_locality=False)
            self._round = None
        elif time.monotonic() - current.started > state.timings.barrier_timeout:
            _log.warning(
                "barrier of job model version %s timed out: %s never joined",
                current.version,
                sorted(current.participants - joined),
            )
            state.blob.publish_barrier(BARRIER_TIMEOUT, current.version, self.lease_id)
            with state.lock:
                self._round = None
                self._needs_round = True

    def renew(self) -> None:
        lease = self.lease_id
        if lease is None:
            return
        try:
            self._state.blob.renew_lease(lease)
            self._renewed_at = time.monotonic()
        except (LeaseLost, ValueError) as error:  # ValueError: the clients were closed
            _log.warning("processor %s lost the leader's lease: %s", self._state.processor_id, error)
            self.demote()

    def demote(self) -> None:
        state = self._state
        with state.lock:
            was = state.leading
            state.leading = False
            self.lease_id = None
            self._round = None
        if was:
            try:
                state.heartbeat()  # isLeader=false
            except CoordinationError as error:  # the next heartbeat says it again
                _log.info("processor %s: its heartbeat after losing the lead failed: %s", state.processor_id, error)

    def give_up(self) -> str | None:
        """No longer leader (the coordinator stops); returns the lease to release, if held."""
        with self._state.lock:
            lease, self.lease_id = self.lease_id, None
            self._state.leading = False
        return lease

    def break_fence(self, processor_id: str) -> None:
        """Fence out a processor the published version dropped: break its fencing lease and
        revoke the token its commits carry (if it is still the one read before the break; a
        token registered since comes with a lease taken after it), so its next commit is
        refused in the same conditional write. No blob (404) or no lease (409: it left
        cleanly) is nothing to break; another error is retried a few times, then logged (the
        processor's commits stay conditional on the versions it read, and it drops its tasks
        once it reads the version)."""
        from azure.core.exceptions import AzureError
        from azure.storage.blob import BlobLeaseClient

        state = self._state
        store = state.fenced_store()
        token = store.fence_token(processor_id) if store is not None else None
        blob = state.container.get_blob_client(AzureNames.processor_blob(processor_id))
        for attempt in range(1, _BREAK_TRIES + 1):
            try:
                BlobLeaseClient(blob).break_lease(lease_break_period=0)
                _log.info("leader %s fenced processor %s", state.processor_id, processor_id)
                break
            except AzureError as error:
                if getattr(error, "status_code", None) in (404, 409):
                    break
                if attempt == _BREAK_TRIES:
                    _log.warning(
                        "leader %s could not break the fencing lease of processor %s (%d tries): %s",
                        state.processor_id, processor_id, attempt, describe_error(error),
                    )
                    break
                time.sleep(0.2 * attempt)
        if store is not None and token is not None:
            try:
                store.revoke_fence(processor_id, token)
            except MetadataStoreError as error:  # as a failed break: its versions still guard
                _log.warning(
                    "leader %s could not revoke the fencing token of processor %s: %s",
                    state.processor_id, processor_id, error,
                )

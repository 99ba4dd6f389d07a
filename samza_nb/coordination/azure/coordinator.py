"""AzureJobCoordinator: one processor of a standalone job, coordinated through Azure Storage.

SAMZA.md §10.5, with Samza's two bugs fixed (the leader groups over the live processor ids,
with their locations and the task locality of the metadata store; no trimming loop):

1. **start**: a row ``UNASSIGNED``/pid in the processor table; a fencing lease on the blob
   ``processors/<pid>``; heartbeats; an attempt to lead. Rows carry the process's incarnation.
   While another process heartbeats under the same id, the start waits for it to leave (a
   rolling restart) or go stale (a processor restarted under its id after a crash), and fails
   as a duplicate after twice the liveness timeout (as on ZooKeeper). The fencing lease
   decides who owns an id: a process whose lease another incarnation took stops at its next
   heartbeat.
2. **leader** (holder of the page blob's lease, renewed every ``lease.renew.interval``; a failed
   renewal demotes): every ``membership.check.interval`` it compares the live processors of the
   table with the list on the blob; a difference (or a barrier that timed out, or having just
   become leader) starts a round once the live set has not changed for ``job.debounce.time.ms``
   (as the ZooKeeper leader does; Samza's Azure leader publishes at once, so processors started
   together first run a model of whoever was first, then rebalance):
   the next version's model (grouped over the live processors), then ``START <v>``, then the
   processor list, every write under its lease. Processors it dropped lose their fencing lease
   (the leader breaks it), so a frozen one that wakes up cannot commit; listed again, such a
   processor stops its old work and takes its lease anew before it joins the version.
3. **barrier**: the leader publishes ``END <v>`` once every listed processor has a row in
   partition ``v``, or ``TIMEOUT <v>`` after ``barrier.timeout``; a timed-out round is followed
   by a new one.
4. **every processor** (``upgrade.check.interval``): listed, a version other than its own and
   ``START <v>`` → it stops its work if its container changed, writes its row in ``v`` and waits
   for the barrier: ``END <v>`` → it confirms (its heartbeats move to ``v``, older rows go, task
   locality is written) and starts its container; ``TIMEOUT`` or a newer version → it gives the
   round up.
5. every processor checks every ``leader.check.interval`` that the lease is held, and takes it
   when it is not.

Threading: protocol steps and listener calls run on the coordinator's thread
(``samza_nb-azure-<pid>``); heartbeats and lease renewals on a second one, so a listener that
blocks (the epoch in flight committing) never delays a heartbeat. :meth:`stop` calls
``on_job_model_expired`` and ``on_coordinator_stop`` on the thread that calls it.

This module holds the threads, the storage set-up and stopping, and composes the parts: the
leader's side (``leadership``), a processor's side of a round (``agreement``) and its fencing
lease (``fencing``), around the state they share (``state``); the intervals are in ``timings``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from samza_nb.config import Config
from samza_nb.coordination.agreed_model import AgreedModelCoordinator
from samza_nb.coordination.azure.agreement import AzureAgreement
from samza_nb.coordination.azure.blob import CoordinationBlob, LeaseLost
from samza_nb.coordination.azure.fencing import ProcessorFence
from samza_nb.coordination.azure.leadership import STREAMS_LOCK_ID, AzureLeadership
from samza_nb.coordination.azure.lock import AzureLock
from samza_nb.coordination.azure.processors import UNASSIGNED, ProcessorRow, ProcessorTable
from samza_nb.coordination.azure.run_id import AzureRunIdGenerator
from samza_nb.coordination.azure.state import AzureSettings, AzureState
from samza_nb.coordination.azure.timings import AzureTimings
from samza_nb.coordination.job_model_calculator import JobModelCalculator
from samza_nb.errors import CoordinationError
from samza_nb.metadata import MetadataStore
from samza_nb.metadata.azure import AzureWriteGuard
from samza_nb.metadata.azure_storage import describe_error
from samza_nb.model import JobModel, LocationId

__all__ = ["STREAMS_LOCK_ID", "AzureJobCoordinator", "AzureTimings"]

_log = logging.getLogger(__name__)


class AzureJobCoordinator(AgreedModelCoordinator):
    """Coordinates the one processor attached to it with the job's other processors.

    ``calculator`` computes models (the leader's), ``config`` gives ``azure.storage.*`` and the
    ``job.coordinator.azure.*`` timings (default: the calculator's config); ``metadata`` (the
    job's metadata store) receives assignments and locality and gives the leader task
    locality; ``before_first_publish(model)`` runs once in a leader before its first model,
    under the :data:`STREAMS_LOCK_ID` :class:`AzureLock` (the runtime creates the job's streams
    there, so only a leader creates them).
    """

    name = "azure"
    _service = "Azure"
    _agreed_as = "confirmed"

    def __init__(
        self,
        calculator: JobModelCalculator,
        config: Config | Mapping[str, Any] | None = None,
        *,
        metadata: MetadataStore | None = None,
        connect: str | None = None,
        before_first_publish: Callable[[JobModel], None] | None = None,
    ) -> None:
        super().__init__()
        self.config = calculator.inputs.config if config is None else Config.of(config)
        self.settings = AzureSettings(self.config, connect)
        self.account = self.settings.account
        self.names = self.settings.names
        self.timings = self.settings.timings
        self._state = AzureState(
            self.settings,
            metadata=metadata,
            processor_id=lambda: self.processor_id,
            locations=self._locations,
            listener=self._listener,
        )
        self._fence = ProcessorFence(self._state, lambda: repr(self))
        self._leadership = AzureLeadership(
            self._state, calculator, lock=self.lock, before_first_publish=before_first_publish
        )
        self._agreement = AzureAgreement(self._state, self._fence, self._stop_taken_over)
        self._threads: list[threading.Thread] = []
        self._services: list[Any] = []

    def __repr__(self) -> str:
        pid = next(iter(self._listeners), None)
        return (
            f"AzureJobCoordinator({self.account.description!r}, {self.names.container!r}, "
            f"processor={pid!r}, leader={self._state.leading}, version={self._state.version})"
        )

    # -- the contract (AgreedModelCoordinator) -------------------------------------------------
    @property
    def _changed(self) -> Any:  # type: ignore[override]
        return self._state.changed

    @property
    def _model(self) -> JobModel | None:  # type: ignore[override]
        return self._agreement.model

    @property
    def _model_version(self) -> str | None:  # type: ignore[override]
        return self._agreement.model_version

    @property
    def _leading(self) -> bool:  # type: ignore[override]
        return self._state.leading

    @property
    def _stopped(self) -> bool:  # type: ignore[override]
        return self._state.stopped

    @property
    def _calculator(self) -> JobModelCalculator:  # type: ignore[override]
        return self._leadership.calculator

    def _check_processor(self, processor_id: str, location_id: LocationId) -> None:
        if not processor_id or not isinstance(processor_id, str):
            msg = f"an Azure processor needs a non-empty processor id, got {processor_id!r}"
            raise CoordinationError(msg)

    def _coordination_place(self) -> str:
        return f"in {self.names.container}"

    @property
    def location_id(self) -> LocationId:
        return self._state.location_id

    @property
    def stopped(self) -> bool:
        return self._state.stopped

    @property
    def blob(self) -> CoordinationBlob:
        """The coordination page blob (after :meth:`start`)."""
        return self._state.blob

    @property
    def table(self) -> ProcessorTable:
        """The processor table (after :meth:`start`)."""
        return self._state.table

    @property
    def container(self) -> Any:
        """The job's coordination container (after :meth:`start`)."""
        return self._state.container

    def start(self) -> None:
        """Join: row, fencing lease, heartbeats and the protocol thread (returns at once; the
        listener gets the first model on the coordinator thread)."""
        pid = self.processor_id
        state = self._state
        try:
            blobs = self.account.blob_service()
            self._services.append(blobs)
            state.container = blobs.get_container_client(self.names.container)
            self._ensure_container()
            state.blob = CoordinationBlob(
                state.container.get_blob_client(self.names.blob), self.settings.blob_length
            )
            state.blob.ensure()
            tables = self.account.table_service()
            self._services.append(tables)
            state.table = ProcessorTable(tables.get_table_client(self.names.table))
            state.table.ensure()
            self._fence.wait_out_predecessor()
            self._fence.take()
            state.heartbeat()
        except BaseException:
            state.stopped = True
            self._close()
            raise
        for name, target in (
            (f"samza_nb-azure-{pid}", self._run),
            (f"samza_nb-azure-hb-{pid}", self._beat),
        ):
            thread = threading.Thread(target=target, name=name, daemon=True)
            self._threads.append(thread)
            thread.start()

    def stop(self) -> None:
        self._stop(None)

    # -- fencing, locks and the run id ---------------------------------------------------------
    def fence(self, guard: AzureWriteGuard) -> None:
        """Ask a guarded ``AzureBlobMetadataStore.put_all`` to check this processor's fencing
        lease before writing: once the leader dropped this processor (it stopped heartbeating)
        and broke the lease, its commits raise :class:`~samza_nb.errors.JobLeaseError`."""
        self._fence.check(guard)

    def lock(self, lock_id: str, *, timeout: float = 60.0) -> AzureLock:
        """A lock of this job (call after :meth:`start`)."""
        return AzureLock(
            self._state.container, lock_id, timeout=timeout, lease_duration=self.timings.lease_duration
        )

    def run_id_generator(self, store: MetadataStore) -> AzureRunIdGenerator:
        """The deployment's run id, agreed under a lock (call after :meth:`start`)."""
        return AzureRunIdGenerator(
            self._state.container,
            self._state.table,
            store,
            self.processor_id,
            freshness=self.timings.liveness,
            adopt=self._adopt_run_id,
            lease_duration=self.timings.lease_duration,
        )

    def _adopt_run_id(self, run_id: str) -> None:
        self._state.run_id = run_id
        self._state.heartbeat()

    # -- storage set-up ------------------------------------------------------------------------
    def _ensure_container(self) -> None:
        from azure.core.exceptions import AzureError, ResourceExistsError

        try:
            self._state.container.create_container()
        except ResourceExistsError:
            pass
        except AzureError as error:
            msg = f"{self!r}: cannot create the container: {describe_error(error)}"
            raise CoordinationError(msg) from error

    # -- heartbeats and lease renewal (their own thread) ---------------------------------------
    def _beat(self) -> None:
        state, leadership = self._state, self._leadership
        next_beat = time.monotonic() + self.timings.heartbeat
        while not state.stopped:
            now = time.monotonic()
            due = leadership.renewal_due_in()
            if due is not None and due <= 0:
                leadership.renew()
            if now >= next_beat:
                next_beat = now + self.timings.heartbeat
                # Before the heartbeat: a process that took the id over may share this one's
                # row (both UNASSIGNED), which this heartbeat would overwrite.
                if self._stop_if_taken_over():
                    return
                try:
                    state.heartbeat()
                except Exception as error:  # noqa: BLE001 - Samza only logs a failed heartbeat
                    if state.stopped:
                        return  # the clients were closed under a call in flight
                    _log.warning("heartbeat of %s failed: %s", self.processor_id, error)
            pause = next_beat - time.monotonic()
            due = leadership.renewal_due_in()
            if due is not None:
                pause = min(pause, due)
            state.wake.wait(max(0.01, pause))

    def _stop_if_taken_over(self) -> bool:
        """Stop this coordinator when another process took its processor id over; True then."""
        try:
            newer = self._fence.taken_over_by()
        except Exception as error:  # noqa: BLE001 - asked again at the next heartbeat
            if not self._state.stopped:
                _log.warning("processor %s: checking its fencing lease failed: %s", self.processor_id, error)
            return False
        if newer is None:
            return False
        self._stop_taken_over(newer)
        return True

    def _stop_taken_over(self, newer: ProcessorRow) -> None:
        msg = (
            f"processor {self.processor_id!r} was taken over in {self.names.container} by another "
            f"process with the same processor.id (on {newer.location_id or 'unknown'}), which "
            "holds its fencing lease now: this one stops"
        )
        self._stop(CoordinationError(msg))

    # -- the protocol thread -------------------------------------------------------------------
    def _run(self) -> None:
        leadership = self._leadership
        due = dict.fromkeys(("leader", "membership", "barrier", "upgrade"), 0.0)
        intervals = {
            "leader": self.timings.leader_check,
            "membership": self.timings.membership_check,
            "barrier": self.timings.barrier_check,
            "upgrade": self.timings.upgrade_check,
        }
        steps = {
            "leader": leadership.check_leader,
            "membership": leadership.check_membership,
            "barrier": leadership.check_barrier,
            "upgrade": self._agreement.check_upgrade,
        }
        state = self._state
        while not state.stopped:
            for name, step in steps.items():
                if state.stopped or time.monotonic() < due[name]:
                    continue
                due[name] = time.monotonic() + intervals[name]
                try:
                    step()
                except LeaseLost as error:
                    _log.warning("processor %s stops leading: %s", self.processor_id, error)
                    leadership.demote()
                except Exception as error:  # noqa: BLE001 - any failure stops the coordinator
                    msg = (
                        f"the Azure coordinator of processor {self.processor_id!r} "
                        f"({self.account.description}, {self.names.container}) stopped: {error}"
                    )
                    failure = CoordinationError(msg)
                    failure.__cause__ = error
                    self._stop(failure)
                    return
            time.sleep(self.timings.tick)

    # -- stopping ------------------------------------------------------------------------------
    def _stop(self, error: BaseException | None) -> None:
        state, agreement = self._state, self._agreement
        with state.changed:
            if state.stopped:
                return
            state.stopped = True
            state.changed.notify_all()
        state.wake.set()
        failure = error
        me = threading.current_thread()
        for thread in self._threads:
            if thread is not me:
                thread.join(self.account.timeout * self.account.retry_attempts + 5)
        try:
            if agreement.working and self._listeners:
                self._listener().on_job_model_expired()
            agreement.working = False
        except Exception as exc:  # noqa: BLE001 - report it, and still leave the group
            failure = failure or exc
        if error is None:
            self._leave()
        lease = self._leadership.give_up()
        if error is None and lease is not None:
            state.blob.release_lease(lease)
        self._close()
        if error is not None:
            _log.error(
                "Azure coordinator of %s failed: %s",
                self.processor_id if self._listeners else "?",
                error,
            )
        self._tell_stopped(failure)

    def _leave(self) -> None:
        """Remove this processor's rows and give its fencing lease up (a graceful stop)."""
        from azure.core.exceptions import AzureError

        state = self._state
        if not hasattr(state, "table"):
            return
        try:
            for version in {state.version or UNASSIGNED, UNASSIGNED}:
                state.table.delete(version, self.processor_id)
            pending = self._agreement.pending
            if pending is not None:
                state.table.delete(pending[0], self.processor_id)
            self._fence.give_up()
        except (AzureError, CoordinationError) as error:
            _log.warning(
                "processor %s left %s uncleanly: %s", self.processor_id, self.names.container, error
            )
        self._fence.lease = None

    def _close(self) -> None:
        for service in self._services:
            try:
                service.close()
            except Exception:  # noqa: BLE001, S110 - closing is best effort
                pass
        self._services.clear()

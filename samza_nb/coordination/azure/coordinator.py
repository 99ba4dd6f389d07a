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

This module holds the threads, the storage set-up, fencing and stopping; the leader's side
lives in ``leadership``, a processor's side of a round in ``agreement``, the state they share
in ``_base`` and the intervals in ``timings``.
"""

from __future__ import annotations

import logging
import threading
import time

from samza_nb.coordination.azure.agreement import AzureAgreement
from samza_nb.coordination.azure.blob import CoordinationBlob, LeaseLost
from samza_nb.coordination.azure.fencing import (
    fence_lease_renewed,
    keep_fence_registered,
    take_fence_lease,
)
from samza_nb.coordination.azure.leadership import STREAMS_LOCK_ID, AzureLeadership
from samza_nb.coordination.azure.lock import AzureLock
from samza_nb.coordination.azure.names import AzureNames
from samza_nb.coordination.azure.processors import UNASSIGNED, ProcessorRow, ProcessorTable
from samza_nb.coordination.azure.run_id import AzureRunIdGenerator
from samza_nb.coordination.azure.timings import AzureTimings
from samza_nb.errors import CoordinationError, JobLeaseError
from samza_nb.metadata import MetadataStore
from samza_nb.metadata.azure import AzureWriteGuard
from samza_nb.metadata.azure_storage import describe_error

__all__ = ["STREAMS_LOCK_ID", "AzureJobCoordinator", "AzureTimings"]

_log = logging.getLogger(__name__)


class AzureJobCoordinator(AzureLeadership, AzureAgreement):
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
    _agreement = "confirmed"

    def start(self) -> None:
        """Join: row, fencing lease, heartbeats and the protocol thread (returns at once; the
        listener gets the first model on the coordinator thread)."""
        pid = self.processor_id
        try:
            blobs = self.account.blob_service()
            self._services.append(blobs)
            self.container = blobs.get_container_client(self.names.container)
            self._ensure_container()
            self.blob = CoordinationBlob(
                self.container.get_blob_client(self.names.blob), self.blob_length
            )
            self.blob.ensure()
            tables = self.account.table_service()
            self._services.append(tables)
            self.table = ProcessorTable(tables.get_table_client(self.names.table))
            self.table.ensure()
            self._wait_out_predecessor()
            self._fence_blob = self.container.get_blob_client(AzureNames.processor_blob(pid))
            self._fence_lease = self._take_fence_lease()
            self._heartbeat()
        except BaseException:
            self._stopped = True
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
        if self._stopped or self._fence_lease is None:
            msg = f"processor {self.processor_id!r} has left {self.names.container}: its commits are fenced"
            raise JobLeaseError(msg)
        if not isinstance(guard, AzureWriteGuard):
            msg = (
                "the Azure coordinator fences writes of the Azure metadata store only "
                "(metadata.store.factory=azure)"
            )
            raise CoordinationError(msg)
        guard.require_token(self.processor_id, self._fence_lease, f"processor {self.processor_id!r}")

    def lock(self, lock_id: str, *, timeout: float = 60.0) -> AzureLock:
        """A lock of this job (call after :meth:`start`)."""
        return AzureLock(
            self.container, lock_id, timeout=timeout, lease_duration=self.timings.lease_duration
        )

    def run_id_generator(self, store: MetadataStore) -> AzureRunIdGenerator:
        """The deployment's run id, agreed under a lock (call after :meth:`start`)."""
        return AzureRunIdGenerator(
            self.container,
            self.table,
            store,
            self.processor_id,
            freshness=self.timings.liveness,
            adopt=self._adopt_run_id,
            lease_duration=self.timings.lease_duration,
        )

    def _adopt_run_id(self, run_id: str) -> None:
        self._run_id = run_id
        self._heartbeat()

    # -- storage set-up ------------------------------------------------------------------------
    def _ensure_container(self) -> None:
        from azure.core.exceptions import AzureError, ResourceExistsError

        try:
            self.container.create_container()
        except ResourceExistsError:
            pass
        except AzureError as error:
            msg = f"{self!r}: cannot create the container: {describe_error(error)}"
            raise CoordinationError(msg) from error

    def _take_fence_lease(self) -> str:
        return take_fence_lease(self._fence_blob, self._fenced_store(), self.processor_id, repr(self))

    # -- one process per processor id -------------------------------------------------------
    def _others_rows(self) -> list[ProcessorRow]:
        """Fresh rows of this processor id written by another incarnation, newest first."""
        rows = [row for row in self.table.rows(self.processor_id) if row.incarnation != self._incarnation]
        now = self.table.server_now() if rows else None
        rows = [row for row in rows if now is not None and row.age(now) <= self.timings.liveness]
        return sorted(rows, key=lambda row: row.timestamp, reverse=True)

    def _wait_out_predecessor(self) -> None:
        """Before joining, while another process heartbeats under this processor id: wait until
        it leaves (a rolling restart: start the new process, then stop the old one) or its
        rows go stale (it died: as the leader would, after the liveness timeout). One that still
        heartbeats after twice the liveness timeout is a duplicate: the start fails, naming it
        (as on ZooKeeper)."""
        others = self._others_rows()
        if not others:
            return
        _log.info(
            "processor %s: another process (on %s) heartbeats under this id; waiting for it to "
            "leave or go stale", self.processor_id, others[0].location_id or "unknown",
        )
        deadline = time.monotonic() + 2 * self.timings.liveness
        while others:
            if time.monotonic() >= deadline:
                msg = (
                    f"Processor: {self.processor_id} is duplicate in the group {self.names.container} "
                    f"on {self.account.description}: another process (on "
                    f"{others[0].location_id or 'unknown'}) has heartbeat under the same id for "
                    f"{2 * self.timings.liveness:.0f} s. Registration failed; give every processor "
                    "its own processor.id."
                )
                raise CoordinationError(msg)
            time.sleep(min(1.0, self.timings.heartbeat / 2))
            others = self._others_rows()

    def _taken_over_by(self) -> ProcessorRow | None:
        """The process that took this processor id over, if one did: this one's fencing lease
        is gone and another incarnation heartbeats under the id (it took the lease at its
        start, while this one was frozen or cut off). The lease decides, so of two processes
        racing for one id exactly the one holding it goes on. A lease the leader broke (it
        dropped this processor) with no other process behind it is not a take-over."""
        if self._fence_lease is None:
            return None
        if self._fence_lease_renewed():
            self._keep_fence_registered()
            return None
        others = self._others_rows()
        if others:
            return others[0]
        self._broken_fence_lease = self._fence_lease
        return None

    def _keep_fence_registered(self) -> None:
        keep_fence_registered(self._fenced_store(), self.processor_id, self._fence_lease)

    def _fence_lease_renewed(self) -> bool:
        return fence_lease_renewed(self._fence_blob, self._fence_lease)

    def _retake_broken_fence(self, version: str) -> None:
        """The leader breaks a processor's fencing lease after publishing a version without it,
        so a broken lease while this processor is still listed in the version it works on is
        a late break: a leader that froze between the two, which another one has replaced
        since (and which listed this processor again). Nothing would ever take the lease back,
        and every commit of this processor would be refused: it stops its work (the epoch in
        flight ends, fenced), takes the lease anew and, still listed in that version, starts
        the work again from the committed checkpoints."""
        pid = self.processor_id
        if self._fence_lease_renewed() or pid not in self.blob.read_processors():
            return  # held after all, or dropped: the version without it stops its work
        others = self._others_rows()
        if others:
            self._stop_taken_over(others[0])
            return
        _log.warning(
            "processor %s: its fencing lease was broken while it is listed in version %s of %s "
            "(a late break by a former leader): it stops its work, takes the lease anew and "
            "starts again", pid, version, self.names.container,
        )
        self._listener().on_job_model_expired()
        self._working = False
        self._expired = True
        if self._stopped:
            return
        self._fence_lease = self._take_fence_lease()
        # Taken after the check above: a round that drops it from now on breaks the new lease.
        barrier = self.blob.read_barrier()
        if barrier is None or barrier[1] != version or pid not in self.blob.read_processors():
            return  # a newer version: it joins that one as usual
        model = self._model
        if model is None:
            return
        self._expired = False
        self._working = True
        self._listener().on_new_job_model(pid, model)

    def _regain_fence_lease(self) -> bool:
        """Whether this processor holds its fencing lease and may join a version that lists
        it. The leader broke the lease when it dropped the processor (its heartbeats looked
        stale: frozen, cut off), so every commit since is refused. Listed again, it stops the
        work of the old model (the epoch in flight ends first; its commit was fenced) and
        takes the lease anew: only work on the new version commits with it. A lease another
        incarnation took is not regained: this coordinator stops. A storage error leaves the
        round for the next look."""
        from azure.core.exceptions import AzureError

        if self._fence_lease is None or self._stopped:
            return False
        try:
            if self._fence_lease_renewed():
                return True
        except AzureError as error:
            _log.warning("processor %s: renewing its fencing lease failed: %s", self.processor_id, error)
            return False
        others = self._others_rows()
        if others:
            self._stop_taken_over(others[0])
            return False
        if self._working:
            self._listener().on_job_model_expired()
            self._working = False
        self._expired = True
        if self._stopped:  # stopped while its epoch in flight ended: no lease left behind
            return False
        self._fence_lease = self._take_fence_lease()
        _log.warning(
            "processor %s was dropped by the leader of %s and is listed again: its work stopped "
            "and it took its fencing lease anew", self.processor_id, self.names.container,
        )
        return True

    # -- heartbeats and lease renewal (their own thread) ---------------------------------------
    def _beat(self) -> None:
        next_beat = time.monotonic() + self.timings.heartbeat
        while not self._stopped:
            now = time.monotonic()
            if self._leading and now - self._renewed_at >= self.timings.lease_renew:
                self._renew()
            if now >= next_beat:
                next_beat = now + self.timings.heartbeat
                # Before the heartbeat: a process that took the id over may share this one's
                # row (both UNASSIGNED), which this heartbeat would overwrite.
                if self._stop_if_taken_over():
                    return
                try:
                    self._heartbeat()
                except Exception as error:  # noqa: BLE001 - Samza only logs a failed heartbeat
                    if self._stopped:
                        return  # the clients were closed under a call in flight
                    _log.warning("heartbeat of %s failed: %s", self.processor_id, error)
            pause = next_beat - time.monotonic()
            if self._leading:
                pause = min(pause, self._renewed_at + self.timings.lease_renew - time.monotonic())
            self._wake.wait(max(0.01, pause))

    def _stop_if_taken_over(self) -> bool:
        """Stop this coordinator when another process took its processor id over; True then."""
        try:
            newer = self._taken_over_by()
        except Exception as error:  # noqa: BLE001 - asked again at the next heartbeat
            if not self._stopped:
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
        due = dict.fromkeys(("leader", "membership", "barrier", "upgrade"), 0.0)
        intervals = {
            "leader": self.timings.leader_check,
            "membership": self.timings.membership_check,
            "barrier": self.timings.barrier_check,
            "upgrade": self.timings.upgrade_check,
        }
        steps = {
            "leader": self._check_leader,
            "membership": self._check_membership,
            "barrier": self._check_barrier,
            "upgrade": self._check_upgrade,
        }
        while not self._stopped:
            for name, step in steps.items():
                if self._stopped or time.monotonic() < due[name]:
                    continue
                due[name] = time.monotonic() + intervals[name]
                try:
                    step()
                except LeaseLost as error:
                    _log.warning("processor %s stops leading: %s", self.processor_id, error)
                    self._demote()
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
        with self._changed:
            if self._stopped:
                return
            self._stopped = True
            self._changed.notify_all()
        self._wake.set()
        failure = error
        me = threading.current_thread()
        for thread in self._threads:
            if thread is not me:
                thread.join(self.account.timeout * self.account.retry_attempts + 5)
        try:
            if self._working and self._listeners:
                self._listener().on_job_model_expired()
            self._working = False
        except Exception as exc:  # noqa: BLE001 - report it, and still leave the group
            failure = failure or exc
        if error is None:
            self._leave()
        lease = self._lease_id
        with self._state:
            self._leading = False
            self._lease_id = None
        if error is None and lease is not None:
            self.blob.release_lease(lease)
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
        from azure.storage.blob import BlobLeaseClient

        if not hasattr(self, "table"):
            return
        try:
            for version in {self._version or UNASSIGNED, UNASSIGNED}:
                self.table.delete(version, self.processor_id)
            if self._pending is not None:
                self.table.delete(self._pending[0], self.processor_id)
            if self._fence_lease is not None:
                BlobLeaseClient(self._fence_blob, self._fence_lease).release()
        except (AzureError, CoordinationError) as error:
            _log.warning(
                "processor %s left %s uncleanly: %s", self.processor_id, self.names.container, error
            )
        self._fence_lease = None

    def _close(self) -> None:
        for service in self._services:
            try:
                service.close()
            except Exception:  # noqa: BLE001, S110 - closing is best effort
                pass
        self._services.clear()

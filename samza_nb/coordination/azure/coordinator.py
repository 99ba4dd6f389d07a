"""AzureJobCoordinator: one processor of a standalone job, coordinated through Azure Storage.

SAMZA.md §10.5, with Samza's two bugs fixed (the leader groups over the live processor ids,
with their locations and the task locality of the metadata store; no trimming loop):

1. **start**: a row ``UNASSIGNED``/pid in the processor table; a fencing lease on the blob
   ``processors/<pid>``; heartbeats; an attempt to lead.
2. **leader** (holder of the page blob's lease, renewed every ``lease.renew.interval``; a failed
   renewal demotes): every ``membership.check.interval`` it compares the live processors of the
   table with the list on the blob; a difference (or a barrier that timed out, or having just
   become leader) starts a round once the live set has not changed for ``job.debounce.time.ms``
   (as the ZooKeeper leader does; Samza's Azure leader publishes at once, so processors started
   together first run a model of whoever was first, then rebalance):
   the next version's model (grouped over the live processors), then ``START <v>``, then the
   processor list, every write under its lease. Processors it dropped lose their fencing lease
   (the leader breaks it), so a frozen one that wakes up cannot commit.
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
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from samza_nb.config import Config
from samza_nb.coordination.agreed_model import AgreedModelCoordinator
from samza_nb.coordination.assignments import LocalityManager, update_task_assignments
from samza_nb.coordination.azure.blob import (
    BARRIER_END,
    BARRIER_START,
    BARRIER_TIMEOUT,
    CoordinationBlob,
    JobModelBundle,
    LeaseLost,
)
from samza_nb.coordination.azure.lock import AzureLock
from samza_nb.coordination.azure.names import AzureNames
from samza_nb.coordination.azure.processors import UNASSIGNED, ProcessorTable
from samza_nb.coordination.azure.run_id import AzureRunIdGenerator
from samza_nb.coordination.coordinator import JobCoordinatorListener
from samza_nb.coordination.job_model_calculator import JobModelCalculator
from samza_nb.errors import CoordinationError, JobLeaseError
from samza_nb.grouping import GrouperMetadata
from samza_nb.metadata import MetadataStore
from samza_nb.metadata.azure import AzureWriteGuard
from samza_nb.metadata.azure_storage import AzureAccount, describe_error
from samza_nb.model import JobModel, LocationId

__all__ = ["STREAMS_LOCK_ID", "AzureJobCoordinator", "AzureTimings"]

#: The lock a leader holds while it creates the job's streams (blob ``locks/createStreams``).
STREAMS_LOCK_ID = "createStreams"

_log = logging.getLogger(__name__)
_PREFIX = "job.coordinator.azure."


@dataclass(frozen=True)
class AzureTimings:
    """The protocol's intervals in seconds (Samza's defaults; config keys ``job.coordinator.azure.*``)."""

    heartbeat: float = 5.0
    liveness: float = 30.0
    leader_check: float = 10.0
    membership_check: float = 5.0
    barrier_check: float = 5.0
    barrier_timeout: float = 30.0
    upgrade_check: float = 5.0
    lease_duration: float = 60.0
    lease_renew: float = 45.0

    @classmethod
    def from_config(cls, config: Config) -> AzureTimings:
        def seconds(key: str) -> float:
            return config.get_int(key) / 1000

        timings = cls(
            heartbeat=seconds("job.coordinator.azure.heartbeat.interval.ms"),
            liveness=seconds("job.coordinator.azure.liveness.timeout.ms"),
            leader_check=seconds("job.coordinator.azure.leader.check.interval.ms"),
            membership_check=seconds("job.coordinator.azure.membership.check.interval.ms"),
            barrier_check=seconds("job.coordinator.azure.barrier.check.interval.ms"),
            barrier_timeout=seconds("job.coordinator.azure.barrier.timeout.ms"),
            upgrade_check=seconds("job.coordinator.azure.upgrade.check.interval.ms"),
            lease_duration=seconds("job.coordinator.azure.lease.duration.ms"),
            lease_renew=seconds("job.coordinator.azure.lease.renew.interval.ms"),
        )
        if timings.lease_renew >= timings.lease_duration:
            msg = (
                f"{_PREFIX}lease.renew.interval.ms ({timings.lease_renew * 1000:g}) must be "
                f"shorter than {_PREFIX}lease.duration.ms ({timings.lease_duration * 1000:g})"
            )
            raise CoordinationError(msg)
        return timings

    @property
    def tick(self) -> float:
        """How often the coordinator thread looks at its due work."""
        shortest = min(
            self.membership_check, self.barrier_check, self.upgrade_check, self.leader_check
        )
        return max(0.05, min(1.0, shortest / 4))


@dataclass
class _Round:
    """The leader's barrier of one version."""

    version: str
    participants: frozenset[str]
    model: JobModel
    started: float


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
    _agreement = "confirmed"

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
        self._calculator = calculator
        self.config = calculator.inputs.config if config is None else Config.of(config)
        self.account = AzureAccount.from_config(self.config, connect)
        self.names = AzureNames.for_job(self.config)
        self.timings = AzureTimings.from_config(self.config)
        self.blob_length = self.config.get_int("job.coordinator.azure.blob.length")
        self.debounce = self.config.get_int("job.debounce.time.ms") / 1000
        self._metadata = metadata
        self._before_first_publish = before_first_publish
        self._state = threading.RLock()
        self._changed = threading.Condition(self._state)
        self._wake = threading.Event()
        self._stopped = False
        self._leading = False
        self._lease_id: str | None = None
        self._renewed_at = 0.0
        self._version: str | None = None  # the version this processor confirmed
        self._model: JobModel | None = None
        self._model_version: str | None = None  # the version of _model
        self._pending: tuple[str, JobModel] | None = None
        self._round: _Round | None = None
        self._needs_round = False
        self._seen_live: frozenset[str] | None = None  # the live set the leader saw last
        self._seen_at = 0.0  # when it last changed
        self._working = False
        self._expired = True
        self._fence_lease: str | None = None
        self._run_id = ""
        self._threads: list[threading.Thread] = []
        self._services: list[Any] = []
        #: The deployment's run id, when the runtime passes one.
        self.run_id: str | None = None

    def __repr__(self) -> str:
        pid = next(iter(self._listeners), None)
        return (
            f"AzureJobCoordinator({self.account.description!r}, {self.names.container!r}, "
            f"processor={pid!r}, leader={self._leading}, version={self._version})"
        )

    # -- the contract --------------------------------------------------------------------------
    def attach(
        self, processor_id: str, location_id: LocationId, listener: JobCoordinatorListener
    ) -> None:
        if not processor_id or not isinstance(processor_id, str):
            msg = f"an Azure processor needs a non-empty processor id, got {processor_id!r}"
            raise CoordinationError(msg)
        if self._listeners and processor_id not in self._listeners:
            msg = (
                f"an Azure coordinator hosts one processor; {sorted(self._listeners)[0]!r} is "
                f"attached, so {processor_id!r} needs a coordinator of its own"
            )
            raise CoordinationError(msg)
        super().attach(processor_id, location_id, listener)

    @property
    def processor_id(self) -> str:
        if not self._listeners:
            msg = "no processor is attached to this Azure coordinator (call attach first)"
            raise CoordinationError(msg)
        return next(iter(self._listeners))

    @property
    def location_id(self) -> LocationId:
        return self._locations[self.processor_id]

    @property
    def stopped(self) -> bool:
        return self._stopped

    @property
    def calculator(self) -> JobModelCalculator:
        return self._calculator

    def _coordination_place(self) -> str:
        return f"in {self.names.container}"

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
        guard.require_lease(self._fence_blob, self._fence_lease, f"processor {self.processor_id!r}")

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
        """An infinite lease on ``processors/<pid>`` (a previous holder of this id loses it)."""
        from azure.core.exceptions import AzureError
        from azure.storage.blob import BlobLeaseClient

        blob = self._fence_blob
        try:
            try:
                blob.upload_blob(b"", overwrite=False)
            except AzureError as error:
                if getattr(error, "status_code", None) not in (409, 412):
                    raise
            try:
                BlobLeaseClient(blob).break_lease(lease_break_period=0)
            except AzureError as error:
                if getattr(error, "status_code", None) != 409:  # 409: no lease to break
                    raise
            return str(blob.acquire_lease(lease_duration=-1).id)
        except AzureError as error:
            msg = (
                f"{self!r}: cannot take the fencing lease {blob.blob_name}: {describe_error(error)}"
            )
            raise CoordinationError(msg) from error

    def _break_fence(self, processor_id: str) -> None:
        from azure.core.exceptions import AzureError
        from azure.storage.blob import BlobLeaseClient

        blob = self.container.get_blob_client(AzureNames.processor_blob(processor_id))
        try:
            BlobLeaseClient(blob).break_lease(lease_break_period=0)
            _log.info("leader %s fenced processor %s", self.processor_id, processor_id)
        except AzureError:
            pass  # no lease (it left cleanly) or no blob

    # -- heartbeats and lease renewal (their own thread) ---------------------------------------
    def _heartbeat(self) -> None:
        self.table.upsert(
            self._version or UNASSIGNED,
            self.processor_id,
            is_leader=self._leading,
            location_id=self.location_id,
            run_id=self._run_id,
        )

    def _beat(self) -> None:
        next_beat = time.monotonic() + self.timings.heartbeat
        while not self._stopped:
            now = time.monotonic()
            if self._leading and now - self._renewed_at >= self.timings.lease_renew:
                self._renew()
            if now >= next_beat:
                next_beat = now + self.timings.heartbeat
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

    def _renew(self) -> None:
        lease = self._lease_id
        if lease is None:
            return
        try:
            self.blob.renew_lease(lease)
            self._renewed_at = time.monotonic()
        except (LeaseLost, ValueError) as error:  # ValueError: the clients were closed
            _log.warning("processor %s lost the leader's lease: %s", self.processor_id, error)
            self._demote()

    def _demote(self) -> None:
        with self._state:
            was = self._leading
            self._leading = False
            self._lease_id = None
            self._round = None
        if was:
            try:
                self._heartbeat()  # isLeader=false
            except CoordinationError:
                pass

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

    def _check_leader(self) -> None:
        if self._leading:
            return
        lease = self.blob.acquire_lease(self.timings.lease_duration)
        if lease is None:
            return
        with self._state:
            self._lease_id = lease
            self._renewed_at = time.monotonic()
            self._leading = True
            self._needs_round = True  # after the debounce (processors starting together)
            self._seen_live = None
        _log.info("processor %s leads %s", self.processor_id, self.names.container)
        self._heartbeat()

    def _check_membership(self) -> None:
        if not self._leading:
            return
        live = frozenset(row.processor_id for row in self.table.live(self.timings.liveness))
        now = time.monotonic()
        if live != self._seen_live:
            self._seen_live, self._seen_at = live, now
        if now - self._seen_at < self.debounce:
            return  # membership still settling: one round once it is quiet
        current = self._round
        if current is not None and current.participants == live:
            return
        if self._needs_round or live != set(self.blob.read_processors()):
            self._new_round()

    def _new_round(self) -> None:
        """The leader's doOnProcessorChange: the next version for the live processors."""
        rows = self.table.live(self.timings.liveness)
        processors = {row.processor_id: row.location_id or "unknown" for row in rows}
        if not processors:
            return
        bundle = self.blob.read_bundle()
        barrier = self.blob.read_barrier()
        lease = self._lease_id
        published_version = bundle.curr_version if bundle is not None else None
        if barrier is not None and barrier[0] == BARRIER_START:
            # The previous round never finished: close it before the next one.
            self.blob.publish_barrier(BARRIER_TIMEOUT, barrier[1], lease)
        numbers = [
            int(v)
            for v in (published_version, barrier[1] if barrier else None)
            if v and v.isdigit()
        ]
        version = str(max(numbers) + 1) if numbers else "1"
        previous = bundle.curr_model if bundle is not None else None
        task_locality = (
            LocalityManager(self._metadata).read_task_locality()
            if self._metadata is not None
            else {}
        )
        metadata = GrouperMetadata.from_job_model(previous, processors, task_locality or None)
        model = self._calculator.calculate(processors, metadata, previous)
        if self._before_first_publish is not None:
            setup, self._before_first_publish = self._before_first_publish, None
            # Under the createStreams lock: a leader that took over from one that froze
            # mid-creation waits until that one's lock lease has run out.
            with self.lock(STREAMS_LOCK_ID, timeout=2 * self.timings.lease_duration + 10):
                setup(model)
        dropped = set(self.blob.read_processors()) - set(processors)
        self.blob.publish_bundle(JobModelBundle(previous, model, published_version, version), lease)
        self.blob.publish_barrier(BARRIER_START, version, lease)
        self.blob.publish_processors(sorted(processors), lease)
        for processor_id in dropped:
            self._break_fence(processor_id)
        with self._state:
            self._round = _Round(version, frozenset(processors), model, time.monotonic())
            self._needs_round = False
        _log.info(
            "leader %s published job model version %s for %s",
            self.processor_id,
            version,
            sorted(processors),
        )

    def _check_barrier(self) -> None:
        current = self._round
        if current is None or not self._leading:
            return
        joined = {row.processor_id for row in self.table.rows() if row.version == current.version}
        if current.participants <= joined:
            self.blob.publish_barrier(BARRIER_END, current.version, self._lease_id)
            if self._metadata is not None:
                update_task_assignments(self._metadata, current.model, write_locality=False)
            self._round = None
        elif time.monotonic() - current.started > self.timings.barrier_timeout:
            _log.warning(
                "barrier of job model version %s timed out: %s never joined",
                current.version,
                sorted(current.participants - joined),
            )
            self.blob.publish_barrier(BARRIER_TIMEOUT, current.version, self._lease_id)
            with self._state:
                self._round = None
                self._needs_round = True

    def _check_upgrade(self) -> None:
        pid = self.processor_id
        if self._pending is not None:
            self._poll_pending()
            return
        barrier = self.blob.read_barrier()
        if barrier is None or barrier[0] != BARRIER_START or barrier[1] == self._version:
            return
        if pid not in self.blob.read_processors():
            # A round without this processor (its heartbeats looked stale to the leader): its
            # tasks go to others, so it stops work now and waits to be listed again. Samza's
            # processor keeps running its old model here.
            if self._working:
                _log.warning(
                    "processor %s was left out of version %s: stopping work", pid, barrier[1]
                )
                self._listener().on_job_model_expired()
                self._working = False
                self._expired = True
            return
        bundle = self.blob.read_bundle()
        if bundle is None or bundle.curr_version != barrier[1] or bundle.curr_model is None:
            return
        # A processor the grouper left without a container joins the barrier and stays idle.
        version, model = barrier[1], bundle.curr_model
        mine_before = self._model.containers.get(pid) if self._model is not None else None
        if self._model is None or mine_before != model.containers.get(pid):
            if self._working:
                self._listener().on_job_model_expired()
                self._working = False
            self._expired = True
        self.table.upsert(
            version, pid, is_leader=self._leading, location_id=self.location_id, run_id=self._run_id
        )
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

    def _listener(self) -> JobCoordinatorListener:
        return self._listeners[self.processor_id]

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
        if not self._listeners:
            return
        if failure is None:
            self._listener().on_coordinator_stop()
        else:
            self._listener().on_coordinator_failure(failure)

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

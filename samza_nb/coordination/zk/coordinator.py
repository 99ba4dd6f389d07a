"""ZkJobCoordinator: one processor of a standalone job, coordinated through ZooKeeper (§8.5).

Processors register ephemeral nodes and elect the first as leader. The leader computes a job
model with the :class:`JobModelCalculator` after membership settles (the debounce), stores it
as a new version, opens that version's barrier and publishes the version. Every processor reads
the new model, stops work only if its own active tasks changed, and joins the barrier; on DONE the
leader records the version as active and the processors whose container changed start it (and
record where their tasks now run). A processor whose standby tasks alone changed keeps working:
it drops the standbys it loses before it joins the barrier and takes the new set on DONE. A barrier that times out makes the leader try again.

Threading: every reaction, and every call of the listener, runs on the coordinator's one
scheduler thread (``samza_nb-zk-<processor id>``), except that :meth:`stop` calls
``on_job_model_expired`` and ``on_coordinator_stop`` on the thread that calls it.

This module starts and stops the coordinator and composes its parts: the leader's side
(``leadership``), a processor's side of a version (``agreement``), session handling
(``sessions``) and commit fencing (``fencing``), around the state they share (``state``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from kazoo.recipe.watchers import DataWatch

from samza_nb.config import Config
from samza_nb.coordination.agreed_model import AgreedModelCoordinator
from samza_nb.coordination.job_model_calculator import JobModelCalculator
from samza_nb.coordination.zk.agreement import ZkAgreement, active_work
from samza_nb.coordination.zk.barrier import VersionBarrier
from samza_nb.coordination.zk.debounce import DebounceScheduler
from samza_nb.coordination.zk.election import LeaderElector
from samza_nb.coordination.zk.fencing import ZkCommitFencing
from samza_nb.coordination.zk.job_models import JobModelVersions
from samza_nb.coordination.zk.leader import JobModelPublisher
from samza_nb.coordination.zk.leadership import KEEP_JOB_MODELS, ZkLeadership
from samza_nb.coordination.zk.lock import ZkDistributedLock
from samza_nb.coordination.zk.processors import ProcessorRegistry, check_processor_identity
from samza_nb.coordination.zk.protocol import validate_protocol_version
from samza_nb.coordination.zk.run_id import ZkRunIdGenerator
from samza_nb.coordination.zk.sessions import ZkSessions
from samza_nb.coordination.zk.state import ZkSettings, ZkState
from samza_nb.coordination.zk.task_locality import ZkTaskLocality, current_store_locality
from samza_nb.errors import CoordinationError
from samza_nb.metadata import MetadataStore
from samza_nb.metadata.zk_client import ZkClient
from samza_nb.model import JobModel, LocationId

__all__ = ["KEEP_JOB_MODELS", "STREAMS_LOCK_ID", "ZkJobCoordinator", "active_work"]

#: The lock a leader holds while it creates the job's streams (``<root>/lock_createStreams``).
STREAMS_LOCK_ID = "createStreams"

_log = logging.getLogger(__name__)


class ZkJobCoordinator(AgreedModelCoordinator):
    """Coordinates the one processor attached to it with the job's other processors.

    ``calculator`` computes models (the leader's), ``config`` gives the ``job.coordinator.zk.*``
    keys and ``job.debounce.time.ms`` (default: the calculator's config); ``metadata``, when
    given, receives the task assignments and locality of every agreed model;
    ``partition_counts`` is called by the leader to detect input partition changes;
    ``before_first_publish(model)`` is called by a leader once, before it publishes its first
    model (Samza creates checkpoint, changelog and intermediate streams there, §8.5 step 4d),
    while it holds the ``lock_createStreams`` lock: only a leader creates them, and a leader
    that took over from one that froze mid-creation waits for that one's session to end first.
    """

    name = "zookeeper"
    _service = "ZooKeeper"

    def __init__(
        self,
        calculator: JobModelCalculator,
        config: Config | Mapping[str, Any] | None = None,
        *,
        metadata: MetadataStore | None = None,
        partition_counts: Callable[[], Mapping[str, int]] | None = None,
        connect: str | None = None,
        before_first_publish: Callable[[JobModel], None] | None = None,
    ) -> None:
        super().__init__()
        self.config = calculator.inputs.config if config is None else Config.of(config)
        self.settings = ZkSettings(self.config, connect)
        self.keys = self.settings.keys
        self._metadata = metadata
        self._before_first_publish = before_first_publish
        self._state = ZkState(
            self.settings,
            metadata=metadata,
            processor_id=lambda: self.processor_id,
            locations=self._locations,
            listener=self._listener,
        )
        self._leadership = ZkLeadership(self._state, calculator, partition_counts)
        self._agreement = ZkAgreement(self._state, self._leadership)
        self._sessions = ZkSessions(self._state, self._leadership, self._agreement, self._stop)
        self._fencing = ZkCommitFencing(self._state, self._agreement)

    def __repr__(self) -> str:
        pid = next(iter(self._listeners), None)
        zk = self._state.zk
        return (
            f"ZkJobCoordinator({zk.description if zk else '(not started)'!r}, "
            f"processor={pid!r}, leader={self.is_leader}, version={self.job_model_version})"
        )

    # -- the contract (AgreedModelCoordinator) -------------------------------------------------
    @property
    def connect(self) -> str:
        """The ZooKeeper connect string."""
        return self.settings.connect

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
        return self._leadership.leading

    @property
    def _stopped(self) -> bool:  # type: ignore[override]
        return self._state.stopped

    @property
    def _calculator(self) -> JobModelCalculator:  # type: ignore[override]
        return self._leadership.calculator

    def _check_processor(self, processor_id: str, location_id: LocationId) -> None:
        check_processor_identity(processor_id, location_id)

    def _coordination_place(self) -> str:
        return f"under {self.keys.root}"

    def fence(self, tx: Any) -> None:
        """Add to a kazoo transaction the check that this processor's session is still live
        and works on the model its commits belong to (``fencing``)."""
        self._fencing.fence(tx)

    def run_id_generator(self, store: MetadataStore) -> ZkRunIdGenerator:
        """A run-id generator on this coordinator's session (call after :meth:`start`)."""
        if self._state.zk is None:
            msg = "start the ZooKeeper coordinator before asking for the run id"
            raise CoordinationError(msg)
        return ZkRunIdGenerator(self._state.zk, self.keys, store, self.processor_id)

    def start(self) -> None:
        """Register, check for a duplicate id, and start the election (returns without waiting
        for the first model; the listener gets it on the scheduler thread)."""
        pid = self.processor_id
        state, settings = self._state, self.settings
        zk = ZkClient(
            settings.connect,
            session_timeout=settings.session_timeout,
            connection_timeout=settings.connection_timeout,
            error=CoordinationError,
        )
        state.zk = zk
        try:
            validate_protocol_version(zk, self.keys)
            for path in (self.keys.processors, self.keys.task_locality, self.keys.barriers):
                zk.ensure(path)
            state.versions = JobModelVersions(zk, self.keys)
            state.versions.ensure_nodes()
            state.barrier = VersionBarrier(zk, self.keys)
            state.registry = ProcessorRegistry(zk, self.keys)
            state.locality = ZkTaskLocality(zk, self.keys)
            state.publisher = JobModelPublisher(
                state.versions,
                state.barrier,
                state.registry,
                state.locality,
                skip_unchanged=settings.startup_with_active,
                before_first_publish=self._locked_setup() if self._before_first_publish else None,
                store_locality=None if self._metadata is None else self._current_store_locality,
            )
            state.elector = LeaderElector(zk, self.keys, self._leadership.on_predecessor_change)
            state.scheduler = DebounceScheduler(f"samza_nb-zk-{pid}", self._on_action_failed)
            # Subscribe before registering, so no version that counts on this processor is missed.
            DataWatch(zk.kazoo, self.keys.job_model_version, self._agreement.on_version_data)
            state.node = state.registry.register(pid, state.location)
            state.registry.wait_until_unique(state.node, pid, 2 * settings.session_timeout)
        except BaseException:
            state.stopped = True
            if state.scheduler is not None:
                state.scheduler.stop()
            zk.close()
            raise
        zk.kazoo.add_listener(self._sessions.on_session_state)
        if settings.startup_with_active:
            state.schedule("start-with-active", 0, self._agreement.start_with_active_model)
        state.schedule("elect", 0, self._leadership.elect)

    def stop(self) -> None:
        self._stop(None)

    def _on_action_failed(self, name: str, error: BaseException) -> None:
        self._stop(error)

    def _current_store_locality(self) -> dict[str, dict[str, int]]:
        zk = self._state.zk
        assert zk is not None and self._metadata is not None  # set before the publisher
        return current_store_locality(zk, self.keys, self._metadata)

    def _locked_setup(self) -> Callable[[JobModel], None]:
        """``before_first_publish`` under the ``createStreams`` lock of this session."""
        setup = self._before_first_publish
        zk = self._state.zk
        assert setup is not None and zk is not None
        lock = ZkDistributedLock(
            zk,
            self.keys,
            STREAMS_LOCK_ID,
            self.processor_id,
            timeout=max(2 * self.settings.session_timeout, 10.0),  # a frozen holder's session ends first
        )

        def locked(model: JobModel) -> None:
            with lock:
                setup(model)

        return locked

    # -- stopping ------------------------------------------------------------------------------
    def _stop(self, error: BaseException | None) -> None:
        state = self._state
        with state.changed:
            if state.stopped:
                return
            state.stopped = True
            self._leadership.leading = False
            state.changed.notify_all()
        failure = error
        self._sessions.cancel_disconnect_timer()
        agreement = self._agreement
        try:
            if state.scheduler is not None:
                state.scheduler.stop(timeout=0)
                if state.zk is not None and not state.zk.kazoo.connected:
                    # Nothing to leave gracefully; closing fails calls stuck on the dead link
                    # (with an error naming this failure, not the closed connection).
                    state.zk.close(because=error)
                state.scheduler.join(10.0)
            if agreement.working and not agreement.expired and self._listeners:
                self._listener().on_job_model_expired()
            agreement.working = False
        except Exception as exc:  # noqa: BLE001 - report it, and still leave the group
            failure = failure or exc
        finally:
            if state.zk is not None:
                state.zk.close(because=error)  # ends the session now: the processor leaves the group at once
        self._tell_stopped(failure)

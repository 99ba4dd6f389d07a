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

This module starts and stops the coordinator; the leader's side lives in ``leadership``, a
processor's side of a version in ``agreement``, session handling in ``sessions``, commit
fencing in ``fencing`` and the state they share in ``_base``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from kazoo.recipe.watchers import DataWatch

from samza_nb.coordination.zk.agreement import ZkAgreement
from samza_nb.coordination.zk.barrier import VersionBarrier
from samza_nb.coordination.zk.debounce import DebounceScheduler
from samza_nb.coordination.zk.election import LeaderElector
from samza_nb.coordination.zk.fencing import ZkCommitFencing, active_work
from samza_nb.coordination.zk.job_models import JobModelVersions
from samza_nb.coordination.zk.leader import JobModelPublisher
from samza_nb.coordination.zk.leadership import KEEP_JOB_MODELS, ZkLeadership
from samza_nb.coordination.zk.lock import ZkDistributedLock
from samza_nb.coordination.zk.processors import ProcessorRegistry
from samza_nb.coordination.zk.protocol import validate_protocol_version
from samza_nb.coordination.zk.run_id import ZkRunIdGenerator
from samza_nb.coordination.zk.sessions import ZkSessions
from samza_nb.coordination.zk.task_locality import ZkTaskLocality, current_store_locality
from samza_nb.errors import CoordinationError
from samza_nb.metadata import MetadataStore
from samza_nb.metadata.zk_client import ZkClient
from samza_nb.model import JobModel

__all__ = ["KEEP_JOB_MODELS", "STREAMS_LOCK_ID", "ZkJobCoordinator", "active_work"]

#: The lock a leader holds while it creates the job's streams (``<root>/lock_createStreams``).
STREAMS_LOCK_ID = "createStreams"

_log = logging.getLogger(__name__)


class ZkJobCoordinator(ZkLeadership, ZkAgreement, ZkSessions, ZkCommitFencing):
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

    def run_id_generator(self, store: MetadataStore) -> ZkRunIdGenerator:
        """A run-id generator on this coordinator's session (call after :meth:`start`)."""
        if self._zk is None:
            msg = "start the ZooKeeper coordinator before asking for the run id"
            raise CoordinationError(msg)
        return ZkRunIdGenerator(self._zk, self.keys, store, self.processor_id)

    def start(self) -> None:
        """Register, check for a duplicate id, and start the election (returns without waiting
        for the first model; the listener gets it on the scheduler thread)."""
        pid = self.processor_id
        location = self._locations[pid]
        zk = ZkClient(
            self.connect,
            session_timeout=self.session_timeout,
            connection_timeout=self.connection_timeout,
            error=CoordinationError,
        )
        self._zk = zk
        try:
            validate_protocol_version(zk, self.keys)
            for path in (self.keys.processors, self.keys.task_locality, self.keys.barriers):
                zk.ensure(path)
            self._versions = JobModelVersions(zk, self.keys)
            self._versions.ensure_nodes()
            self._barrier = VersionBarrier(zk, self.keys)
            self._registry = ProcessorRegistry(zk, self.keys)
            self._locality = ZkTaskLocality(zk, self.keys)
            self._publisher = JobModelPublisher(
                self._versions,
                self._barrier,
                self._registry,
                self._locality,
                skip_unchanged=self.startup_with_active,
                before_first_publish=self._locked_setup() if self._before_first_publish else None,
                store_locality=None if self._metadata is None else self._current_store_locality,
            )
            self._elector = LeaderElector(zk, self.keys, self._on_predecessor_change)
            self._scheduler = DebounceScheduler(f"samza_nb-zk-{pid}", self._on_action_failed)
            # Subscribe before registering, so no version that counts on this processor is missed.
            DataWatch(zk.kazoo, self.keys.job_model_version, self._on_version_data)
            self._node = self._registry.register(pid, location)
            self._registry.wait_until_unique(self._node, pid, 2 * self.session_timeout)
        except BaseException:
            self._stopped = True
            if self._scheduler is not None:
                self._scheduler.stop()
            zk.close()
            raise
        zk.kazoo.add_listener(self._on_session_state)
        if self.startup_with_active:
            self._schedule("start-with-active", 0, self._start_with_active_model)
        self._schedule("elect", 0, self._elect)

    def stop(self) -> None:
        self._stop(None)

    def _current_store_locality(self) -> dict[str, dict[str, int]]:
        assert self._zk is not None and self._metadata is not None  # set before the publisher
        return current_store_locality(self._zk, self.keys, self._metadata)

    def _locked_setup(self) -> Callable[[JobModel], None]:
        """``before_first_publish`` under the ``createStreams`` lock of this session."""
        setup = self._before_first_publish
        assert setup is not None and self._zk is not None
        lock = ZkDistributedLock(
            self._zk,
            self.keys,
            STREAMS_LOCK_ID,
            self.processor_id,
            timeout=max(2 * self.session_timeout, 10.0),  # a frozen holder's session ends first
        )

        def locked(model: JobModel) -> None:
            with lock:
                setup(model)

        return locked

    # -- stopping ------------------------------------------------------------------------------
    def _stop(self, error: BaseException | None) -> None:
        with self._changed:
            if self._stopped:
                return
            self._stopped = True
            self._leading = False
            self._changed.notify_all()
        failure = error
        self._cancel_disconnect_timer()
        try:
            if self._scheduler is not None:
                self._scheduler.stop(timeout=0)
                if self._zk is not None and not self._zk.kazoo.connected:
                    # Nothing to leave gracefully; closing fails calls stuck on the dead link.
                    self._zk.close()
                self._scheduler.join(10.0)
            if self._working and not self._expired and self._listeners:
                self._listener().on_job_model_expired()
            self._working = False
        except Exception as exc:  # noqa: BLE001 - report it, and still leave the group
            failure = failure or exc
        finally:
            if self._zk is not None:
                self._zk.close()  # ends the session now: the processor leaves the group at once
        self._tell_stopped(failure)

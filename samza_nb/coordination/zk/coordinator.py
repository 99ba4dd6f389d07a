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
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from kazoo.protocol.states import KazooState
from kazoo.recipe.watchers import ChildrenWatch, DataWatch

from samza_nb.config import Config
from samza_nb.coordination.agreed_model import AgreedModelCoordinator
from samza_nb.coordination.assignments import LocalityManager, update_task_assignments
from samza_nb.coordination.coordinator import JobCoordinatorListener
from samza_nb.coordination.job_model_calculator import JobModelCalculator
from samza_nb.coordination.zk.barrier import DONE, TIMED_OUT, VersionBarrier
from samza_nb.coordination.zk.debounce import DebounceScheduler
from samza_nb.coordination.zk.election import LeaderElector
from samza_nb.coordination.zk.job_models import JobModelVersions
from samza_nb.coordination.zk.keys import ZkKeyBuilder
from samza_nb.coordination.zk.leader import JobModelPublisher
from samza_nb.coordination.zk.lock import ZkDistributedLock
from samza_nb.coordination.zk.partition_monitor import PartitionCountMonitor
from samza_nb.coordination.zk.processors import ProcessorRegistry, check_processor_identity
from samza_nb.coordination.zk.protocol import validate_protocol_version
from samza_nb.coordination.zk.run_id import ZkRunIdGenerator
from samza_nb.coordination.zk.task_locality import ZkTaskLocality
from samza_nb.errors import CoordinationError, JobLeaseError
from samza_nb.metadata import MetadataStore
from samza_nb.metadata.zk_client import ZkClient
from samza_nb.model import JobModel, LocationId, TaskMode

__all__ = ["KEEP_JOB_MODELS", "STREAMS_LOCK_ID", "ZkJobCoordinator", "active_work"]

#: Job models and barriers kept after a new version is published (Samza keeps 10).
KEEP_JOB_MODELS = 10

#: The lock a leader holds while it creates the job's streams (``<root>/lock_createStreams``).
STREAMS_LOCK_ID = "createStreams"

_log = logging.getLogger(__name__)
_PROCESSOR_CHANGE = "processor-change"


def active_work(model: JobModel, processor_id: str) -> tuple[object, ...] | None:
    """What of a processor's container an expiry is about: its location and active tasks
    (standby tasks may come and go without stopping the processor's work)."""
    container = model.containers.get(processor_id)
    if container is None:
        return None
    return (
        container.location_id,
        frozenset((name, task) for name, task in container.tasks.items() if task.mode is TaskMode.ACTIVE),
    )


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
        self._calculator = calculator
        self.config = calculator.inputs.config if config is None else Config.of(config)
        cfg = self.config
        self.connect = connect or cfg.require("job.coordinator.zk.connect")
        self.session_timeout = cfg.get_int("job.coordinator.zk.session.timeout.ms") / 1000
        self.connection_timeout = cfg.get_int("job.coordinator.zk.connection.timeout.ms") / 1000
        self.consensus_timeout = cfg.get_int("job.coordinator.zk.consensus.timeout.ms") / 1000
        self.debounce = cfg.get_int("job.debounce.time.ms") / 1000
        self.startup_with_active = cfg.get_bool(
            "job.coordinator.zk.enable-startup-with-active-job-model"
        )
        self.monitor_interval = (
            cfg.get_int("job.coordinator.monitor-partition-change.frequency.ms") / 1000
        )
        self.keys = ZkKeyBuilder.for_job(cfg)
        self._metadata = metadata
        self._partition_counts = partition_counts
        self._before_first_publish = before_first_publish
        self._monitor: PartitionCountMonitor | None = None
        self._zk: ZkClient | None = None
        self._scheduler: DebounceScheduler | None = None
        self._elector: LeaderElector | None = None
        self._node: str | None = None  # this processor's node under processors/
        self._epoch = 0  # bumped on session expiry: watches of older sessions are ignored
        self._session_lost = False
        self._leading = False
        self._model: JobModel | None = None  # the model this processor runs (agreed)
        self._model_version: str | None = None
        self._latest: tuple[str, JobModel] | None = None  # the newest model read
        self._seen_version: str | None = None
        self._primed = False
        self._expired = False  # this processor's work was stopped for a newer model
        self._standbys_moved = False  # the newest model read changes only this one's standbys
        #: (active version, this processor's version) → whether the two give it the same work.
        self._same_actives: dict[tuple[str, str], bool] = {}
        self._working = False  # the listener runs a model handed over by on_new_job_model
        self._settled: set[str] = set()
        self._stopped = False
        self._changed = threading.Condition()
        self._disconnect_timer: threading.Timer | None = None
        #: The deployment's run id, when the runtime passes one.
        self.run_id: str | None = None

    def __repr__(self) -> str:
        pid = next(iter(self._listeners), None)
        return (
            f"ZkJobCoordinator({self._zk.description if self._zk else '(not started)'!r}, "
            f"processor={pid!r}, leader={self.is_leader}, version={self._model_version})"
        )

    # -- the contract --------------------------------------------------------------------------
    def attach(
        self, processor_id: str, location_id: LocationId, listener: JobCoordinatorListener
    ) -> None:
        check_processor_identity(processor_id, location_id)
        if self._listeners and processor_id not in self._listeners:
            msg = (
                f"a ZooKeeper coordinator hosts one processor; {sorted(self._listeners)[0]!r} is "
                f"attached, so {processor_id!r} needs a coordinator of its own"
            )
            raise CoordinationError(msg)
        super().attach(processor_id, location_id, listener)

    @property
    def processor_id(self) -> str:
        if not self._listeners:
            msg = "no processor is attached to this ZooKeeper coordinator (call attach first)"
            raise CoordinationError(msg)
        return next(iter(self._listeners))

    @property
    def calculator(self) -> JobModelCalculator:
        """The calculator the leader uses now (the partition monitor may replace it)."""
        return self._calculator

    def _coordination_place(self) -> str:
        return f"under {self.keys.root}"

    def run_id_generator(self, store: MetadataStore) -> ZkRunIdGenerator:
        """A run-id generator on this coordinator's session (call after :meth:`start`)."""
        if self._zk is None:
            msg = "start the ZooKeeper coordinator before asking for the run id"
            raise CoordinationError(msg)
        return ZkRunIdGenerator(self._zk, self.keys, store, self.processor_id)

    def fence(self, tx: Any) -> None:
        """Add to a kazoo transaction the check that this processor's session is still live.

        The processor's ephemeral node exists only while the session that registered it does;
        a process frozen past its session timeout resumes without it, so a commit written as
        ``ZkMetadataStore.put_all(entries, guard=coordinator.fence)`` fails with
        :class:`~samza_nb.errors.JobLeaseError` and writes nothing.
        """
        node = self._node
        if node is None or self._stopped:
            msg = (
                f"processor {self.processor_id!r} has no live ZooKeeper session under "
                f"{self.keys.root}: its commits are fenced"
            )
            raise JobLeaseError(msg)
        tx.check(self.keys.processor(node), 0)
        self._fence_model_version(tx)

    def _fence_model_version(self, tx: Any) -> None:
        """Add the check that no job model moving this processor's active tasks was activated
        since the model it works on (issue #14: commits checked against the model version).

        Why not "activeJobModelVersion == my version": processors whose assignment did not
        change keep working through a rebalance (SAMZA.md §8.5 step 7) and learn of the new
        version only after the leader wrote it as active, so their commits in between would
        be refused, and a processor whose tasks did move starts on DONE, possibly before the
        leader wrote the new version as active. So a commit is allowed when the active
        version is not newer than this processor's model, or when the active model gives this
        processor the same location and active tasks (standby moves included); otherwise it is
        refused here. The transaction then checks the active version node's stat version as
        read, so an activation between this read and the commit fails the write (the store
        builds the transaction once more, and this check reads the new active version).
        """
        assert self._zk is not None
        with self._changed:
            running, version = self._model, self._model_version
        found = self._zk.get(self.keys.active_job_model_version)
        if found is None:
            return  # no tree yet (the leader creates it before the first model)
        active = found[0].decode("utf-8", "replace").strip()
        if running is None or version is None:
            msg = (
                f"processor {self.processor_id!r} works on no agreed job model under "
                f"{self.keys.root}: its commits are fenced"
            )
            raise JobLeaseError(msg)
        if active and active.isdigit() and version.isdigit() and int(active) > int(version):
            same = self._same_actives.get((active, version))
            if same is None:
                try:
                    newer = active_work(self._versions.read(active), self.processor_id)
                except CoordinationError:  # cleaned up: far newer than this processor's model
                    newer = None
                same = newer is not None and newer == active_work(running, self.processor_id)
                self._same_actives[(active, version)] = same
            if not same:
                msg = (
                    f"processor {self.processor_id!r} works on job model version {version}, but "
                    f"version {active} moving its tasks is active under {self.keys.root}: its "
                    "commits are fenced"
                )
                raise JobLeaseError(msg)
        tx.check(self.keys.active_job_model_version, found[1].version)

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

    # -- scheduling ----------------------------------------------------------------------------
    def _schedule(self, name: str, delay: float, action: Callable[[], None]) -> None:
        if self._scheduler is not None and not self._stopped:
            self._scheduler.schedule(name, delay, action)

    def _on_action_failed(self, name: str, error: BaseException) -> None:
        self._stop(error)

    def _listener(self) -> JobCoordinatorListener:
        return self._listeners[self.processor_id]

    # -- election ------------------------------------------------------------------------------
    def _on_predecessor_change(self) -> None:
        epoch = self._epoch
        self._schedule("elect", 0, lambda: self._elect() if epoch == self._epoch else None)

    def _elect(self) -> None:
        if self._node is None or self._elector is None or self._leading:
            return
        if self._elector.try_become_leader(self._node):
            self._leading = True
            _log.info("processor %s leads %s", self.processor_id, self.keys.root)
            self._on_become_leader()

    def _on_become_leader(self) -> None:
        assert self._zk is not None
        epoch = self._epoch

        def processors_changed(children: list[str]) -> bool:
            if self._stopped or epoch != self._epoch or not self._leading:
                return False
            self._schedule(_PROCESSOR_CHANGE, self.debounce, self._do_on_processor_change)
            return True

        ChildrenWatch(self._zk.kazoo, self.keys.processors, processors_changed)
        if self._partition_counts is not None and not self._calculator.inputs.has_durable_stores:
            self._monitor = PartitionCountMonitor(
                self._partition_counts, self._calculator.inputs.partition_counts()
            )
            self._schedule("partition-monitor", self.monitor_interval, self._check_partitions)

    def _check_partitions(self) -> None:
        if self._monitor is None or not self._leading:
            return
        counts = self._monitor.changed()
        if counts is not None:
            _log.info("input partition counts changed to %s: regenerating the job model", counts)
            self._calculator = PartitionCountMonitor.recalculate(self._calculator, counts)
            self._schedule(_PROCESSOR_CHANGE, 0, self._do_on_processor_change)
        self._schedule("partition-monitor", self.monitor_interval, self._check_partitions)

    # -- the leader's job model generation (§8.5 step 4) ---------------------------------------
    def _do_on_processor_change(self) -> None:
        if not self._leading:
            return
        epoch = self._epoch

        def opened(version: str) -> None:
            def participants_changed() -> bool:
                if self._stopped or epoch != self._epoch or version in self._settled:
                    return False
                self._schedule(f"complete-{version}", 0, lambda: self._try_complete(version))
                return True

            self._barrier.watch_participants(version, participants_changed)
            self._schedule(
                f"expire-{version}", self.consensus_timeout, lambda: self._expire(version)
            )

        version = self._publisher.publish_next(self._calculator, opened)
        if version is not None:
            _log.info("leader %s published job model version %s", self.processor_id, version)
            self._schedule("cleanup", 0, lambda: self._publisher.cleanup(KEEP_JOB_MODELS))

    def _try_complete(self, version: str) -> None:
        if self._barrier.try_complete(version) != "NEW":
            self._settled.add(version)

    def _expire(self, version: str) -> None:
        state = self._barrier.expire(version)
        self._settled.add(version)
        if state == TIMED_OUT:
            _log.warning("barrier of job model version %s timed out", version)

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
            interim = running.replace(containers={**running.containers, pid: mine.replace(tasks=kept)})
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

    # -- sessions (§8.5 step 10) ---------------------------------------------------------------
    def _on_session_state(self, state: str) -> None:
        # Called on kazoo's thread: only schedule.
        if state == KazooState.LOST:
            self._epoch += 1  # reactions already scheduled for the old session are void
            self._session_lost = True
            self._schedule("session-expired", 0, self._on_session_expired)
        elif state == KazooState.SUSPENDED:
            # A timer of its own: the scheduler thread may be blocked on the dead connection.
            with self._changed:
                if self._disconnect_timer is None and not self._stopped:
                    timer = threading.Timer(self.session_timeout, self._on_disconnected_too_long)
                    timer.daemon = True
                    timer.start()
                    self._disconnect_timer = timer
        elif state == KazooState.CONNECTED:
            self._cancel_disconnect_timer()
            if self._session_lost:
                self._schedule("new-session", 0, self._on_new_session)

    def _cancel_disconnect_timer(self) -> None:
        with self._changed:
            timer, self._disconnect_timer = self._disconnect_timer, None
        if timer is not None:
            timer.cancel()

    def _on_disconnected_too_long(self) -> None:
        with self._changed:
            self._disconnect_timer = None
        msg = (
            f"processor {self.processor_id!r} was disconnected from ZooKeeper "
            f"{self._zk.description if self._zk else ''} for more than the session timeout "
            f"({self.session_timeout:g} s)"
        )
        self._stop(CoordinationError(msg))

    def _on_session_expired(self) -> None:
        self._node = None
        self._leading = False
        if self._elector is not None:
            self._elector.resign()
        self._monitor = None
        if self._scheduler is not None:
            self._scheduler.cancel_all()
        if self._working and not self._expired:
            self._listener().on_job_model_expired()
        self._working = False
        self._expired = True
        if self._zk is not None and self._zk.kazoo.connected:
            self._on_new_session()

    def _on_new_session(self) -> None:
        if not self._session_lost or self._zk is None:
            return
        self._session_lost = False
        if self._scheduler is not None:
            self._scheduler.cancel_all()
        pid = self.processor_id
        self._node = self._registry.register(pid, self._locations[pid])
        self._registry.wait_until_unique(self._node, pid, 2 * self.session_timeout)
        _log.info("processor %s rejoined %s with a new session", pid, self.keys.root)
        self._elect()

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
        if not self._listeners:
            return
        if failure is None:
            self._listener().on_coordinator_stop()
        else:
            self._listener().on_coordinator_failure(failure)

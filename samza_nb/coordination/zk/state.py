"""What the parts of one processor's ZooKeeper coordinator share: its settings, its session and
its scheduler thread, the job's tree in ZooKeeper, and the processor it hosts.

:class:`~samza_nb.coordination.zk.coordinator.ZkJobCoordinator` is composed of the leader's
side (``leadership``), a processor's side of a version (``agreement``), session handling
(``sessions``) and commit fencing (``fencing``); each is handed this state and the parts it
calls.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from samza_nb.config import Config
from samza_nb.coordination.coordinator import JobCoordinatorListener
from samza_nb.coordination.zk.barrier import VersionBarrier
from samza_nb.coordination.zk.debounce import DebounceScheduler
from samza_nb.coordination.zk.election import LeaderElector
from samza_nb.coordination.zk.job_models import JobModelVersions
from samza_nb.coordination.zk.keys import ZkKeyBuilder
from samza_nb.coordination.zk.leader import JobModelPublisher
from samza_nb.coordination.zk.processors import ProcessorRegistry
from samza_nb.coordination.zk.task_locality import ZkTaskLocality
from samza_nb.metadata import MetadataStore
from samza_nb.metadata.zk_client import ZkClient
from samza_nb.model import LocationId

__all__ = ["PROCESSOR_CHANGE", "ZkSettings", "ZkState"]

#: The scheduler's name for the leader's reaction to a membership (or partition) change.
PROCESSOR_CHANGE = "processor-change"


class ZkSettings:
    """The ``job.coordinator.zk.*`` keys and ``job.debounce.time.ms``, in seconds."""

    def __init__(self, config: Config, connect: str | None = None) -> None:
        self.connect = connect or config.require("job.coordinator.zk.connect")
        self.session_timeout = config.get_int("job.coordinator.zk.session.timeout.ms") / 1000
        self.connection_timeout = config.get_int("job.coordinator.zk.connection.timeout.ms") / 1000
        self.consensus_timeout = config.get_int("job.coordinator.zk.consensus.timeout.ms") / 1000
        self.debounce = config.get_int("job.debounce.time.ms") / 1000
        self.startup_with_active = config.get_bool("job.coordinator.zk.enable-startup-with-active-job-model")
        self.monitor_interval = config.get_int("job.coordinator.monitor-partition-change.frequency.ms") / 1000
        self.keys = ZkKeyBuilder.for_job(config)


class ZkState:
    """One processor's session with the job's tree: set up by the coordinator's ``start``.

    ``changed`` guards the agreed model, ``stopped`` and the disconnect timer, and is notified
    when the model changes or the coordinator stops. ``epoch`` is bumped when the session is
    lost: reactions scheduled for an older session check it and do nothing.
    """

    # Set by the coordinator's ``start``.
    versions: JobModelVersions
    barrier: VersionBarrier
    registry: ProcessorRegistry
    locality: ZkTaskLocality
    publisher: JobModelPublisher

    def __init__(
        self,
        settings: ZkSettings,
        *,
        metadata: MetadataStore | None,
        processor_id: Callable[[], str],
        locations: Mapping[str, LocationId],
        listener: Callable[[], JobCoordinatorListener],
    ) -> None:
        self.settings = settings
        self.keys = settings.keys
        self.metadata = metadata
        self._processor_id = processor_id
        self._locations = locations
        self.listener = listener
        self.zk: ZkClient | None = None
        self.scheduler: DebounceScheduler | None = None
        self.elector: LeaderElector | None = None
        self.node: str | None = None  # this processor's node under processors/
        self.epoch = 0
        self.stopped = False
        self.changed = threading.Condition()

    @property
    def processor_id(self) -> str:
        return self._processor_id()

    @property
    def location(self) -> LocationId:
        return self._locations[self.processor_id]

    def schedule(self, name: str, delay: float, action: Callable[[], None]) -> None:
        """Run ``action`` on the scheduler thread after ``delay`` s (debounced by ``name``)."""
        if self.scheduler is not None and not self.stopped:
            self.scheduler.schedule(name, delay, action)

    def in_session(self, epoch: int, action: Callable[[], Any]) -> Callable[[], None]:
        """``action`` if the session of ``epoch`` is still this processor's, else nothing."""

        def run() -> None:
            if epoch == self.epoch:
                action()

        return run

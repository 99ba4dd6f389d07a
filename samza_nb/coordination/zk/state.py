"""What every part of the ZooKeeper coordinator shares: its settings, its state and its thread.

:class:`~samza_nb.coordination.zk.coordinator.ZkJobCoordinator` is made of this base, the
leader's side (``leadership``), a processor's side of a version (``agreement``), session
handling (``sessions``) and commit fencing (``fencing``); the coordinator module itself
starts and stops it.
"""

from __future__ import annotations

import threading
from abc import abstractmethod
from collections.abc import Callable, Mapping
from typing import Any

from samza_nb.config import Config
from samza_nb.coordination.agreed_model import AgreedModelCoordinator
from samza_nb.coordination.job_model_calculator import JobModelCalculator
from samza_nb.coordination.zk.barrier import VersionBarrier
from samza_nb.coordination.zk.debounce import DebounceScheduler
from samza_nb.coordination.zk.election import LeaderElector
from samza_nb.coordination.zk.job_models import JobModelVersions
from samza_nb.coordination.zk.keys import ZkKeyBuilder
from samza_nb.coordination.zk.leader import JobModelPublisher
from samza_nb.coordination.zk.partition_monitor import PartitionCountMonitor
from samza_nb.coordination.zk.processors import ProcessorRegistry, check_processor_identity
from samza_nb.coordination.zk.task_locality import ZkTaskLocality
from samza_nb.metadata import MetadataStore
from samza_nb.metadata.zk_client import ZkClient
from samza_nb.model import JobModel, LocationId

__all__ = ["ZkCoordinatorBase"]

#: The scheduler's name for the leader's reaction to a membership (or partition) change.
_PROCESSOR_CHANGE = "processor-change"


class ZkCoordinatorBase(AgreedModelCoordinator):
    """The state of a :class:`ZkJobCoordinator` and what all its parts call."""

    # Set by ``start``.
    _versions: JobModelVersions
    _barrier: VersionBarrier
    _registry: ProcessorRegistry
    _locality: ZkTaskLocality
    _publisher: JobModelPublisher

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
        #: (active version, this processor's version) → the first version between them that
        #: moved this processor's work, or None (its commits go on).
        self._moves: dict[tuple[str, str], str | None] = {}
        self._working = False  # the listener runs a model handed over by on_new_job_model
        self._settled: set[str] = set()
        self._stopped = False
        self._changed = threading.Condition()
        self._disconnect_timer: threading.Timer | None = None

    def __repr__(self) -> str:
        pid = next(iter(self._listeners), None)
        return (
            f"ZkJobCoordinator({self._zk.description if self._zk else '(not started)'!r}, "
            f"processor={pid!r}, leader={self.is_leader}, version={self._model_version})"
        )

    # -- the contract --------------------------------------------------------------------------
    def _check_processor(self, processor_id: str, location_id: LocationId) -> None:
        check_processor_identity(processor_id, location_id)

    def _coordination_place(self) -> str:
        return f"under {self.keys.root}"

    # -- scheduling ----------------------------------------------------------------------------
    def _schedule(self, name: str, delay: float, action: Callable[[], None]) -> None:
        if self._scheduler is not None and not self._stopped:
            self._scheduler.schedule(name, delay, action)

    def _on_action_failed(self, name: str, error: BaseException) -> None:
        self._stop(error)

    @abstractmethod
    def _elect(self) -> None:
        """Try to become the leader (``leadership``)."""

    @abstractmethod
    def _do_on_processor_change(self) -> None:
        """The leader's next round (``leadership``)."""

    @abstractmethod
    def _stop(self, error: BaseException | None) -> None:
        """Leave the job; ``error`` is the failure that stops the coordinator (None: asked to)."""

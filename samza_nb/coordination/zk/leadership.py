"""The leader's side of the ZooKeeper protocol (SAMZA.md §8.5 steps 3–4).

A processor becomes leader when its node is the first under ``processors/`` (the elector
watches its predecessor). The leader watches membership, reacts to it after the debounce with
a new version (computed and written by :class:`JobModelPublisher`), opens that version's
barrier and completes or expires it; it also watches input partition counts.
"""

from __future__ import annotations

import logging

from kazoo.recipe.watchers import ChildrenWatch

from samza_nb.coordination.zk._base import _PROCESSOR_CHANGE, ZkCoordinatorBase
from samza_nb.coordination.zk.barrier import TIMED_OUT
from samza_nb.coordination.zk.partition_monitor import PartitionCountMonitor
from samza_nb.errors import StreamSystemError

__all__ = ["KEEP_JOB_MODELS", "ZkLeadership"]

#: Job models and barriers kept after a new version is published (Samza keeps 10).
KEEP_JOB_MODELS = 10

_log = logging.getLogger(__name__)


class ZkLeadership(ZkCoordinatorBase):
    """Election, and the rounds a leader runs."""

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

        if self._partition_counts is not None and not self._calculator.inputs.has_durable_stores:
            self._monitor = PartitionCountMonitor(
                self._partition_counts, self._calculator.inputs.partition_counts()
            )
            # Counts read now, before the first round: this process planned the job with the
            # counts of its start, and inputs may have grown since (a leader that took over).
            self._read_partition_counts()
            self._schedule("partition-monitor", self.monitor_interval, self._check_partitions)
        ChildrenWatch(self._zk.kazoo, self.keys.processors, processors_changed)

    def _read_partition_counts(self) -> bool:
        """Expand the calculator's inputs when a partition count changed; True then."""
        assert self._monitor is not None
        try:
            counts = self._monitor.changed()
        except StreamSystemError as error:
            # As Samza's StreamPartitionCountMonitor: a system that cannot answer now (a broker
            # restarting) is asked again at the next interval; the job runs on meanwhile.
            _log.warning("reading input partition counts failed, trying again: %s", error)
            return False
        if counts is None:
            return False
        _log.info("input partition counts changed to %s: regenerating the job model", counts)
        self._calculator = PartitionCountMonitor.recalculate(self._calculator, counts)
        return True

    def _check_partitions(self) -> None:
        if self._monitor is None or not self._leading:
            return
        if self._read_partition_counts():
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

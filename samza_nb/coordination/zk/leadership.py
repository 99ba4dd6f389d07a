"""The leader's side of the ZooKeeper protocol (SAMZA.md §8.5 steps 3–4).

A processor becomes leader when its node is the first under ``processors/`` (the elector
watches its predecessor). The leader watches membership, reacts to it after the debounce with
a new version (computed and written by :class:`JobModelPublisher`), opens that version's
barrier and completes or expires it; it also watches input partition counts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from kazoo.recipe.watchers import ChildrenWatch

from samza_nb.coordination.job_model_calculator import JobModelCalculator
from samza_nb.coordination.zk.barrier import TIMED_OUT
from samza_nb.coordination.zk.partition_monitor import PartitionCountMonitor
from samza_nb.coordination.zk.state import PROCESSOR_CHANGE, ZkState
from samza_nb.errors import StreamSystemError

__all__ = ["KEEP_JOB_MODELS", "ZkLeadership"]

#: Job models and barriers kept after a new version is published (Samza keeps 10).
KEEP_JOB_MODELS = 10

_log = logging.getLogger(__name__)


class ZkLeadership:
    """Election, and the rounds a leader runs."""

    def __init__(
        self,
        state: ZkState,
        calculator: JobModelCalculator,
        partition_counts: Callable[[], Mapping[str, int]] | None,
    ) -> None:
        self._state = state
        #: The calculator of this leader's models (the partition monitor may replace it).
        self.calculator = calculator
        self._partition_counts = partition_counts
        self._monitor: PartitionCountMonitor | None = None
        self.leading = False
        #: Versions whose barrier completed or expired: nothing left to react to.
        self._settled: set[str] = set()

    # -- election ------------------------------------------------------------------------------
    def on_predecessor_change(self) -> None:
        state = self._state
        state.schedule("elect", 0, state.in_session(state.epoch, self.elect))

    def elect(self) -> None:
        state = self._state
        if state.node is None or state.elector is None or self.leading:
            return
        if state.elector.try_become_leader(state.node):
            self.leading = True
            _log.info("processor %s leads %s", state.processor_id, state.keys.root)
            self._on_become_leader()

    def resign(self) -> None:
        """The session that led is gone: no longer leader, no partition monitor."""
        self.leading = False
        if self._state.elector is not None:
            self._state.elector.resign()
        self._monitor = None

    def _on_become_leader(self) -> None:
        state = self._state
        assert state.zk is not None
        epoch = state.epoch

        def processors_changed(children: list[str]) -> bool:
            if state.stopped or epoch != state.epoch or not self.leading:
                return False
            state.schedule(PROCESSOR_CHANGE, state.settings.debounce, self.on_processor_change)
            return True

        if self._partition_counts is not None and not self.calculator.inputs.has_durable_stores:
            self._monitor = PartitionCountMonitor(self._partition_counts, self.calculator.inputs.partition_counts())
            # Counts read now, before the first round: this process planned the job with the
            # counts of its start, and inputs may have grown since (a leader that took over).
            self._read_partition_counts()
            state.schedule("partition-monitor", state.settings.monitor_interval, self._check_partitions)
        ChildrenWatch(state.zk.kazoo, state.keys.processors, processors_changed)

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
        self.calculator = PartitionCountMonitor.recalculate(self.calculator, counts)
        return True

    def _check_partitions(self) -> None:
        state = self._state
        if self._monitor is None or not self.leading:
            return
        if self._read_partition_counts():
            state.schedule(PROCESSOR_CHANGE, 0, self.on_processor_change)
        state.schedule("partition-monitor", state.settings.monitor_interval, self._check_partitions)

    # -- the leader's job model generation (§8.5 step 4) ---------------------------------------
    def on_processor_change(self) -> None:
        """The leader's next round: publish a new version and open its barrier."""
        if not self.leading:
            return
        state = self._state
        epoch = state.epoch

        def opened(version: str) -> None:
            def participants_changed() -> bool:
                if state.stopped or epoch != state.epoch or version in self._settled:
                    return False
                state.schedule(f"complete-{version}", 0, lambda: self._try_complete(version))
                return True

            state.barrier.watch_participants(version, participants_changed)
            state.schedule(f"expire-{version}", state.settings.consensus_timeout, lambda: self._expire(version))

        version = state.publisher.publish_next(self.calculator, opened)
        if version is not None:
            _log.info("leader %s published job model version %s", state.processor_id, version)
            state.schedule("cleanup", 0, lambda: state.publisher.cleanup(KEEP_JOB_MODELS))

    def barrier_timed_out(self) -> None:
        """A version's barrier timed out: a leader tries again after the debounce."""
        if self.leading:
            self._state.schedule(PROCESSOR_CHANGE, self._state.settings.debounce, self.on_processor_change)

    def _try_complete(self, version: str) -> None:
        if self._state.barrier.try_complete(version) != "NEW":
            self._settled.add(version)

    def _expire(self, version: str) -> None:
        state = self._state.barrier.expire(version)
        self._settled.add(version)
        if state == TIMED_OUT:
            _log.warning("barrier of job model version %s timed out", version)

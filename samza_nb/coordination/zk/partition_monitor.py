"""The leader's input partition-count monitor (SAMZA.md §8.5 step 2, StreamPartitionCountMonitor).

The runtime supplies a callable returning stream → partition count now; when a count differs
from the one the job's inputs were computed with, the leader regenerates the job model at once
with the inputs expanded to the new partitions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from samza_nb.coordination.job_model_calculator import JobInputs, JobModelCalculator
from samza_nb.model import SystemStreamPartition

__all__ = ["PartitionCountMonitor", "expand_inputs"]

PartitionCounts = Callable[[], Mapping[str, int]]


def expand_inputs(inputs: JobInputs, counts: Mapping[str, int]) -> JobInputs:
    """``inputs`` with every partition below the new count of each known stream.

    >>> inputs = JobInputs(frozenset({SystemStreamPartition("kafka", "in", 0)}))
    >>> sorted(ssp.partition for ssp in expand_inputs(inputs, {"in": 3}).ssps)
    [0, 1, 2]
    """
    ssps = set(inputs.ssps)
    broadcast = set(inputs.broadcast)
    samples: dict[str, SystemStreamPartition] = {}
    for ssp in sorted(inputs.ssps):
        samples.setdefault(ssp.stream, ssp)
    for stream, count in counts.items():
        sample = samples.get(stream)
        if sample is None:
            continue
        is_broadcast = any(ssp.stream == stream for ssp in inputs.broadcast)
        for partition in range(count):
            ssp = SystemStreamPartition(sample.system, stream, partition)
            ssps.add(ssp)
            if is_broadcast:
                broadcast.add(ssp)
    return dataclasses.replace(inputs, ssps=frozenset(ssps), broadcast=frozenset(broadcast))


class PartitionCountMonitor:
    """Compares the partition counts now with the last ones seen."""

    def __init__(self, current: PartitionCounts, initial: Mapping[str, int]) -> None:
        self._current = current
        self.counts = dict(initial)

    def changed(self) -> dict[str, int] | None:
        """The new counts when any stream's count changed since the last call, else None."""
        now = dict(self._current())
        if all(now.get(stream, count) == count for stream, count in self.counts.items()):
            return None
        self.counts.update(now)
        return now

    @staticmethod
    def recalculate(calculator: JobModelCalculator, counts: Mapping[str, int]) -> JobModelCalculator:
        """The same calculator over inputs expanded to ``counts``."""
        return JobModelCalculator(
            expand_inputs(calculator.inputs, counts),
            grouper=calculator.grouper,
            options=calculator.options,
            replication_factor=calculator.replication_factor,
            place_fewer_standbys=calculator.place_fewer_standbys,
        )

"""Retention of intermediate streams (Samza's ``delete.committed.messages``).

Data of an intermediate stream partition is deleted once every task consuming it has committed
past it. This needs every consumer's checkpoint, so it has exactly one owner per job: the
processor of the coordinator that decides job models (the embedded coordinator's first
processor; the ZooKeeper or Azure leader's processor). It reads the checkpoints from the
metadata store, where every processor of every process commits.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from samza_nb.model import SystemStreamPartition
from samza_nb.runtime.checkpoints import Checkpoint
from samza_nb.runtime.context import system_of
from samza_nb.runtime.epoch import ssp_key
from samza_nb.runtime.faults import reached as kill_point

if TYPE_CHECKING:
    from samza_nb.plan.execution_plan import ExecutionPlan

__all__ = ["apply_retention"]


def apply_retention(
    plan: ExecutionPlan,
    task_ssps: Mapping[str, Iterable[SystemStreamPartition]],
    checkpoints: Mapping[str, Checkpoint],
) -> None:
    """Delete intermediate data every consuming task's checkpoint has passed."""
    lowest: dict[tuple[str, int], int] = {}
    for task, ssps in task_ssps.items():
        checkpoint = checkpoints.get(task) or Checkpoint()
        for ssp in ssps:
            if plan.streams[ssp.stream].kind != "intermediate":
                continue
            offset = checkpoint.offsets.get(ssp_key(ssp.stream, ssp.partition), 0)
            place = (ssp.stream, ssp.partition)
            lowest[place] = min(lowest.get(place, offset), offset)
    for (stream_id, partition), offset in lowest.items():
        if offset > 0:
            system_of(plan, stream_id).delete_before(stream_id, partition, offset)
            kill_point("in-retention")

"""Hot standby tasks at runtime: keep a copy of an active task's stores warm elsewhere.

A standby task (``Standby-<task>-<replica>``, SAMZA.md §4) processes no input. Each epoch of
its processor it reads its active task's *committed* checkpoint, which carries the changelog
offset every store reflects, and applies the changelog records it lacks — up to that offset,
committed epochs only — into the store the active task would use at the standby's location,
``{store_root}/{location}/{active task}/{store}``. When the active task's processor dies, the
task is promoted onto the standby's processor and opens that very store: it is at most a few
epochs behind, so the restore replays only the changelog's tail, whatever the state's size.
On a Spark cluster the active task's epochs keep off its standbys' hosts, and a promoted task's
epochs go to its former standby's host (runtime/executors/host_placement.py, :func:`standby_locations`).

Standbys run on the processor's own thread, next to its active tasks' epoch (a processor
holding only standbys still runs epochs). Their progress (:class:`StandbyProgress`) is what
``status()``, the views and the CLI show as standby lag.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from samza_nb.grouping.standby import active_task_name
from samza_nb.model import JobModel, LocationId, TaskMode, TaskModel
from samza_nb.runtime.checkpoints import Checkpoint, CheckpointStore
from samza_nb.runtime.epoch import ssp_key
from samza_nb.runtime.plan_systems import default_system_of
from samza_nb.runtime.task.stores import ChangelogRef, TaskStore, store_path

if TYPE_CHECKING:
    from samza_nb.plan.execution_plan import ExecutionPlan

__all__ = [
    "StandbyProgress",
    "StandbyTasks",
    "apply_standby",
    "standby_lag",
    "standby_locations",
    "standby_progress",
]


def standby_locations(model: JobModel) -> dict[str, set[LocationId]]:
    """Active task -> the locations of the processors that hold its standbys in ``model``."""
    found: dict[str, set[LocationId]] = {}
    for container in model.containers.values():
        if container.location_id is None:
            continue
        for name, task in container.tasks.items():
            if task.mode is TaskMode.STANDBY:
                found.setdefault(active_task_name(name), set()).add(container.location_id)
    return found


@dataclass
class StandbyProgress:
    """Where one standby task stands after its last step."""

    task: str
    active: str
    processor: str
    location: str
    #: Epochs of the active task the standby's stores reflect.
    applied_seq: int = 0
    #: Per changelog SSP key: the offset the standby's store reflects.
    applied_offsets: dict[str, int] | None = None
    #: Records applied over the standby's life, and the seconds it took.
    applied_records: int = 0
    seconds: float = 0.0
    steps: int = 0
    #: Stores rebuilt from the changelog's start, and why.
    rebuilt: list[str] | None = None


def _targets(plan: ExecutionPlan, task: TaskModel, checkpoint: Checkpoint) -> dict[str, int]:
    """Store → the changelog offset the active's committed checkpoint reflects."""
    targets = {}
    for store in plan.store_names:
        key = ssp_key(plan.changelog_stream_id(store), task.changelog_partition)
        if key in checkpoint.offsets:
            targets[store] = int(checkpoint.offsets[key])
    return targets


def apply_standby(
    plan: ExecutionPlan,
    task: TaskModel,
    checkpoint: Checkpoint,
    progress: StandbyProgress,
    *,
    store_root: str,
) -> int:
    """One step of a standby: apply its active's changelog up to ``checkpoint``; returns the
    records applied (0 when already there)."""
    system = default_system_of(plan)
    targets = _targets(plan, task, checkpoint)
    if system is None or not targets:
        # Nothing to follow (a task without stores): the standby is where its active is, and
        # is not behind it (else its processor would step it again at once, forever).
        progress.applied_seq = checkpoint.seq
        return 0
    started = time.perf_counter()
    applied = 0
    offsets = dict(progress.applied_offsets or {})
    for store_name, upto in sorted(targets.items()):
        stream_id = plan.changelog_stream_id(store_name)
        key = ssp_key(stream_id, task.changelog_partition)
        if progress.applied_seq == checkpoint.seq and offsets.get(key) == upto:
            continue
        path = store_path(store_root, progress.location, progress.active, store_name)
        store = TaskStore(
            store_name, Path(path), ChangelogRef(system, stream_id, task.changelog_partition),
            progress.active, producer="",
        )
        try:
            followed = store.follow(checkpoint.seq, upto)
        finally:
            store.close()
        if followed is None:  # held open elsewhere: this step leaves the standby where it is
            return applied
        applied += followed
        if store.rebuilt_because:
            progress.rebuilt = [*(progress.rebuilt or []), store.rebuilt_because]
        offsets[key] = upto
    progress.applied_offsets = offsets
    progress.applied_seq = checkpoint.seq
    progress.applied_records += applied
    progress.seconds += time.perf_counter() - started
    progress.steps += 1
    return applied


def standby_lag(
    plan: ExecutionPlan, task: TaskModel, progress: StandbyProgress | None, checkpoint: Checkpoint
) -> dict[str, int]:
    """How far a standby is behind its active's committed checkpoint: ``records`` (changelog
    records not yet applied) and ``epochs``."""
    offsets = (progress.applied_offsets if progress is not None else None) or {}
    records = 0
    for store, upto in _targets(plan, task, checkpoint).items():
        key = ssp_key(plan.changelog_stream_id(store), task.changelog_partition)
        records += max(0, upto - offsets.get(key, 0))
    applied_seq = progress.applied_seq if progress is not None else 0
    return {"records": records, "epochs": max(0, checkpoint.seq - applied_seq)}


def standby_progress(
    existing: Mapping[str, StandbyProgress], task: TaskModel, processor: str, location: str
) -> StandbyProgress:
    """The progress record of a standby task on this processor (a new one when it moved)."""
    progress = existing.get(task.name)
    if progress is not None and progress.processor == processor and progress.location == location:
        return progress
    return StandbyProgress(task.name, active_task_name(task.name), processor, location)


#: A standby task behind its active, with its progress and the checkpoint it catches up to.
Behind = tuple[TaskModel, StandbyProgress, Checkpoint]


class StandbyTasks:
    """One processor's standby tasks: which are behind their actives' committed checkpoints,
    and their catching up, one step each per epoch of the processor. ``progress`` (standby
    task name → :class:`StandbyProgress`) is what the job's status and views read."""

    def __init__(
        self, plan: ExecutionPlan, checkpoints: CheckpointStore, processor_id: str, store_root: str
    ) -> None:
        self.plan = plan
        self.checkpoints = checkpoints
        self.processor_id = processor_id
        self.store_root = store_root
        self.progress: dict[str, StandbyProgress] = {}

    def behind(self, standbys: list[TaskModel], location: str) -> list[Behind]:
        """The ones of ``standbys`` (this processor's now, at ``location``) that lag their
        actives; the progress of standbys no longer here is dropped."""
        behind = []
        for task in standbys:
            progress = standby_progress(self.progress, task, self.processor_id, location)
            self.progress[task.name] = progress
            checkpoint = self.checkpoints.read_committed(progress.active)
            lag = standby_lag(self.plan, task, progress, checkpoint)
            if lag["records"] or lag["epochs"]:
                behind.append((task, progress, checkpoint))
        for gone in set(self.progress) - {task.name for task in standbys}:
            del self.progress[gone]
        return behind

    def catch_up(self, behind: list[Behind]) -> list[StandbyProgress]:
        """One step of each standby ``behind``; the progress of those that stepped."""
        for task, progress, checkpoint in behind:
            apply_standby(self.plan, task, checkpoint, progress, store_root=self.store_root)
        return [progress for _, progress, _ in behind if progress.steps]

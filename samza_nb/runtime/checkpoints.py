"""Checkpoints and epoch plans in the job's metadata store (JSON values, never pickled).

A checkpoint is what the driver commits after a task's epoch: the number of committed epochs
(``seq``), the next offset of every SSP and the task's control state. An epoch plan is written
*before* an epoch runs (its read bounds and processing time) so that a retried epoch reads
exactly the same messages at the same time and produces exactly the same outputs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from samza_nb.metadata import MetadataStore, NamespacedMetadataStore
from samza_nb.metadata.base import Fence

__all__ = ["CHECKPOINT_NAMESPACE", "EPOCH_NAMESPACE", "Checkpoint", "CheckpointStore", "EpochPlan"]

CHECKPOINT_NAMESPACE = "samza-nb-checkpoint-v1"
EPOCH_NAMESPACE = "samza-nb-epoch-v1"


@dataclass
class Checkpoint:
    seq: int = 0
    offsets: dict[str, int] = field(default_factory=dict)
    control: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> bytes:
        return json.dumps(
            {"seq": self.seq, "offsets": self.offsets, "control": self.control}, sort_keys=True
        ).encode()

    @classmethod
    def from_json(cls, data: bytes) -> Checkpoint:
        fields = json.loads(data)
        return cls(int(fields["seq"]), dict(fields["offsets"]), dict(fields.get("control", {})))


@dataclass
class EpochPlan:
    """What an epoch reads: per SSP up to ``bounds`` (an offset) and at most ``max_messages``.

    ``plan_id`` is new for every plan and tags everything the epoch appends, so a replay of
    this plan (after a crash, drain epochs included) rewrites exactly what the crashed attempt
    wrote and is deduplicated, while no epoch of another incarnation can ever match it;
    ``run_id`` is the deployment the plan was made in (a replay re-sends its drain messages
    under it).
    """

    seq: int
    now_ms: int
    bounds: dict[str, int]
    drain: bool = False
    max_messages: int = 50_000
    plan_id: str = ""
    run_id: str = ""

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "seq": self.seq,
                "nowMs": self.now_ms,
                "bounds": self.bounds,
                "drain": self.drain,
                "maxMessages": self.max_messages,
                "planId": self.plan_id,
                "runId": self.run_id,
            },
            sort_keys=True,
        ).encode()

    @classmethod
    def from_json(cls, data: bytes) -> EpochPlan:
        fields = json.loads(data)
        return cls(
            int(fields["seq"]),
            int(fields["nowMs"]),
            dict(fields["bounds"]),
            bool(fields["drain"]),
            int(fields.get("maxMessages", 50_000)),
            str(fields.get("planId", "")),
            str(fields.get("runId", "")),
        )


class CheckpointStore:
    """Per-task checkpoints and pending epoch plans of one job.

    Checkpoints written through this object are cached: the processors of one process read
    their own commits without a store round trip. :meth:`read_all` always reads the store (it
    sees the commits of other processes too).
    """

    def __init__(
        self,
        store: MetadataStore,
        *,
        fence: Fence | None = None,
        guard: Callable[[Any], None] | None = None,
    ):
        """``fence``: commit only while the job's lease generation is this one (JobLease);
        ``guard``: a distributed coordinator's check added to every commit transaction."""
        self._fence = fence
        self._guard = guard
        self._checkpoints = NamespacedMetadataStore(store, CHECKPOINT_NAMESPACE)
        self._plans = NamespacedMetadataStore(store, EPOCH_NAMESPACE)
        self._cache: dict[str, Checkpoint] = {}
        #: Task -> a checkpoint seq with no pending plan in the store. Only the task's owner
        #: writes its plans (through write_plans, which drops the entry), so an idle processor
        #: asks the store once, not on every look for new messages.
        self._planless: dict[str, int] = {}

    def read(self, task: str) -> Checkpoint:
        cached = self._cache.get(task)
        if cached is not None:
            return cached
        raw = self._checkpoints.get(task)
        checkpoint = Checkpoint.from_json(raw) if raw is not None else Checkpoint()
        self._cache[task] = checkpoint
        return checkpoint

    def read_committed(self, task: str) -> Checkpoint:
        """The checkpoint as committed in the store now, bypassing (and not filling) the
        cache: a standby follows an active task another process may commit."""
        raw = self._checkpoints.get(task)
        return Checkpoint.from_json(raw) if raw is not None else Checkpoint()

    def forget(self, tasks: Iterable[str]) -> None:
        """Drop cached checkpoints: a task this process gets (back) from another process may
        have been committed there since, so its next read goes to the store."""
        for task in tasks:
            self._cache.pop(task, None)
            self._planless.pop(task, None)

    def cached(self) -> dict[str, Checkpoint]:
        """The checkpoints this process read or wrote, by task."""
        return dict(self._cache)

    def read_all(self) -> dict[str, Checkpoint]:
        return {task: Checkpoint.from_json(raw) for task, raw in self._checkpoints.all().items()}

    def write(self, task: str, checkpoint: Checkpoint) -> None:
        self._checkpoints.put(task, checkpoint.to_json())
        self._cache[task] = checkpoint

    def write_all(self, checkpoints: dict[str, Checkpoint]) -> None:
        """Commit several tasks' checkpoints at once (one transaction where the store has them)."""
        entries = {task: cp.to_json() for task, cp in checkpoints.items()}
        if self._guard is not None:
            self._checkpoints.put_all(entries, fence=self._fence, guard=self._guard)
        else:
            self._checkpoints.put_all(entries, fence=self._fence)
        self._cache.update(checkpoints)

    def pending_plan(self, task: str, seq: int) -> EpochPlan | None:
        if self._planless.get(task) == seq:
            return None
        raw = self._plans.get(task)
        plan = EpochPlan.from_json(raw) if raw is not None else None
        if plan is None or plan.seq != seq:
            self._planless[task] = seq
            return None
        return plan

    def write_plans(self, plans: Mapping[str, EpochPlan]) -> None:
        """Persist the plans of several tasks' next epochs in one transaction."""
        entries = {task: plan.to_json() for task, plan in plans.items()}
        for task in plans:
            self._planless.pop(task, None)
        if self._guard is not None:
            # Fenced like a commit: a processor whose session died while it planned must not
            # replace the plan its task's new owner runs (and then write outputs under its own).
            self._plans.put_all(entries, guard=self._guard)
        else:
            self._plans.put_all(entries)

    def check_fence(self) -> None:
        """Raise JobLeaseError when this process's commits are fenced now: the fence and the
        guard are checked by a write of nothing."""
        if self._guard is not None:
            self._checkpoints.put_all({}, fence=self._fence, guard=self._guard)
        elif self._fence is not None:
            self._checkpoints.put_all({}, fence=self._fence)

    def flush(self) -> None:
        self._checkpoints.flush()

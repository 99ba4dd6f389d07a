"""The per-epoch work of one processor on the driver side: plan, commit, lag.

Before an epoch, :meth:`EpochDriver.assignments` fixes what each task reads (its start offsets
from the committed checkpoint, bounds from the newest offsets, a message limit) and persists
that as an :class:`EpochPlan`, so a retried epoch reads exactly the same messages at the same
processing time. After the epoch, :meth:`EpochDriver.commit` writes every task's checkpoint
(offsets after its outputs are durable) in one metadata-store transaction and turns a task's
failure into a :class:`TaskError`.
"""

from __future__ import annotations

import logging
import math
import operator
import pickle
import uuid
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from samza_nb.coordination.lease import JobLease
from samza_nb.errors import CheckpointError, JobError, StreamNotFoundError, TaskError
from samza_nb.model import SystemStreamPartition, TaskModel
from samza_nb.runtime.checkpoints import Checkpoint, CheckpointStore, EpochPlan
from samza_nb.runtime.epoch import EpochAssignment, EpochResult, ssp_key
from samza_nb.runtime.offsets import OffsetPolicy, past_end_warning
from samza_nb.runtime.plan_systems import default_system_of, system_of
from samza_nb.runtime.task.user_code import describe, source_line

if TYPE_CHECKING:
    from samza_nb.plan.execution_plan import ExecutionPlan

__all__ = ["EpochDriver", "newest_offsets", "processing_time", "producer_counts", "ssp_lags"]

_log = logging.getLogger(__name__)

#: A drain reads the whole intermediate backlog in one epoch (in bounded fetches).
_UNLIMITED = 2**62


def processing_time(reading: object) -> int:
    """An epoch's processing time from what the job's clock returned, checked before anything
    records it (a pending epoch's plan keeps it, and a restart replays that plan)."""
    try:
        if isinstance(reading, bool):
            raise TypeError
        # An int, anything that is one (numpy's), or a finite float of milliseconds.
        if isinstance(reading, float) and math.isfinite(reading):
            now = int(reading)
        else:
            now = operator.index(reading)  # type: ignore[arg-type]  # TypeError when it is none
    except TypeError:
        now = -1
    if now < 0:
        msg = (
            f"the job's clock returned {reading!r} ({type(reading).__name__}); run(clock=...) "
            "must return the processing time in epoch milliseconds, an int >= 0"
        )
        raise JobError(msg)
    return now


def newest_offsets(plan: ExecutionPlan) -> dict[str, int]:
    """Per consumed SSP key, the offset the next message appended to it will get."""
    newest: dict[str, int] = {}
    for stream_id in plan.consumed_streams:
        try:
            offsets = system_of(plan, stream_id).newest_offsets(stream_id)
        except StreamNotFoundError:
            continue  # not created yet (a distributed job's leader creates it): nothing to read
        for partition, offset in offsets.items():
            newest[ssp_key(stream_id, partition)] = offset
    return newest


def producer_counts(
    plan: ExecutionPlan, task_ssps: Mapping[str, Iterable[SystemStreamPartition]]
) -> dict[str, int]:
    """SAMZA.md §5.5 over active tasks only: per intermediate stream, the tasks consuming the
    streams that feed it (each sends it one control message per kind)."""
    consumers: dict[str, set[str]] = {}
    for task, ssps in task_ssps.items():
        for ssp in ssps:
            consumers.setdefault(ssp.stream, set()).add(task)
    counts: dict[str, int] = {}
    for stream_id in plan.intermediate_streams:
        producers: set[str] = set()
        for source in plan.producer_streams(stream_id):
            producers |= consumers.get(source, set())
        counts[stream_id] = len(producers)
    return counts


def ssp_lags(
    task_ssps: Mapping[str, Iterable[SystemStreamPartition]],
    checkpoints: Mapping[str, Checkpoint],
    newest: Mapping[str, int],
) -> dict[tuple[str, SystemStreamPartition], int]:
    """Per (task, SSP): the newest offset minus the committed one, as Kafka reports consumer
    lag (on Kafka an offset gap is not a message, so this is an upper bound there)."""
    lags = {}
    for task, ssps in task_ssps.items():
        checkpoint = checkpoints.get(task) or Checkpoint()
        for ssp in ssps:
            key = ssp_key(ssp.stream, ssp.partition)
            lags[(task, ssp)] = max(0, newest.get(key, 0) - checkpoint.offsets.get(key, 0))
    return lags


def _ended_ssps(checkpoint: Checkpoint, task: TaskModel) -> set[str]:
    """SSP keys of ``task`` whose end of stream its checkpoint recorded."""
    eos = checkpoint.control.get("eos", {}) if checkpoint.control else {}
    return {
        ssp_key(ssp.stream, ssp.partition)
        for ssp in task.ssps
        if (eos.get(str(ssp)) or {}).get("done")
    }


def _recorded_inputs(checkpoint: Checkpoint | None) -> dict[str, str]:
    """The incarnations of the inputs ``checkpoint``'s offsets are of (runtime/offsets.py)."""
    return checkpoint.control.get("inputs", {}) if checkpoint and checkpoint.control else {}


def _stale_end_of_stream(task: str, key: str, checkpointed: int, newest: Mapping[str, int]) -> str:
    """Why a job cannot start over a stream that ended past where the stream now ends."""
    return (
        f"task {task!r}: {key} ended at offset {checkpointed} when the job last ran, but the "
        f"stream now ends at {newest.get(key, 0)}: it was recreated since, and the job's "
        f"checkpoints and state belong to the old one (reading on would drop the new messages "
        f"as after the end of stream); start the job over with `samza-nb reset "
        f"MODULE:APP --yes` (reset_job(app.plan()) in Python), then run it again"
    )


class _Planned(NamedTuple):
    """A task's next epoch as planned: the checkpoint it starts from and its plan (``new``:
    made now, to be persisted before the epoch runs; else the pending plan it replays)."""

    task: TaskModel
    checkpoint: Checkpoint
    ssps: list[tuple[str, int]]
    start_offsets: dict[str, int]
    plan: EpochPlan
    new: bool
    rewound: bool = False
    inputs: dict[str, str] | None = None


class EpochDriver:
    """Plans and commits the epochs of the tasks of one processor."""

    def __init__(
        self,
        plan: ExecutionPlan,
        checkpoints: CheckpointStore,
        *,
        run_id: str,
        store_root: str,
        lease: JobLease | None = None,
    ) -> None:
        self.plan = plan
        self.lease = lease
        self.checkpoints = checkpoints
        self.run_id = run_id
        self.store_root = store_root
        config = plan.config
        self.max_messages = config.get_int("task.max.epoch.messages")
        self.skip_errors = config.get_bool("task.errors.skip")
        self.watermark_idle_timeout_ms = config.get_int("task.watermark.idle.timeout.ms")
        self.watermark_quorum = config.get_float("task.watermark.quorum.size.percentage")
        self.producer = f"{plan.app_name}-{plan.job_id}"
        #: Operators sampled inside the tasks (``job.show(op_id)``): op id → messages kept.
        self.samples: dict[str, int] = {}
        self.offsets = OffsetPolicy(plan)
        #: Changelog SSP keys looked at for a changelog made again (:meth:`_look_at_changelogs`).
        self._changelogs_seen: set[str] = set()
        #: Those found made again, with the checkpoint sequence number they were found behind.
        self._changelogs_made_again: dict[str, int] = {}

    def assignments(
        self,
        tasks: Iterable[TaskModel],
        location_id: str,
        *,
        now_ms: int,
        newest: Mapping[str, int],
        drain: bool,
        counts: dict[str, int],
    ) -> list[EpochAssignment]:
        """The next epoch of each of ``tasks``: the pending plan of an epoch that did not
        commit, else a new plan. The new plans are persisted before the epoch runs, all in one
        metadata-store transaction (one synced write per epoch, not one per task)."""
        self.offsets.look_at_inputs()
        planned = [self._plan(task, now_ms=now_ms, newest=newest, drain=drain) for task in tasks]
        self.offsets.report()
        self._look_at_changelogs(planned)
        new_plans = {p.task.name: p.plan for p in planned if p.new}
        if new_plans:
            self.checkpoints.write_plans(new_plans)
        return [self._assignment(p, location_id, counts) for p in planned]

    def _plan(self, task: TaskModel, *, now_ms: int, newest: Mapping[str, int], drain: bool) -> _Planned:
        checkpoint = self.checkpoints.read(task.name)
        ssps = sorted((ssp.stream, ssp.partition) for ssp in task.ssps)
        start_offsets = {}
        moved = False  # a reset or an out-of-range checkpoint: a pending plan no longer applies
        rewound = False  # an input starts below its checkpoint
        ended = _ended_ssps(checkpoint, task)
        recorded = _recorded_inputs(checkpoint)
        for stream_id, partition in ssps:
            key = ssp_key(stream_id, partition)
            checkpointed = checkpoint.offsets.get(key)
            start_offsets[key], reset = self.offsets.start(
                stream_id, partition, checkpointed, newest,
                task=task.name, recorded=recorded.get(stream_id), ended=key in ended,
            )
            if reset and checkpointed is not None and start_offsets[key] < checkpointed and key in ended:
                raise CheckpointError(_stale_end_of_stream(task.name, key, checkpointed, newest))
            moved = moved or reset
            rewound = rewound or (checkpointed is not None and start_offsets[key] < checkpointed)
        # The incarnations this epoch's offsets are of, committed with its checkpoint: the
        # inputs as they are now (a made-again input started afresh above), else as recorded.
        inputs = {}
        for stream_id in {stream_id for stream_id, _partition in ssps}:
            known = self.offsets.incarnation(stream_id) or recorded.get(stream_id)
            if known is not None:
                inputs[stream_id] = known
        # Read even when it no longer applies: the plan written next replaces what was read
        # (on Azure the write is conditional on it).
        pending = self.checkpoints.pending_plan(task.name, checkpoint.seq)
        plan = None if moved else pending
        if plan is not None:
            return _Planned(task, checkpoint, ssps, start_offsets, plan, new=False, rewound=rewound, inputs=inputs)
        plan = self._new_plan(checkpoint.seq, ssps, start_offsets, now_ms, newest, drain)
        return _Planned(task, checkpoint, ssps, start_offsets, plan, new=True, rewound=rewound, inputs=inputs)

    def _look_at_changelogs(self, planned: Iterable[_Planned]) -> None:
        """Once per task and store in this process: warn, one line per changelog, when a
        checkpoint names a changelog offset past the changelog's newest one (the changelog was
        made again: broker data lost). The task's store keeps what it holds and logs on from the
        new end (runtime/task/stores.py); a store rebuilt elsewhere has only what is logged since."""
        system = default_system_of(self.plan)
        if system is None:
            return
        past_end: dict[str, list[tuple[int, int, int]]] = {}
        ends: dict[str, dict[int, int]] = {}
        for p in planned:
            partition = p.task.changelog_partition
            for store in self.plan.store_names:
                stream_id = self.plan.changelog_stream_id(store)
                key = ssp_key(stream_id, partition)
                if key in self._changelogs_seen:
                    continue
                self._changelogs_seen.add(key)
                checkpointed = p.checkpoint.offsets.get(key)
                if checkpointed is None:
                    continue
                if stream_id not in ends:
                    try:
                        ends[stream_id] = system.newest_offsets(stream_id)
                    except StreamNotFoundError:
                        ends[stream_id] = {}
                end = ends[stream_id].get(partition, 0)
                if checkpointed > end:
                    past_end.setdefault(stream_id, []).append((partition, checkpointed, end))
                    self._changelogs_made_again[key] = p.checkpoint.seq
        for stream_id, partitions in sorted(past_end.items()):
            _log.warning(
                "%s",
                past_end_warning(
                    f"changelog {stream_id} (system {system.name!r})",
                    partitions,
                    "each store keeps what it holds where it is kept and logs on from the new end; "
                    "a store rebuilt from the changelog has only what was logged since",
                ),
            )

    def _assignment(self, planned: _Planned, location_id: str, counts: dict[str, int]) -> EpochAssignment:
        task, checkpoint, plan = planned.task, planned.checkpoint, planned.plan
        return EpochAssignment(
            task_name=task.name,
            producer=f"{self.producer}/{task.name}@{plan.plan_id}",
            seq=checkpoint.seq,
            now_ms=plan.now_ms,
            run_id=plan.run_id or self.run_id,
            location_id=location_id,
            store_root=self.store_root,
            changelog_partition=task.changelog_partition,
            ssps=planned.ssps,
            start_offsets=planned.start_offsets,
            bounds=plan.bounds,
            control=checkpoint.control,
            producer_counts=counts,
            max_messages=plan.max_messages,
            drain=plan.drain,
            skip_errors=self.skip_errors,
            watermark_idle_timeout_ms=self.watermark_idle_timeout_ms,
            watermark_quorum=self.watermark_quorum,
            samples=dict(self.samples),
            rewound=planned.rewound,
            inputs=planned.inputs or {},
            changelogs_made_again=[
                key
                for key in (
                    ssp_key(self.plan.changelog_stream_id(store), task.changelog_partition)
                    for store in self.plan.store_names
                )
                if self._changelogs_made_again.get(key) == checkpoint.seq
            ],
        )

    def _new_plan(
        self,
        seq: int,
        ssps: list[tuple[str, int]],
        start_offsets: dict[str, int],
        now_ms: int,
        newest: Mapping[str, int],
        drain: bool,
    ) -> EpochPlan:
        bounds = {}
        for stream_id, partition in ssps:
            key = ssp_key(stream_id, partition)
            start = start_offsets[key]
            if drain and self.plan.streams[stream_id].kind == "input":
                bounds[key] = start  # Drain: no new source data after what was fetched.
            else:
                bounds[key] = max(start, newest.get(key, start))
        # A drain crosses one shuffle per epoch: each task reads its whole intermediate backlog.
        limit = _UNLIMITED if drain else self.max_messages
        return EpochPlan(seq, now_ms, bounds, drain, limit, uuid.uuid4().hex[:16], self.run_id)

    def check_lease(self) -> None:
        """Raise JobLeaseError when a newer incarnation of the job took the lease: a fenced
        processor stops before it reads or writes anything (its commits would fail anyway)."""
        if self.lease is not None:
            self.lease.check()

    def inputs_made_again(self, tasks: Iterable[str]) -> bool:
        """Whether an input of one of ``tasks`` was deleted and made again since the task last
        committed on it (runtime/offsets.py): its next epoch reads the new stream, even when
        its offsets are behind the old checkpoint and the task looks caught up."""
        self.offsets.look_at_inputs()
        cached = self.checkpoints.cached()
        for task in tasks:
            recorded = _recorded_inputs(cached.get(task))
            if any(self.offsets.made_again(stream_id, was) for stream_id, was in recorded.items()):
                return True
        return False

    def has_pending_plan(self, task: str) -> bool:
        return self.checkpoints.pending_plan(task, self.checkpoints.read(task).seq) is not None

    def commit(self, results: list[EpochResult]) -> tuple[list[EpochResult], TaskError | None]:
        """Commit the checkpoints of the tasks that succeeded; returns them and, when a task
        failed, its TaskError (nothing past the failing offset is committed)."""
        committed: dict[str, Checkpoint] = {}
        succeeded = []
        failure: dict[str, Any] | None = None
        for result in results:
            if result.error is not None:
                failure = failure or result.error
                continue
            committed[result.task_name] = Checkpoint(result.seq, dict(result.offsets), dict(result.control))
            succeeded.append(result)
        if committed:
            self.checkpoints.write_all(committed)
            self.checkpoints.flush()
        return succeeded, None if failure is None else task_error(failure)


def task_error(failure: dict[str, Any]) -> TaskError:
    """The TaskError for a failed task epoch, with the original exception as its cause."""
    raised_at = failure.get("raised_at")
    declared = failure.get("user_location")
    if raised_at:
        filename, lineno, _line = raised_at
        where = f" (raised at {describe(filename, lineno)}" + (
            f"; operator declared at {declared})" if declared else ")"
        )
    else:
        where = f" (operator declared at {declared})" if declared else ""
    if failure.get("ssp") is not None:
        place = f" on {failure['ssp']} at offset {failure['offset']}"
        kept = "nothing past this offset was committed"
    else:
        place = " while firing timers or control messages, or saving state"
        kept = "nothing of this epoch was committed"
    hint = (
        " (set task.errors.skip=true to skip such messages)" if failure.get("user_code") else ""
    )
    msg = (
        f"{failure['what']} failed in task {failure['task']!r}{place}: {failure['error']}{where}; "
        f"{kept}{hint}"
    )
    error = TaskError(
        msg,
        op_id=failure.get("op_id"),
        task=failure["task"],
        ssp=failure.get("ssp"),
        offset=failure.get("offset"),
    )
    error.worker_traceback = failure.get("traceback")
    error.operator_location = declared
    if raised_at:
        filename, lineno, line = raised_at
        error.raised_at = (filename, int(lineno), line or source_line(filename, int(lineno)))
    cause = failure.get("cause")
    if cause is not None:
        try:
            error.__cause__ = pickle.loads(cause)
        except Exception:  # noqa: S110 - an exception class missing here: the message has it
            pass
    return error

"""``task.processing.guarantee=exactly-once``: one Kafka transaction per task epoch.

At-least-once (the default, as Samza) commits a task's checkpoint in the job's metadata store
after its outputs are durable. Exactly-once moves the checkpoint into the Kafka transaction of
the task's epoch, as Samza's ``KafkaCheckpointManager`` keeps checkpoints in a checkpoint topic
(SAMZA.md §7): the task's transactional producer (``transactional.id`` =
``<app>-<job id>-<task>``) writes the epoch's outputs, intermediate records, changelog records
and, last, its checkpoint record to the one-partition checkpoint topic of Samza's name and
record format (runtime/checkpoint_topic.py) of the Kafka system ``task.checkpoint.system``
(default ``job.default.system``), then commits. That topic is the only source of checkpoints:
:class:`TopicCheckpointStore` reads them (``read_committed``) and the driver's commit only
records what the tasks committed. Its local RocksDB write comes after the commit, so a store
is never ahead of a transaction that did not commit (such a store is rebuilt from the
changelog).

On a broker that honours transactions a reader with ``isolation.level=read_committed`` (every
reader of :class:`~samza_nb.systems.KafkaSystem`) never sees the records of an epoch that did
not commit, and a restarted task replays that epoch's plan. On Tansu — which neither hides
aborted nor open transactions from ``read_committed`` readers (it does fence a stale producer:
its next produce fails with PRODUCER_FENCED) — the same outcome rests on the checkpoint record
coming last, after every other record of the epoch is acknowledged: a visible checkpoint
implies every record of its epoch is in the log, and a replayed epoch's copies carry the same
(producer, seq, ordinal) headers, which samza_nb's reads drop. External ``read_committed``
consumers of a Tansu topic may therefore see an aborted epoch's records; samza_nb's own reads
(windows, outputs through ``Job.collect``, changelog restores) count each input once. They read
uncommitted on Tansu: its last stable offset, when it keeps one, can stay behind a transaction
for good (systems/kafka/clients.py).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from samza_nb.errors import ConfigError, StreamSystemError
from samza_nb.runtime.checkpoint_topic import (
    CheckpointRecords,
    carry_over_legacy_topic,
    checkpoint_topic,
    read_topic_checkpoints,
)
from samza_nb.runtime.checkpoints import Checkpoint, CheckpointStore
from samza_nb.runtime.faults import reached as kill_point
from samza_nb.runtime.plan_systems import default_system_of, system_of
from samza_nb.systems.base import Record
from samza_nb.systems.kafka import KafkaSystem
from samza_nb.systems.kafka.transaction import KafkaTransaction

if TYPE_CHECKING:
    from collections.abc import Callable

    from samza_nb.metadata import MetadataStore
    from samza_nb.metadata.base import Fence
    from samza_nb.plan.execution_plan import ExecutionPlan
    from samza_nb.runtime.epoch import EpochAssignment

__all__ = [
    "AT_LEAST_ONCE",
    "EXACTLY_ONCE",
    "EpochCommittedElsewhere",
    "TopicCheckpointStore",
    "checkpoint_system",
    "checkpoint_topic",
    "close_task_producers",
    "exactly_once",
    "open_checkpoint_store",
    "read_topic_checkpoints",
    "task_transaction",
]

#: (checkpoint topic, task) -> the seq this process last committed for it.
_COMMITTED: dict[tuple[str, str], int] = {}
#: (cluster settings fingerprint, transactional id) -> the task's kept transactional producer.
_PRODUCERS: dict[tuple[str, str], KafkaTransaction] = {}
#: The same keys -> a producer being opened in the background (TaskTransaction.prepare).
_OPENING: dict[tuple[str, str], Future[KafkaTransaction]] = {}
_OPENERS: dict[int, ThreadPoolExecutor] = {}
_T = TypeVar("_T")
_log = logging.getLogger(__name__)

AT_LEAST_ONCE = "at-least-once"
EXACTLY_ONCE = "exactly-once"


def exactly_once(plan: ExecutionPlan) -> bool:
    """Whether ``task.processing.guarantee`` is exactly-once (checked)."""
    value = (plan.config.get_str("task.processing.guarantee") or AT_LEAST_ONCE).strip().lower()
    if value not in (AT_LEAST_ONCE, EXACTLY_ONCE):
        msg = f"task.processing.guarantee={value!r}: use {AT_LEAST_ONCE!r} or {EXACTLY_ONCE!r}"
        raise ConfigError(msg)
    return value == EXACTLY_ONCE


def checkpoint_system(plan: ExecutionPlan) -> KafkaSystem:
    """The Kafka system whose transactions hold the tasks' outputs and checkpoints; every
    stream a task writes (outputs, intermediate streams, changelogs) must live there."""
    wanted = plan.config.get_str("task.checkpoint.system")
    system: Any = None
    if wanted:
        for info in plan.streams.values():
            if info.system.name == wanted:
                system = info.system
        default = plan.default_system
        if system is None and default is not None and default.name == wanted:
            system = default
        if system is None:
            msg = f"task.checkpoint.system={wanted!r} is not the system of any stream of the job"
            raise ConfigError(msg)
    else:
        system = default_system_of(plan)
    if not isinstance(system, KafkaSystem):
        name = getattr(system, "name", None)
        msg = (
            f"task.processing.guarantee=exactly-once needs a Kafka checkpoint system; "
            f"task.checkpoint.system / job.default.system is {name!r} "
            f"({type(system).__name__}), not a KafkaSystem: put the job's streams on Kafka "
            f"(samza_nb.systems.KafkaSystem), or use task.processing.guarantee=at-least-once"
        )
        raise ConfigError(msg)
    for stream_id, info in sorted(plan.streams.items()):
        if info.kind in ("input", "side_input"):
            continue
        other = system_of(plan, stream_id)
        if not isinstance(other, KafkaSystem) or other.settings.fingerprint() != system.settings.fingerprint():
            msg = (
                f"task.processing.guarantee=exactly-once: stream {stream_id!r} is written to system "
                f"{other.name!r}, but one Kafka transaction covers only the cluster of the "
                f"checkpoint system {system.name!r}; put the job's outputs there"
            )
            raise ConfigError(msg)
    return system


class TopicCheckpointStore(CheckpointStore):
    """Checkpoints from the checkpoint topic; epoch plans stay in the metadata store.

    The tasks commit their checkpoints in their transactions: :meth:`write_all` only records
    them in this process's cache (a lost lease stops the processor before its next epoch, and
    a stale transactional producer is fenced by its successor's ``init_transactions``). Reads
    go through the process's tail of the topic (runtime/checkpoint_topic.py): each costs the
    records appended since the last one.
    """

    def __init__(
        self,
        store: MetadataStore,
        system: KafkaSystem,
        topic: str,
        *,
        fence: Fence | None = None,
        guard: Callable[[Any], None] | None = None,
    ):
        super().__init__(store, fence=fence, guard=guard)
        self.system = system
        self.topic = topic
        self.grouper_factory: str | None = None

    def _topic(self) -> dict[str, Checkpoint]:
        return read_topic_checkpoints(self.system, self.topic, grouper_factory=self.grouper_factory)

    def read(self, task: str) -> Checkpoint:
        cached = self._cache.get(task)
        if cached is not None:
            return cached
        for name, checkpoint in self._topic().items():
            self._cache.setdefault(name, checkpoint)
        return self._cache.setdefault(task, Checkpoint())

    def read_committed(self, task: str) -> Checkpoint:
        """The task's newest checkpoint in the topic (a standby follows an active task that
        another process may commit), bypassing the cache."""
        return self._topic().get(task) or Checkpoint()

    def read_all(self) -> dict[str, Checkpoint]:
        return self._topic()

    def write(self, task: str, checkpoint: Checkpoint) -> None:
        self._cache[task] = checkpoint

    def write_all(self, checkpoints: dict[str, Checkpoint]) -> None:
        self._cache.update(checkpoints)

    def flush(self) -> None:
        return None


def open_checkpoint_store(
    plan: ExecutionPlan,
    store: MetadataStore,
    *,
    fence: Fence | None = None,
    guard: Callable[[Any], None] | None = None,
) -> CheckpointStore:
    """The job's checkpoint store: the metadata store (at-least-once) or the Kafka checkpoint
    topic (exactly-once, created here: one partition, compacted)."""
    if not exactly_once(plan):
        return CheckpointStore(store, fence=fence, guard=guard)
    system = checkpoint_system(plan)
    topic = checkpoint_topic(plan)
    if system.partition_count(topic) is None:
        system.create_stream(topic, 1, compacted=True)
    records = CheckpointRecords.for_plan(plan, system.name)
    carry_over_legacy_topic(plan, system, records)
    opened = TopicCheckpointStore(store, system, topic, fence=fence, guard=guard)
    opened.grouper_factory = records.grouper_factory
    return opened


class EpochCommittedElsewhere(Exception):
    """Another attempt of the task epoch committed it while this one ran (found once this
    attempt's new producer had ended that attempt's transaction); nothing of this attempt was
    committed. ``checkpoint``: what the other attempt committed."""

    def __init__(self, checkpoint: Checkpoint):
        super().__init__(f"task epoch committed by another attempt (checkpoint seq {checkpoint.seq})")
        self.checkpoint = checkpoint


class TaskTransaction:
    """One task epoch's Kafka transaction (executor side).

    The task's transactional producer is kept for the next epoch in this process (opening one
    costs ``init_transactions``); when another process opened the same ``transactional.id``
    since (a task moved, or Spark ran it in another Python worker), the kept producer is
    fenced: :meth:`run` then drops it and runs the transaction once more with a new producer,
    which fences the other.
    """

    def __init__(self, plan: ExecutionPlan, assignment: EpochAssignment):
        self.system = checkpoint_system(plan)
        self.topic = checkpoint_topic(plan)
        self.records = CheckpointRecords.for_plan(plan, self.system.name)
        self.assignment = assignment
        self.transactional_id = f"{plan.app_name}-{plan.job_id}-{assignment.task_name}"
        self._key = (self.system.settings.fingerprint(), self.transactional_id)
        self._transaction: KafkaTransaction | None = None

    def prepare(self) -> None:
        """Start opening the task's producer in the background when this process keeps none:
        ``init_transactions`` waits on the broker, and the epoch reads and processes its input
        meanwhile. The producer still counts as new in :meth:`run` (the topic is read after its
        ``init_transactions``, as with one opened there)."""
        if self._key in _PRODUCERS or self._key in _OPENING:
            return
        _OPENING[self._key] = _opener().submit(KafkaTransaction, self.system, self.transactional_id)

    def _open(self, *, fresh: bool) -> KafkaTransaction:
        kept = None if fresh else _PRODUCERS.get(self._key)
        if kept is None:
            opening = _OPENING.pop(self._key, None)
            if opening is not None and fresh:
                _close_when_open(opening)
            elif opening is not None:
                kept = opening.result()  # its StreamSystemError, when the opening failed
        if kept is None:
            kept = KafkaTransaction(self.system, self.transactional_id)
        _PRODUCERS[self._key] = kept
        self._transaction = kept
        return kept

    def run(self, body: Callable[[TaskTransaction], _T]) -> _T:
        """``begin``, ``body(self)`` (its appends and :meth:`append_checkpoint`), ``commit``;
        retried once with a new producer when a kept one failed (fenced).

        A new producer's ``init_transactions`` ends any transaction another attempt of this
        task epoch has open (an orphaned Spark task of a failed job, a frozen process): it is
        either committed by then or never will be. So with a new producer the topic is read
        again first; when that attempt committed the epoch, :class:`EpochCommittedElsewhere` is
        raised and nothing of this attempt is committed."""
        for fresh in (False, True):
            reused = not fresh and self._key in _PRODUCERS
            self._open(fresh=fresh).begin()
            if not reused:
                done = self._ahead_in_topic()
                if done is not None:
                    self.discard()
                    raise EpochCommittedElsewhere(done)
            try:
                result = body(self)
                kill_point("mid-transaction")
                self._committed().commit()
            except StreamSystemError:
                self.discard()
                if not reused:
                    raise
                continue
            except BaseException:
                self.discard()
                raise
            _COMMITTED[(self.topic, self.assignment.task_name)] = self.assignment.seq + 1
            kill_point("after-transaction-commit")
            return result
        msg = f"transaction {self.transactional_id!r}: unreachable"
        raise StreamSystemError(msg)

    def _committed(self) -> KafkaTransaction:
        if self._transaction is None:
            msg = f"transaction {self.transactional_id!r} is not open"
            raise StreamSystemError(msg)
        return self._transaction

    def append(self, stream_id: str, partition: int, records: Sequence[Record], producer_seq: int) -> None:
        self._committed().append(
            stream_id, partition, records, producer=self.assignment.producer, producer_seq=producer_seq
        )

    def committed_elsewhere(self) -> Checkpoint | None:
        """The task's checkpoint in the topic when it is ahead of the assignment (an attempt
        whose result never reached the driver committed this epoch already), read before the
        epoch's work. The topic is read only when this process keeps the task's producer and
        either did not commit the task's previous epoch itself or runs the epoch again after
        lost workers (another worker may have committed it then). Without a kept producer,
        :meth:`run` reads it anyway once its new producer's ``init_transactions`` has fenced
        every other attempt, and only that read can count: one here would be a second."""
        if self._key not in _PRODUCERS:
            return None
        if self.assignment.retry == 0 and _COMMITTED.get((self.topic, self.assignment.task_name)) == self.assignment.seq:
            return None
        return self._ahead_in_topic()

    def _ahead_in_topic(self) -> Checkpoint | None:
        """The task's checkpoint in the topic when it is past this epoch. What this process
        read of the topic is confirmed by reading it afresh before it counts: a worker that
        outlived a reset of the job (its topic deleted and made again elsewhere) must not
        take the old topic's checkpoints for this run's."""
        for afresh in (False, True):
            checkpoint = read_topic_checkpoints(
                self.system, self.topic, grouper_factory=self.records.grouper_factory, afresh=afresh
            ).get(self.assignment.task_name)
            if checkpoint is None or checkpoint.seq <= self.assignment.seq:
                return None
        return checkpoint

    def append_checkpoint(self, checkpoint: Checkpoint, changelogs: Mapping[str, int | None] | None = None) -> Checkpoint:
        """The epoch's last record, after the epoch's changelog records are acknowledged
        (the commit waits for the rest); returns the checkpoint as written.

        ``changelogs``: per changelog SSP key of the task's stores, the offset the store
        reflected before this epoch. The checkpoint names, for each, the offset past this
        epoch's changelog records (known once they are acknowledged), so a hot standby
        applies the changelog up to exactly what this transaction commits."""
        transaction = self._committed()
        changelogs = changelogs or {}
        partitions = {}
        for key in changelogs:
            stream_id, _, partition = key.rpartition("#")
            partitions[key] = (stream_id, int(partition))
        # Their ends are known once acknowledged; the outputs' acknowledgements are waited
        # for by the commit (a small epoch that changed no store spares a round trip).
        if any(transaction.appended_to(*where) for where in partitions.values()):
            transaction.flush()
        offsets = dict(checkpoint.offsets)
        for key, before in changelogs.items():
            end = transaction.acknowledged_end(*partitions[key])
            if end is not None or before is not None:
                offsets[key] = end if end is not None else int(before or 0)
        written = Checkpoint(checkpoint.seq, offsets, checkpoint.control)
        self.append(self.topic, 0, [self.records.record(self.assignment.task_name, written)], self.assignment.seq)
        return written

    def discard(self) -> None:
        """Abort what is open and forget the producer (after a failure)."""
        opening = _OPENING.pop(self._key, None)
        if opening is not None:
            _close_when_open(opening)
        transaction = _PRODUCERS.pop(self._key, None) or self._transaction
        self._transaction = None
        if transaction is not None:
            try:
                transaction.close()
            except StreamSystemError:
                _log.debug("closing transaction %s after a failure failed", self.transactional_id)


def _opener() -> ThreadPoolExecutor:
    """This process's threads that open producers (made after a fork, never inherited)."""
    pool = _OPENERS.get(os.getpid())
    if pool is None:
        pool = _OPENERS[os.getpid()] = ThreadPoolExecutor(4, thread_name_prefix="samza-nb-producer-open")
    return pool


def _close_when_open(opening: Future[KafkaTransaction]) -> None:
    """Close a producer opened in the background that is no longer wanted, once it is open."""

    def close(done: Future[KafkaTransaction]) -> None:
        if done.exception() is None:
            try:
                done.result().close()
            except StreamSystemError as error:
                _log.debug("closing an unused transactional producer failed: %s", error)

    opening.add_done_callback(close)


def close_task_producers(plan: ExecutionPlan) -> None:
    """Close the transactional producers this process kept for the job's tasks (its last
    processor stopped)."""
    prefix = f"{plan.app_name}-{plan.job_id}-"
    for key in [key for key in _OPENING if key[1].startswith(prefix)]:
        _close_when_open(_OPENING.pop(key))
    for key in [key for key in _PRODUCERS if key[1].startswith(prefix)]:
        transaction = _PRODUCERS.pop(key)
        try:
            transaction.close()
        except StreamSystemError as error:
            _log.warning("closing the transactional producer %s failed: %s", key[1], error)


def task_transaction(plan: ExecutionPlan, assignment: EpochAssignment) -> TaskTransaction | None:
    """The epoch's transaction under exactly-once, else None."""
    return TaskTransaction(plan, assignment) if exactly_once(plan) else None

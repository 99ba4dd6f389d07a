"""One task, one epoch: what runs inside a Spark partition (or in-process, for tests).

A processor hands a task an :class:`EpochAssignment` (its SSPs, the committed offsets, the
bounds to read to, the epoch's processing time). The task opens its stores, pushes every
message and control message through the whole operator DAG, appends its outputs (tagged with
(task, epoch) so a retried epoch never appends twice), flushes its stores together with the new
offsets, and returns an :class:`EpochResult`. The processor commits the checkpoint afterwards.
Under ``task.processing.guarantee=exactly-once`` the task itself commits its outputs,
changelog records and checkpoint in one Kafka transaction (:mod:`samza_nb.runtime.task.exactly_once`).

A task epoch never raises: whatever fails (a user function, a user serde, a store, the log) is
returned as the result's ``error`` with the operator or store, the SSP and the offset.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from samza_nb.errors import CheckpointError
from samza_nb.plan.combining import partial_message_count
from samza_nb.runtime.checkpoints import Checkpoint
from samza_nb.runtime.epoch import EpochAssignment, EpochResult, ssp_key
from samza_nb.runtime.faults import reached as kill_point
from samza_nb.runtime.offsets import after_deletion
from samza_nb.runtime.plan_systems import system_of
from samza_nb.runtime.task.context import TaskContext
from samza_nb.runtime.task.control import (
    control_from_payload,
    control_of_run,
)
from samza_nb.runtime.task.decoding import (
    BatchDecoder,
    StreamDecoders,
    holds_control_messages,
    serde_error,
    stream_decoders,
)
from samza_nb.runtime.task.dedup_state import DEDUP, dedup_states, resume_dedup
from samza_nb.runtime.task.exactly_once import (
    EpochCommittedElsewhere,
    TaskTransaction,
    task_transaction,
)
from samza_nb.runtime.task.graph import build_operator_graph
from samza_nb.runtime.task.operators import OperatorImpl, Receiver, TaskOperators, UserFunctionError
from samza_nb.runtime.task.sampling import tap_operators
from samza_nb.runtime.task.side_inputs import read_side_input
from samza_nb.runtime.task.task_control import TaskControl
from samza_nb.runtime.task.task_failure import failed_epoch
from samza_nb.systems.base import MessageKind, Record, StreamSystem
from samza_nb.systems.embedded import EmbeddedSystem

if TYPE_CHECKING:
    from samza_nb.plan.execution_plan import ExecutionPlan

__all__ = ["run_task_epoch"]

_log = logging.getLogger(__name__)

_READ_CHUNK = 50_000
#: Messages decoded and run through the chain at a time. A stored batch holds up to 10,000:
#: decoding a slice and running it while its messages are still in the CPU's cache costs about
#: 430 ns an event for the quickstart's decode, enrich, filter and encode, against 570 ns for
#: whole 10,000-message batches (the decoded messages no longer fit in a core's 2 MB cache).
_DECODE_SLICE = 1024


class _Input(NamedTuple):
    """An input stream as a task epoch reads it, set up once: its system, its input operator,
    what takes its messages (one; a decoded batch in one call, the compiled chain after the
    operator when it has one; how many of the last batch went in) and its serde's decoders."""

    system: StreamSystem
    impl: OperatorImpl
    push: Receiver
    run_batch: Callable[[list[Any]], None]
    entered: Callable[[], int]
    serde: Any
    decoders: StreamDecoders


class _TaskRun:
    """The body of one task epoch."""

    def __init__(self, plan: ExecutionPlan, assignment: EpochAssignment):
        self.plan = plan
        self.a = assignment
        self.context = TaskContext(plan, assignment)
        self.started = time.perf_counter()
        self.offsets = dict(assignment.start_offsets)
        self.messages_in: dict[str, int] = {}
        #: What retention deleted before this epoch read it (runtime/offsets.py after_deletion).
        self.deleted_unread: list[str] = []

    # -- setup -----------------------------------------------------------------------------
    def setup(self) -> None:
        plan, a, context = self.plan, self.a, self.context
        control = control_of_run(a.control, a.run_id, rewound=a.rewound)
        self.control = TaskControl(plan, a, context, control)
        task_streams = {stream_id for stream_id, _ in a.ssps}
        impls, self.inputs = build_operator_graph(plan.input_operators, context, task_streams)
        context.operators = impls
        self.control.inputs = self.inputs
        self.samples = tap_operators(impls, a.samples)
        self.systems = {stream_id: system_of(plan, stream_id) for stream_id in task_streams}
        self.reading = {
            stream_id: self._input(stream_id) for stream_id in sorted(task_streams - set(plan.side_inputs))
        }
        self.operators = TaskOperators(impls)
        self.operators.restore(control.get("operators", {}))
        # Stores used by table side inputs are opened like every other store.
        for table_id in plan.tables:
            context.table(table_id)

    def _input(self, stream_id: str) -> _Input:
        impl = self.inputs[stream_id]
        serde = self.plan.streams[stream_id].serde
        return _Input(self.systems[stream_id], impl, *impl.feeds(), serde, stream_decoders(serde))

    def open_stores(self) -> dict[str, Any] | None:
        """Open every store; returns the stored metadata when *all* stores already hold this
        epoch's result (a retry after a crash between store flush and checkpoint commit)."""
        metas = {name: store.open(self.a.seq) for name, store in self.context.stores.items()}
        if not metas:
            return None
        ahead = [meta for meta in metas.values() if int(meta.get("seq", 0)) == self.a.seq + 1]
        if len(ahead) == len(metas) and all(m.get("bounds") == self.a.bounds for m in ahead):
            return ahead[0]
        for name, meta in metas.items():
            if int(meta.get("seq", 0)) != self.a.seq:
                self.context.stores[name].restore(self.a.seq)
        return None

    # -- processing ------------------------------------------------------------------------
    def process(self) -> None:
        a, plan = self.a, self.plan
        self.operators.load()
        side_inputs = set(plan.side_inputs)
        ordered = sorted(
            a.ssps,
            key=lambda ssp: (
                0 if ssp[0] in side_inputs else 1 if plan.streams[ssp[0]].kind == "intermediate" else 2,
                ssp,
            ),
        )
        for stream_id, partition in ordered:
            key = ssp_key(stream_id, partition)
            start = self.offsets.get(key, 0)
            bound = a.bounds.get(key, start)
            if stream_id in side_inputs:
                self.offsets[key] = read_side_input(self.plan, self.context, stream_id, partition, start, bound)
            else:
                self._read(stream_id, partition, key, start, bound)
            if a.drain and plan.streams[stream_id].kind == "input" and key not in self.control.injected:
                self.control.inject_drain(stream_id, partition, key)
        if a.drain:  # end-of-stream may have come from producers before the drain did
            for stream_id, partition in a.ssps:
                if plan.streams[stream_id].kind == "intermediate":
                    self.control.count_ended_producers(stream_id, partition)
        self.context.position = None
        self.operators.end_epoch(a.now_ms)

    def _read(self, stream_id: str, partition: int, key: str, start: int, bound: int) -> None:
        if bound <= start:
            return
        system, input_impl, push, run_batch, entered, serde, decoders = self.reading[stream_id]
        decode_batch, decode_kv, decode_value = decoders
        planned_on = self.a.inputs.get(stream_id)
        if planned_on is not None and system.incarnation(stream_id) != planned_on:
            # Made again since the epoch was planned: its offsets are of the old stream. Read
            # nothing; the next epoch starts the new stream afresh (runtime/offsets.py).
            return
        resume_dedup(system, self.a, stream_id, partition)
        context = self.context
        remaining = self.a.max_messages
        count = 0
        offset = start
        user = MessageKind.USER
        while offset < bound and remaining > 0:
            try:
                fetched = system.fetch(stream_id, partition, offset, bound, min(_READ_CHUNK, remaining))
            except BaseException:  # a stored batch that does not read: named by where it is
                context.position = (key, offset)
                raise
            if fetched.deleted_below is not None:
                try:
                    reads_on, note = after_deletion(
                        self.plan, self.a.task_name, stream_id, partition, offset, fetched.deleted_below
                    )
                except CheckpointError:
                    context.position = (key, offset)
                    raise
                self.deleted_unread.append(note)
                if not reads_on:
                    offset = bound
                    break
            for first, records in fetched.batches:
                size = len(records)
                remaining -= size
                if not holds_control_messages(records):
                    done = self._run_user_messages(records, size, decode_batch, run_batch, entered, key, first)
                    count += done
                    if done == size:
                        continue
                    # A message did not decode: the rest goes one by one, to skip or name it.
                    records = records[done:]
                    first += done
                    size -= done
                # The hot loop: the position is computed only when something fails or a
                # control message arrives; the decode and the fused operator chain are plain
                # calls (CPython's try is free until it raises).
                index = -1
                try:
                    for kind, rkey, value, _ts in records:
                        index += 1
                        if kind == user:
                            try:
                                message = (
                                    decode_kv(rkey, value) if decode_value is None
                                    else None if value is None  # no value (a Kafka tombstone): None, as Samza passes it
                                    else decode_value(value)
                                )
                            except Exception as error:
                                if context.skip_errors:
                                    # A partial aggregate stands for the messages it folded.
                                    lost = partial_message_count(value)
                                    context.skipped += lost
                                    input_impl.skipped += lost
                                    continue
                                error = serde_error(serde, value, error)
                                raise UserFunctionError(input_impl.op_id, error, None) from error
                            push(message)
                        else:
                            count -= 1
                            context.position = (key, first + index)
                            self.control.receive(stream_id, partition, control_from_payload(kind, value))
                except BaseException:
                    context.position = (key, first + index)
                    raise
                count += size
            if fetched.next_offset <= offset:
                break
            offset = fetched.next_offset
        input_impl.messages_in += count
        self.offsets[key] = offset
        self.messages_in[stream_id] = self.messages_in.get(stream_id, 0) + count

    def _run_user_messages(
        self,
        records: Sequence[Any],
        size: int,
        decode_batch: BatchDecoder,
        run_batch: Callable[[list[Any]], None],
        entered: Callable[[], int],
        key: str,
        first: int,
    ) -> int:
        """Decode a batch of user messages and run them through the input's chain a slice at
        a time; how many went through before a slice did not decode (all of them, usually)."""
        done = 0
        while done < size:
            piece = records[done : done + _DECODE_SLICE] if size > _DECODE_SLICE else records
            try:
                messages = decode_batch(piece)
            except Exception:  # the caller decodes the rest one by one
                return done
            try:
                run_batch(messages)
            except BaseException:
                self.context.position = (key, first + done + max(entered() - 1, 0))
                raise
            done += len(piece)
        return done

    # -- finishing -------------------------------------------------------------------------
    def control_snapshot(self) -> dict[str, Any]:
        dedup = dedup_states(self.systems, self.a, self.offsets)
        return {
            "runId": self.a.run_id,
            **self.control.snapshot(),
            "operators": self.operators.snapshot(),
            **({"inputs": dict(self.a.inputs)} if self.a.inputs else {}),
            **({DEDUP: dedup} if dedup else {}),
        }

    def write_outputs(self, transaction: TaskTransaction | None = None) -> dict[str, int]:
        """Append the epoch's buffered outputs: through ``transaction`` (exactly-once), else
        each embedded log's batches in one of its transactions (a failing write leaves none of
        the epoch's batches behind) and other systems' batch by batch."""
        a = self.a
        out: dict[str, int] = {}
        embedded: dict[int, tuple[EmbeddedSystem, list[tuple[str, int, Any]]]] = {}
        for stream_id, writer in sorted(self.context.writers.items()):
            system = system_of(self.plan, stream_id)
            plain = not isinstance(system, EmbeddedSystem)
            for partition, buffer in sorted(writer.buffers.items()):
                if buffer:
                    records: Sequence[Any] = buffer.records()
                    if plain:  # the embedded log takes the columns; other systems get Records
                        records = [Record(*record) for record in records]
                    if transaction is not None:
                        transaction.append(stream_id, partition, records, a.seq)
                    elif isinstance(system, EmbeddedSystem):
                        embedded.setdefault(id(system), (system, []))[1].append((stream_id, partition, records))
                    else:
                        system.append(
                            stream_id, partition, records, producer=a.producer, producer_seq=a.seq
                        )
            out[stream_id] = writer.count
        for system, batches in embedded.values():
            system.append_all(batches, producer=a.producer, producer_seq=a.seq)
        return out

    def flush_stores(self, control: dict[str, Any]) -> None:
        self.operators.save()
        for store in self.context.stores.values():
            store.flush(self._store_meta(control), self.a.seq)

    def _store_meta(self, control: dict[str, Any]) -> dict[str, Any]:
        return {
            "seq": self.a.seq + 1,
            "offsets": self.offsets,
            "control": control,
            "bounds": self.a.bounds,
        }

    def commit_transaction(self, transaction: TaskTransaction, control: dict[str, Any]) -> dict[str, int]:
        """Exactly-once: outputs, changelog records and the checkpoint in one Kafka
        transaction; the local stores are written only after it committed."""
        self.operators.save()

        def body(open_transaction: TaskTransaction) -> dict[str, int]:
            messages_out = self.write_outputs(open_transaction)
            kill_point("after-output-append")
            changelogs = {}
            for name, store in self.context.stores.items():
                changelogs[ssp_key(self.plan.changelog_stream_id(name), self.a.changelog_partition)] = store.changelog_offset
                store.append_changelog(self.a.seq, open_transaction)
            open_transaction.append_checkpoint(Checkpoint(self.a.seq + 1, dict(self.offsets), control), changelogs)
            return messages_out

        messages_out = transaction.run(body)
        for store in self.context.stores.values():
            store.write_local(self._store_meta(control))
        return messages_out

    def close(self, *, keep_stores: bool = False) -> None:
        """Close the task's stores (in a resident worker, ``keep_stores`` keeps them open for
        the task's next epoch) and drop its buffered records."""
        for name, store in self.context.stores.items():
            try:
                store.close(keep=keep_stores)
            except Exception as error:  # each store closes even when another failed to
                # Its writes were flushed and committed before: nothing is lost, but a store
                # left open keeps its RocksDB lock until this process ends.
                _log.warning("task %s: closing store %r failed: %s", self.context.task_name, name, error)
        # The operators' closures and the context refer to each other; the buffered records
        # go now rather than when the cycle collector finds them.
        for writer in self.context.writers.values():
            writer.clear()

    def result(self, control: dict[str, Any], messages_out: dict[str, int], replayed: bool) -> EpochResult:
        context, states = self.context, self.control
        # A task that reads no SSP but side inputs never ends nor drains.
        reads = bool(states.ssps)
        stores = context.stores.values()
        restored = sum(store.restored_records for store in stores)
        return EpochResult(
            task_name=self.a.task_name,
            seq=self.a.seq + 1,
            offsets={**self.offsets, **context.changelog_offsets()},
            control=control,
            end_of_stream=reads and states.eos.all_end_of_stream(),
            drained=reads and states.drains.are_all_streams_drained(),
            messages_in=self.messages_in,
            messages_out=messages_out,
            operator_counts=self.operators.counts(),
            operator_skipped={op_id: impl.skipped for op_id, impl in self.operators.impls.items() if impl.skipped},
            operator_dropped={op_id: impl.dropped for op_id, impl in self.operators.impls.items() if impl.dropped},
            skipped=self.context.skipped,
            restored_records=restored,
            restore_seconds=sum(store.restore_seconds for store in stores),
            restores=sum(store.restores for store in stores),
            full_restores=sum(store.full_restores for store in stores),
            restored_bytes=sum(store.restored_bytes for store in stores),
            seconds=time.perf_counter() - self.started,
            replayed=replayed,
            rebuilt=[store.rebuilt_because for store in stores if store.rebuilt_because],
            deleted_unread=self.deleted_unread,
            samples={op_id: list(buffer) for op_id, buffer in self.samples.items() if buffer},
        )


def run_task_epoch(plan: ExecutionPlan, assignment: EpochAssignment) -> EpochResult:
    """Run one epoch of one task; never raises (a failure is in the result's ``error``)."""
    run = _TaskRun(plan, assignment)
    transaction: TaskTransaction | None = None
    succeeded = False
    try:
        transaction = task_transaction(plan, assignment)
        if transaction is not None:
            transaction.prepare()
            done = transaction.committed_elsewhere()
            if done is not None:  # an earlier attempt committed this epoch: report it
                run.setup()
                run.offsets = dict(done.offsets)
                return run.result(dict(done.control), {}, replayed=True)
        run.setup()
        applied = run.open_stores()
        if applied is not None:
            run.offsets = dict(applied["offsets"])
            return run.result(dict(applied["control"]), {}, replayed=True)
        run.process()
        if assignment.drain:
            kill_point("in-drain-epoch")
        control = run.control_snapshot()
        if transaction is not None:
            try:
                messages_out = run.commit_transaction(transaction, control)
            except EpochCommittedElsewhere as other:
                # Report the other attempt's commit; this attempt's store updates are not
                # written (the stores close, and catch up from the changelog when reopened).
                run.offsets = dict(other.checkpoint.offsets)
                return run.result(dict(other.checkpoint.control), {}, replayed=True)
        else:
            messages_out = run.write_outputs()
            kill_point("after-output-append")
            run.flush_stores(control)
        result = run.result(control, messages_out, replayed=False)
        succeeded = True
        return result
    except Exception as error:  # every failure is reported with its place
        return failed_epoch(run.a, run.context.position, error)
    finally:
        try:
            run.close(keep_stores=succeeded)
        except Exception as error:  # noqa: BLE001 - the epoch's own result or failure stands
            # Its writes were flushed and committed (or the epoch failed and is run again):
            # a failed close loses nothing, and must not hide an epoch's failure.
            _log.warning("task %s: closing the task epoch failed: %s", assignment.task_name, error)

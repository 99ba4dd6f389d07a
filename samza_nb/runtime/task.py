"""One task, one epoch: what runs inside a Spark partition.

The driver hands a task an :class:`EpochAssignment` (its SSPs, the committed offsets, the
upper bounds to read to, the epoch's processing time). The task opens its stores, pushes every
message and control message through the whole operator DAG, appends its outputs (tagged with
(task, epoch) so a retried epoch never appends twice), flushes its stores together with the new
offsets, and returns an :class:`EpochResult`. The driver commits the checkpoint afterwards.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from samza_nb.errors import SerdeError
from samza_nb.model import SystemStream, SystemStreamPartition
from samza_nb.plan.kv import KV
from samza_nb.plan.operators import (
    JoinOperatorSpec,
    WindowOperatorSpec,
)
from samza_nb.plan.serdes import KVSerde
from samza_nb.plan.tables import LocalTable
from samza_nb.runtime.control import (
    LONG_MAX,
    ControlMessage,
    DrainMessage,
    DrainStates,
    EndOfStreamMessage,
    EndOfStreamStates,
    WatermarkMessage,
    WatermarkStates,
    aggregate_partition,
    control_from_payload,
    control_to_payload,
)
from samza_nb.runtime.operators import UserFunctionError, build_operator_graph
from samza_nb.runtime.stores import ChangelogRef, TaskStore, store_path
from samza_nb.systems.base import MessageKind
from samza_nb.systems.partitioning import partition_for_key

__all__ = [
    "EpochAssignment",
    "ssp_key",
    "EpochResult",
    "TaskContext",
    "changelog_stream_id",
    "default_system",
    "run_task_epoch",
    "store_names",
]

_encode_batch = msgspec.msgpack.Encoder().encode
_READ_CHUNK = 50_000
_KEY_PARTITION_CACHE_LIMIT = 100_000


def default_system(plan: Any) -> Any:
    """The system hosting intermediate streams and changelogs (the first input's system unless
    an intermediate stream says otherwise)."""
    for info in plan.streams.values():
        if info.kind == "intermediate":
            return info.system
    for info in plan.streams.values():
        if info.kind == "input":
            return info.system
    for info in plan.streams.values():
        return info.system
    msg = "the application has no streams"
    raise ValueError(msg)


def store_names(plan: Any) -> list[str]:
    """Every store a task of ``plan`` has: windows (op id), joins (op id -L/-R), tables."""
    names: set[str] = set(plan.tables)
    for spec in plan.operators.values():
        if isinstance(spec, WindowOperatorSpec):
            names.add(spec.op_id)
        elif isinstance(spec, JoinOperatorSpec):
            names.update((f"{spec.op_id}-L", f"{spec.op_id}-R"))
    return sorted(names)


def changelog_stream_id(plan: Any, store: str) -> str:
    return f"{plan.app_name}-{plan.job_id}-{store}-changelog"


@dataclass
class EpochAssignment:
    """What the driver tells a task about one epoch (plain data: shipped to executors)."""

    task_name: str
    producer: str
    seq: int
    now_ms: int
    run_id: str
    location_id: str
    store_root: str
    changelog_partition: int
    ssps: list[tuple[str, int]]
    start_offsets: dict[str, int]
    bounds: dict[str, int]
    control: dict[str, Any]
    producer_counts: dict[str, int]
    drain: bool = False
    skip_errors: bool = False


@dataclass
class EpochResult:
    """What a task returns to the driver after one epoch."""

    task_name: str
    seq: int
    offsets: dict[str, int]
    control: dict[str, Any]
    end_of_stream: bool = False
    drained: bool = False
    messages_in: dict[str, int] = field(default_factory=dict)
    messages_out: dict[str, int] = field(default_factory=dict)
    operator_counts: dict[str, int] = field(default_factory=dict)
    skipped: int = 0
    restored_records: int = 0
    restore_seconds: float = 0.0
    restores: int = 0
    seconds: float = 0.0
    replayed: bool = False
    error: dict[str, Any] | None = None


def ssp_key(stream_id: str, partition: int) -> str:
    return f"{stream_id}#{partition}"


class _StreamWriter:
    """Buffers one epoch's messages to one stream, per partition."""

    def __init__(self, context: TaskContext, stream_id: str, partitions: int):
        self.context = context
        self.stream_id = stream_id
        self.partitions = partitions
        self.buffers: dict[int, list[tuple[int, bytes | None, bytes, int | None]]] = {}
        self._key_partitions: dict[bytes, int] = {}
        self._next = hash((context.task_name, context.seq, stream_id)) % partitions
        self.count = 0

    def write_to(self, partition: int, key: bytes | None, value: bytes) -> None:
        buffer = self.buffers.get(partition)
        if buffer is None:
            buffer = self.buffers[partition] = []
        buffer.append((MessageKind.USER, key, value, None))
        self.count += 1

    def write_keyed(self, key: bytes | None, value: bytes) -> None:
        if key is None:
            self.write_to(0, None, value)
            return
        partition = self._key_partitions.get(key)
        if partition is None:
            partition = partition_for_key(key, self.partitions)
            if len(self._key_partitions) < _KEY_PARTITION_CACHE_LIMIT:
                self._key_partitions[key] = partition
        self.write_to(partition, key, value)

    def write_unkeyed(self, value: bytes) -> None:
        partition = self._next % self.partitions
        self._next += 1
        self.write_to(partition, None, value)

    def send_control_to(self, partition: int, message: ControlMessage) -> None:
        buffer = self.buffers.setdefault(partition, [])
        buffer.append((message.kind, None, control_to_payload(message), None))

    def send_to_aggregate(self, message: ControlMessage) -> None:
        self.send_control_to(aggregate_partition(self.stream_id, self.partitions), message)

    def broadcast_to_others(self, message: ControlMessage, partition: int) -> None:
        for other in range(self.partitions):
            if other != partition:
                self.send_control_to(other, message)


class _TableView:
    """A LocalTable inside one task: serdes over the table's store."""

    def __init__(self, table: LocalTable, store: TaskStore):
        self._key_serde = table.key_serde
        self._value_serde = table.value_serde
        self.store = store

    def get(self, key: Any) -> Any:
        raw = self.store.get(self._key_serde.to_bytes(key))  # type: ignore[union-attr]
        return None if raw is None else self._value_serde.from_bytes(raw)  # type: ignore[union-attr]

    def put(self, key: Any, value: Any) -> None:
        key_bytes = self._key_serde.to_bytes(key)  # type: ignore[union-attr]
        if value is None:
            self.store.delete(key_bytes)
        else:
            self.store.put(key_bytes, self._value_serde.to_bytes(value))  # type: ignore[union-attr]


class TaskContext:
    """Everything operator implementations of one task need during one epoch."""

    def __init__(self, plan: Any, assignment: EpochAssignment):
        self.plan = plan
        self.assignment = assignment
        self.task_name = assignment.task_name
        self.seq = assignment.seq
        self.now_ms = assignment.now_ms
        self.run_id = assignment.run_id
        self.writers: dict[str, _StreamWriter] = {}
        self.stores: dict[str, TaskStore] = {}
        self.tables: dict[str, _TableView] = {}
        self.eos_states: EndOfStreamStates | None = None
        self.plan_default_system = default_system(plan)
        self.drain_states: DrainStates | None = None

    def stream_serde(self, stream_id: str) -> Any:
        return self.plan.streams[stream_id].serde

    def writer(self, stream_id: str) -> _StreamWriter:
        writer = self.writers.get(stream_id)
        if writer is None:
            partitions = int(self.plan.streams[stream_id].partitions)
            writer = self.writers[stream_id] = _StreamWriter(self, stream_id, partitions)
        return writer

    def store(self, name: str) -> TaskStore:
        store = self.stores.get(name)
        if store is None:
            a = self.assignment
            path = store_path(a.store_root, a.location_id, a.task_name, name)
            system = self.plan_default_system
            changelog = ChangelogRef(
                system, changelog_stream_id(self.plan, name), a.changelog_partition
            )
            store = self.stores[name] = TaskStore(name, Path(path), changelog, a.producer)
        return store

    def table(self, table_id: str) -> _TableView:
        view = self.tables.get(table_id)
        if view is None:
            view = self.tables[table_id] = _TableView(self.plan.tables[table_id], self.store(table_id))
        return view

    def is_end_of_stream(self, stream_id: str) -> bool:
        assert self.eos_states is not None
        return self.eos_states.is_end_of_stream(self._system_stream(stream_id))

    def is_drained(self, stream_id: str) -> bool:
        assert self.drain_states is not None
        return self.drain_states.is_drained(self._system_stream(stream_id))

    def _system_stream(self, stream_id: str) -> SystemStream:
        return SystemStream(self.plan.streams[stream_id].system.name, stream_id)


class _TaskRun:
    """The body of one task epoch."""

    def __init__(self, plan: Any, assignment: EpochAssignment):
        self.plan = plan
        self.a = assignment
        self.context = TaskContext(plan, assignment)
        self.started = time.perf_counter()
        self.offsets = dict(assignment.start_offsets)
        self.messages_in: dict[str, int] = {}
        self.skipped = 0

    # -- setup -----------------------------------------------------------------------------
    def _ssp(self, stream_id: str, partition: int) -> SystemStreamPartition:
        return SystemStreamPartition(self.plan.streams[stream_id].system.name, stream_id, partition)

    def setup(self) -> None:
        plan, a, context = self.plan, self.a, self.context
        side_inputs = set(plan.side_inputs)
        tracked = [
            self._ssp(stream_id, partition)
            for stream_id, partition in a.ssps
            if stream_id not in side_inputs
        ]
        counts = {
            SystemStream(plan.streams[s].system.name, s): n for s, n in a.producer_counts.items()
        }
        context.eos_states = EndOfStreamStates(tracked, counts)
        context.drain_states = DrainStates(tracked, counts)
        self.watermarks = WatermarkStates(tracked, counts, clock=lambda: a.now_ms)
        control = a.control
        if control.get("runId") not in (None, a.run_id):
            # A new deployment (run id) starts with fresh drain and watermark state; only the
            # end-of-stream of bounded inputs carries over.
            control = {
                "eos": control.get("eos", {}),
                "operators": {
                    op_id: {"eos": state.get("eos", False)}
                    for op_id, state in control.get("operators", {}).items()
                },
            }
        context.eos_states.restore(control.get("eos", {}))
        context.drain_states.restore(control.get("drain", {}))
        self.watermarks.restore(control.get("watermarks", {}))
        task_streams = {stream_id for stream_id, _ in a.ssps}
        self.impls, self.inputs = build_operator_graph(plan.input_operators, context, task_streams)
        operator_state = control.get("operators", {})
        for op_id, impl in self.impls.items():
            if op_id in operator_state:
                impl.restore(operator_state[op_id])
        self.injected: set[str] = set(control.get("injected", []))
        # Stores used by table side inputs are opened like every other store.
        for table_id in plan.tables:
            context.table(table_id)

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
        for impl in self.impls.values():
            impl.load()
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
                self._read_side_input(stream_id, partition, start, bound)
            else:
                self._read(stream_id, partition, start, bound)
            if (
                a.drain
                and plan.streams[stream_id].kind == "input"
                and key not in self.injected
                and not self.context.eos_states.is_ssp_done(self._ssp(stream_id, partition))  # type: ignore[union-attr]
            ):
                # Drain: after what was fetched, the +inf watermark and the drain message enter
                # the task in memory, at its read position; the source log is never written.
                self.injected.add(key)
                if plan.intermediate_streams:
                    self._control(stream_id, partition, WatermarkMessage(LONG_MAX))
                self._control(stream_id, partition, DrainMessage(a.run_id))
        for impl in self.impls.values():
            impl.on_timer(a.now_ms)

    def _decoder(self, stream_id: str) -> Any:
        serde = self.plan.streams[stream_id].serde
        if isinstance(serde, KVSerde):
            key_decode = serde.key_serde.from_bytes
            value_decode = serde.value_serde.from_bytes

            def decode_kv(key: bytes | None, value: bytes) -> Any:
                return KV(key_decode(key) if key is not None else None, value_decode(value))

            return decode_kv
        value_only = serde.from_bytes
        return lambda key, value: value_only(value)

    def _read(self, stream_id: str, partition: int, start: int, bound: int) -> None:
        if bound <= start:
            return
        system = self.plan.streams[stream_id].system
        input_impl = self.inputs[stream_id]
        decode = self._decoder(stream_id)
        skip = self.a.skip_errors
        key = ssp_key(stream_id, partition)
        count = 0
        offset = start
        while offset < bound:
            batches = system.read_batches(stream_id, partition, offset, min(_READ_CHUNK, bound - offset))
            if not batches:
                break
            for first, records in batches:
                for index, (kind, rkey, value, _ts) in enumerate(records):
                    current = first + index
                    try:
                        if kind == MessageKind.USER:
                            count += 1
                            input_impl.on_message(decode(rkey, value), None)
                        else:
                            self._control(stream_id, partition, control_from_payload(kind, value))
                    except (UserFunctionError, SerdeError) as error:
                        if not skip:
                            self.offsets[key] = current
                            raise _TaskFailure(error, key, current, input_impl.op_id) from error
                        self.skipped += 1
                offset = first + len(records)
        self.offsets[key] = offset
        self.messages_in[stream_id] = self.messages_in.get(stream_id, 0) + count

    def _read_side_input(self, stream_id: str, partition: int, start: int, bound: int) -> None:
        plan = self.plan
        system = plan.streams[stream_id].system
        decode = self._decoder(stream_id)
        tables = [t for t in plan.tables.values() if any(d.stream_id == stream_id for d in t.side_inputs)]
        key = ssp_key(stream_id, partition)
        offset = start
        while offset < bound:
            batches = system.read_batches(stream_id, partition, offset, min(_READ_CHUNK, bound - offset))
            if not batches:
                break
            for first, records in batches:
                for index, (kind, rkey, value, _ts) in enumerate(records):
                    if kind != MessageKind.USER:
                        continue
                    message = decode(rkey, value)
                    if not isinstance(message, KV) and rkey is not None:
                        message = KV(msgspec.json.decode(rkey), message)
                    for table in tables:
                        try:
                            entries = _side_input_entries(table, message)
                            view = self.context.table(table.table_id)
                            for entry in entries:
                                view.put(entry.key, entry.value)
                        except Exception as error:
                            failure = UserFunctionError(f"table {table.table_id}", error, None)
                            raise _TaskFailure(failure, key, first + index, f"table {table.table_id}") from error
                offset = first + len(records)
        self.offsets[key] = offset

    def _control(self, stream_id: str, partition: int, message: ControlMessage) -> None:
        """Aggregate a control message arriving on an SSP (SAMZA.md §5.8)."""
        context = self.context
        ssp = self._ssp(stream_id, partition)
        system_stream = SystemStream(ssp.system, stream_id)
        input_impl = self.inputs[stream_id]
        info = self.plan.streams[stream_id]
        if isinstance(message, EndOfStreamMessage):
            states = context.eos_states
            assert states is not None
            states.update(message, ssp)
            if states.is_end_of_stream(system_stream):
                if message.task_name is not None and info.kind == "intermediate":
                    context.writer(stream_id).broadcast_to_others(EndOfStreamMessage(), partition)
                input_impl.on_end_of_stream()
        elif isinstance(message, DrainMessage):
            if message.run_id != self.a.run_id:
                return  # another deployment's drain: ignored (SAMZA.md §6.5)
            drains = context.drain_states
            assert drains is not None
            drains.update(message, ssp)
            if drains.is_drained(system_stream):
                if message.task_name is not None and info.kind == "intermediate":
                    context.writer(stream_id).broadcast_to_others(
                        DrainMessage(message.run_id), partition
                    )
                input_impl.on_drain()
        elif isinstance(message, WatermarkMessage):
            self.watermarks.update(message, ssp)
            watermark = self.watermarks.get_watermark(system_stream)
            if watermark > input_impl.input_watermark:
                if message.task_name is not None and info.kind == "intermediate":
                    context.writer(stream_id).broadcast_to_others(
                        WatermarkMessage(watermark), partition
                    )
                input_impl.on_watermark(watermark)

    # -- finishing -------------------------------------------------------------------------
    def control_snapshot(self) -> dict[str, Any]:
        context = self.context
        assert context.eos_states is not None and context.drain_states is not None
        return {
            "runId": self.a.run_id,
            "eos": context.eos_states.snapshot(),
            "drain": context.drain_states.snapshot(),
            "watermarks": self.watermarks.snapshot(),
            "operators": {op_id: impl.snapshot() for op_id, impl in self.impls.items()},
            "injected": sorted(self.injected),
        }

    def write_outputs(self) -> dict[str, int]:
        a = self.a
        out: dict[str, int] = {}
        for stream_id, writer in sorted(self.context.writers.items()):
            system = self.plan.streams[stream_id].system
            for partition, records in sorted(writer.buffers.items()):
                if records:
                    system.append_encoded(
                        stream_id,
                        partition,
                        _encode_batch(records),
                        len(records),
                        producer=a.producer,
                        producer_seq=a.seq,
                    )
            out[stream_id] = writer.count
        return out

    def flush_stores(self, control: dict[str, Any]) -> None:
        for impl in self.impls.values():
            impl.save()
        meta = {
            "seq": self.a.seq + 1,
            "offsets": self.offsets,
            "control": control,
            "bounds": self.a.bounds,
        }
        for store in self.context.stores.values():
            store.flush(meta, self.a.seq)

    def close(self) -> None:
        for store in self.context.stores.values():
            store.close()

    def result(self, control: dict[str, Any], messages_out: dict[str, int], replayed: bool) -> EpochResult:
        context = self.context
        assert context.eos_states is not None and context.drain_states is not None
        stores = context.stores.values()
        restored = sum(store.restored_records for store in stores)
        return EpochResult(
            task_name=self.a.task_name,
            seq=self.a.seq + 1,
            offsets=self.offsets,
            control=control,
            end_of_stream=bool(context.eos_states.details()) and context.eos_states.all_end_of_stream(),
            drained=bool(context.drain_states.details()) and context.drain_states.are_all_streams_drained(),
            messages_in=self.messages_in,
            messages_out=messages_out,
            operator_counts={op_id: impl.messages_in for op_id, impl in self.impls.items()},
            skipped=self.skipped,
            restored_records=restored,
            restore_seconds=sum(store.restore_seconds for store in stores),
            restores=sum(1 for store in stores if store.restore_seconds > 0),
            seconds=time.perf_counter() - self.started,
            replayed=replayed,
        )


class _TaskFailure(Exception):
    def __init__(self, error: BaseException, ssp: str, offset: int, input_op: str):
        super().__init__(str(error))
        self.error = error
        self.ssp = ssp
        self.offset = offset
        self.op_id = error.op_id if isinstance(error, UserFunctionError) else input_op


def _side_input_entries(table: LocalTable, message: Any) -> Iterable[KV[Any, Any]]:
    if table.side_input_processor is not None:
        produced = table.side_input_processor(message)
        if produced is None:
            return []
        if isinstance(produced, KV):
            return [produced]
        return list(produced)
    if isinstance(message, KV):
        return [message]
    if isinstance(message, dict) and "key" in message and "value" in message:
        return [KV(message["key"], message["value"])]
    msg = "side input message is not a KV; give the LocalTable a side_input_processor"
    raise TypeError(msg)


def run_task_epoch(plan: Any, assignment: EpochAssignment) -> EpochResult:
    """Run one epoch of one task; never raises for bad input (the error is in the result)."""
    run = _TaskRun(plan, assignment)
    try:
        run.setup()
        applied = run.open_stores()
        if applied is not None:
            run.offsets = dict(applied["offsets"])
            return run.result(dict(applied["control"]), {}, replayed=True)
        run.process()
        control = run.control_snapshot()
        messages_out = run.write_outputs()
        run.flush_stores(control)
        return run.result(control, messages_out, replayed=False)
    except _TaskFailure as failure:
        inner = failure.error
        cause = inner.error if isinstance(inner, UserFunctionError) else inner
        location = inner.user_location if isinstance(inner, UserFunctionError) else None
        result = EpochResult(assignment.task_name, assignment.seq, assignment.start_offsets, assignment.control)
        result.error = {
            "op_id": failure.op_id,
            "task": assignment.task_name,
            "ssp": failure.ssp,
            "offset": failure.offset,
            "error": f"{type(cause).__name__}: {cause}",
            "user_location": location,
            "traceback": "".join(traceback.format_exception(cause)),
        }
        return result
    finally:
        run.close()

"""What the operators of one task see during one epoch: writers, stores, tables, control state.

The context also knows where the task is reading (stream partition and offset) so that any
failure, whichever operator or store raised it, is reported with its place.
"""

from __future__ import annotations

import itertools
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from samza_nb.model.keys import check_table_key
from samza_nb.plan.tables import LocalTable
from samza_nb.runtime.epoch import EpochAssignment, ssp_key
from samza_nb.runtime.plan_systems import default_system_of
from samza_nb.runtime.task.control import ControlMessage, aggregate_partition, control_to_payload
from samza_nb.runtime.task.stores import ChangelogRef, TaskStore, store_path
from samza_nb.systems.batch_format import StoredBatch
from samza_nb.systems.partitioning import partition_for_key

if TYPE_CHECKING:
    from samza_nb.plan.execution_plan import ExecutionPlan

__all__ = ["PartitionBuffer", "StreamWriter", "TableView", "TaskContext"]

_KEY_PARTITION_CACHE_LIMIT = 100_000


class PartitionBuffer:
    """One epoch's records for one partition of a stream, kept by columns.

    The embedded log stores a batch by columns, so a message costs two list appends here and
    nothing when the batch is encoded; a tuple per message cost about 150 ns more, and tens of
    thousands of live tuples made the cycle collector's pass at the end of a task epoch take
    milliseconds."""

    __slots__ = ("controls", "keys", "values")

    def __init__(self) -> None:
        self.keys: list[bytes | None] = []
        self.values: list[bytes] = []
        #: Position -> kind of each control message (every other record is a user message).
        self.controls: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self.values)

    def add(self, key: bytes | None, value: bytes) -> None:
        self.keys.append(key)
        self.values.append(value)

    def add_control(self, message: ControlMessage) -> None:
        self.controls[len(self.values)] = int(message.kind)
        self.keys.append(None)
        self.values.append(control_to_payload(message))

    def records(self) -> StoredBatch:
        """The buffered records, in order, as (kind, key, value, timestamp) by columns."""
        kinds = bytearray(len(self.values))
        for position, kind in self.controls.items():
            kinds[position] = kind
        return StoredBatch(bytes(kinds), self.keys, self.values, None)

    def clear(self) -> None:
        self.keys.clear()
        self.values.clear()
        self.controls.clear()


class StreamWriter:
    """Buffers one epoch's messages to one stream, per partition."""

    def __init__(self, task_name: str, seq: int, stream_id: str, partitions: int):
        self.stream_id = stream_id
        self.partitions = partitions
        self.buffers: dict[int, PartitionBuffer] = {}
        self._key_partitions: dict[bytes, int] = {}
        # Unkeyed messages go round robin from a start that is the same for a retried epoch
        # (never Python's salted hash(): a retry must write exactly what the first try wrote).
        self.rotation = itertools.count(
            zlib.crc32(f"{task_name}/{seq}/{stream_id}".encode()) % partitions
        )
        self._controls = 0

    def write_to(self, partition: int, key: bytes | None, value: bytes) -> None:
        self.buffer(partition).add(key, value)

    def buffer(self, partition: int) -> PartitionBuffer:
        """``partition``'s buffer (the operators that write append to its columns directly)."""
        buffer = self.buffers.get(partition)
        if buffer is None:
            buffer = self.buffers[partition] = PartitionBuffer()
        return buffer

    @property
    def count(self) -> int:
        """User messages buffered this epoch."""
        return sum(len(buffer) for buffer in self.buffers.values()) - self._controls

    def place(self, key: bytes | None) -> int:
        """The partition of a keyed message (murmur2 of its key bytes; None goes to 0)."""
        if key is None:
            return 0
        partition = self._key_partitions.get(key)
        if partition is None:
            partition = partition_for_key(key, self.partitions)
            if len(self._key_partitions) < _KEY_PARTITION_CACHE_LIMIT:
                self._key_partitions[key] = partition
        return partition

    def write_keyed(self, key: bytes | None, value: bytes) -> None:
        self.buffer(self.place(key)).add(key, value)

    def write_unkeyed(self, value: bytes) -> None:
        self.buffer(next(self.rotation) % self.partitions).add(None, value)

    def send_control_to(self, partition: int, message: ControlMessage) -> None:
        self._controls += 1
        self.buffer(partition).add_control(message)

    def send_to_aggregate(self, message: ControlMessage) -> None:
        self.send_control_to(aggregate_partition(self.stream_id, self.partitions), message)

    def broadcast_to_others(self, message: ControlMessage, partition: int) -> None:
        for other in range(self.partitions):
            if other != partition:
                self.send_control_to(other, message)

    def clear(self) -> None:
        """Drop the buffered records (written, or given up with a failed epoch)."""
        for buffer in self.buffers.values():
            buffer.clear()


class TableView:
    """A LocalTable inside one task: its serdes over the table's store."""

    def __init__(self, table: LocalTable, store: TaskStore):
        self.table_id = table.table_id
        self._key_serde = table.key_serde
        self._value_serde = table.value_serde
        self.store = store

    def encode_key(self, key: Any) -> bytes:
        """The stored bytes of ``key``; a key with no stable bytes (a set, NaN or infinity:
        equal keys could encode apart, or different ones alike) or that the table's key serde
        cannot encode raises, naming the table. A dict is its JSON, key order included."""
        check_table_key(key, self.table_id)
        return self._key_serde.to_bytes(key)  # type: ignore[union-attr]

    def get(self, key: Any) -> Any:
        return self.get_encoded(self.encode_key(key))

    def get_encoded(self, key_bytes: bytes) -> Any:
        raw = self.store.get(key_bytes)
        return None if raw is None else self._value_serde.from_bytes(raw)  # type: ignore[union-attr]

    def put(self, key: Any, value: Any) -> None:
        key_bytes = self.encode_key(key)
        if value is None:
            self.store.delete(key_bytes)
        else:
            self.store.put(key_bytes, self._value_serde.to_bytes(value))  # type: ignore[union-attr]


class TaskContext:
    """Everything the operator implementations of one task need during one epoch."""

    def __init__(self, plan: ExecutionPlan, assignment: EpochAssignment):
        #: The task's operator implementations by op id (set when its graph is built).
        self.operators: dict[str, Any] = {}
        self.plan = plan
        self.assignment = assignment
        self.task_name = assignment.task_name
        self.seq = assignment.seq
        self.now_ms = assignment.now_ms
        self.run_id = assignment.run_id
        self.skip_errors = assignment.skip_errors
        self.writers: dict[str, StreamWriter] = {}
        self.stores: dict[str, TaskStore] = {}
        self.tables: dict[str, TableView] = {}
        #: The input streams whose every partition the task reads reached end-of-stream
        #: (drained), and those it does not read; runtime/task/task_control.py keeps them.
        self.ended_streams: set[str] = set()
        self.drained_streams: set[str] = set()
        #: Where the task is reading: (SSP key, offset) of the message being processed, or
        #: None while timers fire or control messages enter from a drain.
        self.position: tuple[str, int] | None = None
        #: Messages dropped because a user function failed and ``task.errors.skip`` is on.
        self.skipped = 0

    def writer(self, stream_id: str) -> StreamWriter:
        writer = self.writers.get(stream_id)
        if writer is None:
            partitions = int(self.plan.streams[stream_id].partitions)
            writer = self.writers[stream_id] = StreamWriter(
                self.task_name, self.seq, stream_id, partitions
            )
        return writer

    def store(self, name: str) -> TaskStore:
        store = self.stores.get(name)
        if store is None:
            a = self.assignment
            path = store_path(a.store_root, a.location_id, a.task_name, name)
            system = default_system_of(self.plan)
            changelog = (
                ChangelogRef(system, self.plan.changelog_stream_id(name), a.changelog_partition)
                if system is not None
                else None
            )
            store = self.stores[name] = TaskStore(
                name, Path(path), changelog, a.task_name, a.producer,
                look_past_end=changelog is not None
                and ssp_key(changelog.stream_id, changelog.partition) in a.changelogs_made_again,
            )
        return store

    def changelog_offsets(self) -> dict[str, int]:
        """Per changelog SSP key, the offset the task's stores reflect (a checkpoint carries
        them, so a standby knows how far to apply its active's changelog)."""
        a = self.assignment
        return {
            ssp_key(self.plan.changelog_stream_id(name), a.changelog_partition): store.changelog_offset
            for name, store in self.stores.items()
            if store.changelog_offset is not None
        }

    def table(self, table_id: str) -> TableView:
        view = self.tables.get(table_id)
        if view is None:
            view = self.tables[table_id] = TableView(self.plan.tables[table_id], self.store(table_id))
        return view

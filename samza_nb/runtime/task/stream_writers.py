"""The operators that write to streams: send_to (output), partition_by (which ends a fused chain
by writing to its intermediate stream) and broadcast. They encode with the stream's serde on
the hot path and send control messages (end-of-stream, watermarks, drain) on to the stream's
consumers (SAMZA.md §5.8)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import msgspec

from samza_nb.errors import StreamSystemError
from samza_nb.model.keys import check_partition_key, encode_partition_key
from samza_nb.plan.functions import identity
from samza_nb.plan.kv import KV
from samza_nb.plan.operators import (
    BroadcastOperatorSpec,
    OutputOperatorSpec,
    PartitionByOperatorSpec,
)
from samza_nb.plan.serdes import JsonSerde, KVSerde
from samza_nb.runtime.plan_systems import system_of
from samza_nb.runtime.task.combining import Placed, ShuffleCombiner
from samza_nb.runtime.task.control import (
    ControlMessage,
    DrainMessage,
    EndOfStreamMessage,
    WatermarkMessage,
)
from samza_nb.runtime.task.operators import OperatorImpl, Receiver, _drop, _FusedImpl

if TYPE_CHECKING:
    from samza_nb.runtime.task.context import TaskContext

__all__ = ["BroadcastImpl", "OutputImpl", "PartitionByImpl"]

_json_encode = msgspec.json.Encoder().encode
_UNSET: Final = object()
#: Room kept in a destination's record limit for what an append adds to key and value: the
#: record's headers (kind, producer, epoch, ordinal) and its batch's framing.
_RECORD_OVERHEAD = 512
_NO_LIMIT: Final = 1 << 62


def _record_room(context: TaskContext, stream_id: str) -> int:
    """How many key and value bytes a record to ``stream_id`` may hold: its system's record
    limit (Kafka: the topic's max.message.bytes) less the append's overhead; no limit for a
    system without one (the embedded log)."""
    limit_of = getattr(system_of(context.plan, stream_id), "max_record_bytes", None)
    return _NO_LIMIT if limit_of is None else int(limit_of(stream_id)) - _RECORD_OVERHEAD


def _too_large(stream_id: str, size: int, room: int) -> StreamSystemError:
    """The error of a record the destination would refuse: raised before the epoch appends,
    so it names the input message (operator, task, stream, partition, offset) and
    ``task.errors.skip`` skips it."""
    msg = (
        f"a record of {size:,} bytes (key and value) is larger than stream {stream_id!r} takes "
        f"({room + _RECORD_OVERHEAD:,} bytes less {_RECORD_OVERHEAD} for headers); to take it, "
        "raise the topic's max.message.bytes and the producer's message.max.bytes"
    )
    return StreamSystemError(msg)


def _serde_error(serde: Any, value: Any, error: Exception) -> Exception:
    """The error to report when encoding ``value`` may have failed on the fast path: the
    serde's own, which names the value."""
    if value is not _UNSET and isinstance(error, TypeError | msgspec.EncodeError):
        try:
            serde.to_bytes(value)
        except Exception as serde_error:
            return serde_error
    return error


class OutputImpl(_FusedImpl):
    """send_to(output stream): keyed messages by murmur2 of the key, others round robin."""

    def __init__(self, spec: OutputOperatorSpec, context: TaskContext):
        super().__init__(spec, context)
        self.stream_id = spec.stream_id
        self.writer = context.writer(spec.stream_id)
        serde = context.plan.streams[spec.stream_id].serde
        self.kv = isinstance(serde, KVSerde)
        self.key_encode = (
            serde.key_serde.to_bytes
            if isinstance(serde, KVSerde)
            else lambda key: encode_partition_key(key, spec.op_id)
        )
        self.value_encode = serde.value_serde.to_bytes if isinstance(serde, KVSerde) else serde.to_bytes
        self.value_serde = serde.value_serde if isinstance(serde, KVSerde) else serde
        self.room = _record_room(context, spec.stream_id)

    def _fuse(self, emit: Receiver, failed: Callable[[Exception], Any]) -> Receiver:
        key_encode, value_serde = self.key_encode, self.value_serde
        value_encode: Callable[[Any], bytes] = (
            _json_encode if type(value_serde) is JsonSerde else self.value_encode
        )
        writer = self.writer
        buffers, buffer_of, place, rotation = writer.buffers, writer.buffer, writer.place, writer.rotation
        partitions = writer.partitions
        passes_on = emit is not _drop
        room, stream_id = self.room, self.stream_id
        limited = room < _NO_LIMIT  # a system without a record limit pays one test per record
        count = 0

        def receive(message: Any) -> None:
            nonlocal count
            count += 1
            value = _UNSET
            try:
                if isinstance(message, KV):
                    key = message.key
                    key_bytes = key_encode(key) if key is not None else None
                    value = message.value
                    value_bytes = value_encode(value)
                    partition = place(key_bytes)
                else:
                    key_bytes = None
                    value = message
                    value_bytes = value_encode(value)
                    partition = next(rotation) % partitions
            except Exception as error:
                failed(_serde_error(value_serde, value, error))
                return
            if limited and len(value_bytes) > room - (len(key_bytes) if key_bytes else 0):
                failed(_too_large(stream_id, len(value_bytes) + len(key_bytes or b""), room))
                return
            buffer = buffers.get(partition)
            if buffer is None:
                buffer = buffer_of(partition)
            buffer.keys.append(key_bytes)
            buffer.values.append(value_bytes)
            if passes_on:
                emit(message)

        self._counters.append(lambda: count)
        return receive

    def _write(self, message: Any) -> None:
        keyed = isinstance(message, KV)
        key_bytes = self.key_encode(message.key) if keyed and message.key is not None else None
        value_bytes = self.value_encode(message.value if keyed else message)
        size = len(value_bytes) + len(key_bytes or b"")
        if size > self.room:
            self.failed(_too_large(self.stream_id, size, self.room))
        elif keyed:
            self.writer.write_keyed(key_bytes, value_bytes)
        else:
            self.writer.write_unkeyed(value_bytes)


_KEY_CACHE_LIMIT = 100_000
_CACHED_KEY_TYPES = frozenset({str, int, bytes})


class PartitionByImpl(_FusedImpl):
    def __init__(self, spec: PartitionByOperatorSpec, context: TaskContext):
        super().__init__(spec, context)
        serde = spec.serde
        assert serde is not None
        self.key_fn = spec.key_fn
        # The message itself when no value function was given: no call per message.
        self.value_fn = None if spec.value_fn is identity else spec.value_fn
        self.key_encode = serde.key_serde.to_bytes
        self.value_serde = serde.value_serde
        self.value_encode = serde.value_serde.to_bytes
        self.writer = context.writer(spec.stream_id)
        self.room = _record_room(context, spec.stream_id)
        #: Folds the messages for the window that alone reads the stream (set with the
        #: receiver when the planner combines this partition_by).
        self.combiner: ShuffleCombiner | None = None

    def _fuse(self, emit: Receiver, failed: Callable[[Exception], Any]) -> Receiver:
        key_fn, value_fn = self.key_fn, self.value_fn
        key_encode = self.key_encode
        value_serde = self.value_serde
        # For the JSON serde, msgspec itself; the serde is asked again only for a value that
        # did not encode (its SerdeError names the value).
        value_encode: Callable[[Any], bytes] = (
            _json_encode if type(value_serde) is JsonSerde else self.value_encode
        )
        op_id = self.op_id
        writer = self.writer
        buffer_of, place = writer.buffer, writer.place
        # Keys of the stable scalar types repeat (pages, users): their bytes and the appends
        # of their partition's key and value columns are looked up once per task epoch; other
        # keys take the checked path every time. (bool is left out: True == 1 would share 1's
        # entry.)
        placed: dict[Any, Placed] = {}
        cached_types = _CACHED_KEY_TYPES
        room, stream_id = self.room, self.spec.stream_id  # type: ignore[attr-defined]
        limited = room < _NO_LIMIT  # a system without a record limit pays one test per record
        count = 0

        def place_key(key_bytes: bytes | None) -> Placed:
            buffer = buffer_of(place(key_bytes))
            return key_bytes, buffer.keys.append, buffer.values.append

        def where_of(key: Any) -> Placed:
            where = placed.get(key)
            if where is None:
                where = place_key(key_encode(key))
                if len(placed) < _KEY_CACHE_LIMIT:
                    placed[key] = where
            return where

        def encode_failed(value: Any, error: Exception) -> None:
            failed(_serde_error(value_serde, value, error))

        def plain_where(key: Any) -> Placed:
            if type(key) in cached_types:
                return where_of(key)
            check_partition_key(key, op_id)
            return place_key(key_encode(key) if key is not None else None)

        combiner = self._combiner(where_of)
        if combiner is not None:
            assert key_fn is not None
            receive_combining, counter = combiner.receiver(
                key_fn, value_fn, value_encode, encode_failed, plain_where, _UNSET
            )
            self._counters.append(counter)
            return receive_combining

        def receive(message: Any) -> None:
            nonlocal count
            count += 1
            value = _UNSET
            try:
                key = key_fn(message)  # type: ignore[misc]
                value = value_fn(message) if value_fn is not None else message
                if type(key) in cached_types:
                    where = placed.get(key)
                    if where is None:
                        where = where_of(key)
                else:
                    check_partition_key(key, op_id)
                    where = place_key(key_encode(key) if key is not None else None)
                value_bytes = value_encode(value)
            except Exception as error:
                failed(_serde_error(value_serde, value, error))
                return
            if limited and len(value_bytes) > room - (len(where[0]) if where[0] else 0):
                failed(_too_large(stream_id, len(value_bytes) + len(where[0] or b""), room))
                return
            where[1](where[0])
            where[2](value_bytes)

        self._counters.append(lambda: count)
        return receive

    def _combiner(self, where_of: Callable[[Any], Placed]) -> ShuffleCombiner | None:
        """This task epoch's combiner when the planner combines this partition_by's messages
        for its window (plan/combining.py)."""
        window_op = self.spec.combine_into  # type: ignore[attr-defined]
        if window_op is None:
            return None

        # A message a window function failed on is the window's, as it is without combining:
        # it counts in the window's messages in and skipped (every task builds every operator).
        window = self.context.operators.get(window_op.op_id, self)

        def counted_skip() -> None:
            self.context.skipped += 1
            window.skipped += 1
            window.messages_in += 1

        combiner = self.combiner = ShuffleCombiner(window_op, self.context, where_of, counted_skip)
        return combiner

    def end_epoch(self) -> None:
        if self.combiner is not None:
            self.combiner.flush()

    def handle_end_of_stream(self) -> list[Any]:
        self.end_epoch()  # the partial aggregates go before the control message
        self.writer.send_to_aggregate(EndOfStreamMessage(self.context.task_name))
        return []

    def handle_watermark(self, watermark: int) -> list[Any]:
        self.end_epoch()
        self.writer.send_to_aggregate(WatermarkMessage(watermark, self.context.task_name))
        return []

    def handle_drain(self) -> list[Any]:
        self.end_epoch()
        self.writer.send_to_aggregate(DrainMessage(self.context.run_id, self.context.task_name))
        return []


class BroadcastImpl(OperatorImpl):
    def __init__(self, spec: BroadcastOperatorSpec, context: TaskContext):
        super().__init__(spec, context)
        serde = spec.serde
        self.kv = isinstance(serde, KVSerde)
        self.serde = serde
        self.writer = context.writer(spec.stream_id)
        self.room = _record_room(context, spec.stream_id)

    def on_message(self, message: Any, source: OperatorImpl | None) -> None:
        self.messages_in += 1
        self.call(self._write, message)

    def _write(self, message: Any) -> None:
        key_bytes: bytes | None = None
        if isinstance(self.serde, KVSerde):
            if not isinstance(message, KV):
                message = KV(None, message)
            if message.key is not None:
                key_bytes = self.serde.key_serde.to_bytes(message.key)
            value_bytes = self.serde.value_serde.to_bytes(message.value)
        else:
            value_bytes = self.serde.to_bytes(message)  # type: ignore[union-attr]
        size = len(value_bytes) + len(key_bytes or b"")
        if size > self.room:  # raised inside call(): skipped, or named with the input offset
            raise _too_large(self.spec.stream_id, size, self.room)  # type: ignore[attr-defined]
        self.writer.write_to(0, key_bytes, value_bytes)

    def _control(self, message: ControlMessage) -> list[Any]:
        self.writer.send_control_to(0, message)
        return []

    def handle_end_of_stream(self) -> list[Any]:
        return self._control(EndOfStreamMessage(self.context.task_name))

    def handle_watermark(self, watermark: int) -> list[Any]:
        return self._control(WatermarkMessage(watermark, self.context.task_name))

    def handle_drain(self) -> list[Any]:
        return self._control(DrainMessage(self.context.run_id, self.context.task_name))

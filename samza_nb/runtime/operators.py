"""Operator implementations: what each operator spec does inside a task (SAMZA.md §5.8, §11.2).

Every task hosts the whole DAG. An implementation receives a message with ``on_message`` and
pushes results to its next operators. Control propagation follows §5.8: an operator reacts to
end-of-stream or drain only when all of its input streams have ended or drained, and passes the
minimum output watermark of its upstream operators on (operators of branches this task does not
consume count as +inf). Windows live in runtime/windows.py, joins and tables in runtime/joins.py.

Every user function (and every user serde) is called through :meth:`OperatorImpl.call` (or,
on the fused hot path, inside a ``try`` around that call alone): a failure becomes a
:class:`UserFunctionError` naming the operator, or, with ``task.errors.skip``, is counted and
the message dropped (:data:`SKIPPED`).

The hot path: an upstream operator hands each message to a *receiver*, one plain callable per
edge, built once per task epoch (:meth:`OperatorImpl.receiver`). The stateless operators (map,
flat_map, filter, sink, send_to, partition_by) build a closure that calls the user function and
then the next receiver directly, so a chain of them runs as nested calls with no method lookup,
no per-message bookkeeping object and no extra frames (CPython's ``try`` costs nothing until
it raises). A chain is never fused across a shuffle: partition_by ends it by writing to its
intermediate stream.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Final

import msgspec

from samza_nb.plan.keys import check_partition_key, encode_partition_key
from samza_nb.plan.kv import KV
from samza_nb.plan.operators import (
    BroadcastOperatorSpec,
    InputOperatorSpec,
    OperatorSpec,
    OutputOperatorSpec,
    PartitionByOperatorSpec,
)
from samza_nb.plan.serdes import JsonSerde, KVSerde
from samza_nb.runtime.control import (
    LONG_MAX,
    WATERMARK_NOT_EXIST,
    ControlMessage,
    DrainMessage,
    EndOfStreamMessage,
    WatermarkMessage,
)
from samza_nb.systems.base import MessageKind

if TYPE_CHECKING:
    from samza_nb.runtime.context import TaskContext

__all__ = [
    "SKIPPED",
    "OperatorImpl",
    "UserFunctionError",
    "from_storable",
    "to_storable",
]


_json_encode = msgspec.json.Encoder().encode
_UNSET: Final = object()


def _serde_error(serde: Any, value: Any, error: Exception) -> Exception:
    """The error to report when encoding ``value`` may have failed on the fast path: the
    serde's own, which names the value."""
    if value is not _UNSET and isinstance(error, TypeError | msgspec.EncodeError):
        try:
            serde.to_bytes(value)
        except Exception as serde_error:
            return serde_error
    return error


class _Skipped:
    def __repr__(self) -> str:
        return "SKIPPED"


#: What :meth:`OperatorImpl.call` returns when a user function failed and the message is skipped.
SKIPPED: Final = _Skipped()


class UserFunctionError(Exception):
    """A user function or serde raised; carries the operator id (the task adds SSP and offset)."""

    def __init__(self, op_id: str, error: BaseException, user_location: str | None):
        super().__init__(op_id, error)
        self.op_id = op_id
        self.error = error
        self.user_location = user_location


def to_storable(value: Any) -> Any:
    """KV is kept as a tagged map so it comes back as a KV from a store (msgpack has no
    named tuples)."""
    if isinstance(value, KV):
        return {"__kv__": [to_storable(value.key), to_storable(value.value)]}
    if isinstance(value, list):
        return [to_storable(item) for item in value]
    return value


def from_storable(value: Any) -> Any:
    if isinstance(value, dict) and len(value) == 1 and "__kv__" in value:
        key, inner = value["__kv__"]
        return KV(from_storable(key), from_storable(inner))
    if isinstance(value, list):
        return [from_storable(item) for item in value]
    return value


Receiver = Callable[[Any], None]


def _drop(message: Any) -> None:
    """The receiver of an operator without next operators."""


class OperatorImpl:
    """Base implementation: identity on messages, default control handling."""

    def __init__(self, spec: OperatorSpec, context: TaskContext):
        self.spec = spec
        self.op_id = spec.op_id
        self.context = context
        self.next_ops: list[OperatorImpl] = []
        self.prev_ops: list[OperatorImpl] = []
        self.input_streams: set[str] = set()
        self.used_in_task = False
        self.input_watermark = WATERMARK_NOT_EXIST
        self.output_watermark = WATERMARK_NOT_EXIST
        self.eos_handled = False
        self.drain_handled = False
        self.messages_in = 0
        #: Messages whose user function raised and that ``task.errors.skip`` skipped.
        self.skipped = 0
        #: Messages a map or flat_map dropped by returning None (Samza's rule).
        self.dropped = 0
        self._emitter: Receiver | None = None
        self._receiver: Receiver | None = None
        self._counted: Callable[[], int] | None = None

    # -- messages --------------------------------------------------------------------------
    def on_message(self, message: Any, source: OperatorImpl | None) -> None:
        self.messages_in += 1
        self.emit(message)

    def receiver(self, source: OperatorImpl | None) -> Receiver:
        """The callable ``source`` hands each of its messages to (stateless operators return
        one fused closure, whatever the source; joins tell their sides apart by it)."""
        on_message = self.on_message
        return lambda message: on_message(message, source)

    def emitter(self) -> Receiver:
        """One callable that pushes a message to every next operator (built once, on first
        use, when the graph is wired)."""
        emitter = self._emitter
        if emitter is None:
            receivers = [op.receiver(self) for op in self.next_ops]
            if not receivers:
                emitter = _drop
            elif len(receivers) == 1:
                emitter = receivers[0]
            else:

                def emitter(message: Any) -> None:
                    for receive in receivers:
                        receive(message)

            self._emitter = emitter
        return emitter

    def emit(self, message: Any) -> None:
        self.emitter()(message)

    def emit_all(self, messages: Iterable[Any]) -> None:
        emit = self.emitter()
        for message in messages:
            emit(message)

    def count(self) -> int:
        """Messages this operator received in this task epoch."""
        counted = self._counted
        return self.messages_in + (counted() if counted is not None else 0)

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)``; a failure raises UserFunctionError, or returns SKIPPED (and counts
        the message) when the task skips failing messages."""
        try:
            return fn(*args)
        except Exception as error:
            return self.failed(error)

    def failed(self, error: Exception) -> Any:
        """A user function of this operator raised ``error``: count and skip the message
        (returns SKIPPED) when the task skips failures, else raise UserFunctionError."""
        if self.context.skip_errors:
            self.context.skipped += 1
            self.skipped += 1
            return SKIPPED
        raise UserFunctionError(self.op_id, error, self.spec.user_location) from error

    # -- control ---------------------------------------------------------------------------
    def handle_end_of_stream(self) -> list[Any]:
        return []

    def handle_drain(self) -> list[Any]:
        return []

    def handle_watermark(self, watermark: int) -> list[Any]:
        return []

    def on_timer(self, now_ms: int) -> None:
        """Processing-time tick at the end of every epoch (windows fire here)."""

    def on_end_of_stream(self) -> None:
        if self.eos_handled or not all(
            self.context.is_end_of_stream(stream) for stream in self.input_streams
        ):
            return
        self.eos_handled = True
        self.emit_all(self.handle_end_of_stream())
        for op in self.next_ops:
            op.on_end_of_stream()

    def on_drain(self) -> None:
        if self.drain_handled or not all(
            self.context.is_drained(stream) for stream in self.input_streams
        ):
            return
        self.drain_handled = True
        self.emit_all(self.handle_drain())
        for op in self.next_ops:
            op.on_drain()

    def on_watermark(self, watermark: int) -> None:
        if not isinstance(self.spec, InputOperatorSpec):
            watermark = min(
                (op.output_watermark if op.used_in_task else LONG_MAX) for op in self.prev_ops
            )
        if watermark <= self.input_watermark:
            return
        self.input_watermark = watermark
        self.emit_all(self.handle_watermark(watermark))
        if watermark > self.output_watermark:
            self.output_watermark = watermark
            for op in self.next_ops:
                op.on_watermark(watermark)

    def snapshot(self) -> dict[str, Any]:
        return {
            "in": self.input_watermark,
            "out": self.output_watermark,
            "eos": self.eos_handled,
            "drain": self.drain_handled,
        }

    def restore(self, snapshot: dict[str, Any]) -> None:
        self.input_watermark = int(snapshot.get("in", WATERMARK_NOT_EXIST))
        self.output_watermark = int(snapshot.get("out", WATERMARK_NOT_EXIST))
        self.eos_handled = bool(snapshot.get("eos", False))
        self.drain_handled = bool(snapshot.get("drain", False))

    def load(self) -> None:
        """Read operator state from the task's stores at the start of an epoch."""

    def save(self) -> None:
        """Write operator state to the task's stores at the end of an epoch."""


class InputImpl(OperatorImpl):
    pass


class _FusedImpl(OperatorImpl):
    """A stateless operator: one closure per task epoch (see the module docstring)."""

    def on_message(self, message: Any, source: OperatorImpl | None) -> None:
        self.receiver(source)(message)

    def receiver(self, source: OperatorImpl | None) -> Receiver:
        receive = self._receiver
        if receive is None:
            receive = self._receiver = self._fuse(self.emitter(), self.failed)
        return receive

    def _fuse(self, emit: Receiver, failed: Callable[[Exception], Any]) -> Receiver:
        raise NotImplementedError


class MapImpl(_FusedImpl):
    def _fuse(self, emit: Receiver, failed: Callable[[Exception], Any]) -> Receiver:
        fn = self.spec.fn  # type: ignore[attr-defined]
        impl = self
        count = 0

        def receive(message: Any) -> None:
            nonlocal count
            count += 1
            try:
                result = fn(message)
            except Exception as error:
                failed(error)
                return
            # A map returning None drops the message (Samza's rule), counted.
            if result is not None:
                emit(result)
            else:
                impl.dropped += 1

        self._counted = lambda: count
        return receive


class FlatMapImpl(_FusedImpl):
    def _fuse(self, emit: Receiver, failed: Callable[[Exception], Any]) -> Receiver:
        fn = self.spec.fn  # type: ignore[attr-defined]
        impl = self
        count = 0

        def receive(message: Any) -> None:
            nonlocal count
            count += 1
            try:
                results = fn(message)
            except Exception as error:
                failed(error)
                return
            if results is not None:
                for result in results:
                    emit(result)
            else:
                impl.dropped += 1

        self._counted = lambda: count
        return receive


class FilterImpl(_FusedImpl):
    def _fuse(self, emit: Receiver, failed: Callable[[Exception], Any]) -> Receiver:
        fn = self.spec.fn  # type: ignore[attr-defined]
        count = 0

        def receive(message: Any) -> None:
            nonlocal count
            count += 1
            try:
                keep = fn(message)
            except Exception as error:
                failed(error)
                return
            if keep:
                emit(message)

        self._counted = lambda: count
        return receive


class SinkImpl(_FusedImpl):
    def _fuse(self, emit: Receiver, failed: Callable[[Exception], Any]) -> Receiver:
        fn = self.spec.fn  # type: ignore[attr-defined]
        count = 0

        def receive(message: Any) -> None:
            nonlocal count
            count += 1
            try:
                fn(message)
            except Exception as error:
                failed(error)

        self._counted = lambda: count
        return receive


class OutputImpl(_FusedImpl):
    """send_to(output stream): keyed messages by murmur2 of the key, others round robin."""

    def __init__(self, spec: OutputOperatorSpec, context: TaskContext):
        super().__init__(spec, context)
        self.stream_id = spec.stream_id
        self.writer = context.writer(spec.stream_id)
        serde = context.stream_serde(spec.stream_id)
        self.kv = isinstance(serde, KVSerde)
        self.key_encode = (
            serde.key_serde.to_bytes
            if isinstance(serde, KVSerde)
            else lambda key: encode_partition_key(key, spec.op_id)
        )
        self.value_encode = serde.value_serde.to_bytes if isinstance(serde, KVSerde) else serde.to_bytes
        self.value_serde = serde.value_serde if isinstance(serde, KVSerde) else serde

    def _fuse(self, emit: Receiver, failed: Callable[[Exception], Any]) -> Receiver:
        key_encode, value_serde = self.key_encode, self.value_serde
        value_encode: Callable[[Any], bytes] = (
            _json_encode if isinstance(value_serde, JsonSerde) else self.value_encode
        )
        writer = self.writer
        buffers, buffer_of, place, rotation = writer.buffers, writer.buffer, writer.place, writer.rotation
        partitions = writer.partitions
        user = MessageKind.USER
        passes_on = emit is not _drop
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
            buffer = buffers.get(partition)
            if buffer is None:
                buffer = buffer_of(partition)
            buffer.append((user, key_bytes, value_bytes, None))  # type: ignore[arg-type]
            if passes_on:
                emit(message)

        self._counted = lambda: count
        return receive

    def _write(self, message: Any) -> None:
        if isinstance(message, KV):
            key = message.key
            key_bytes = self.key_encode(key) if key is not None else None
            self.writer.write_keyed(key_bytes, self.value_encode(message.value))
        else:
            self.writer.write_unkeyed(self.value_encode(message))


_KEY_CACHE_LIMIT = 100_000
_CACHED_KEY_TYPES = frozenset({str, int, bytes})


class PartitionByImpl(_FusedImpl):
    def __init__(self, spec: PartitionByOperatorSpec, context: TaskContext):
        super().__init__(spec, context)
        serde = spec.serde
        assert serde is not None
        self.key_fn = spec.key_fn
        self.value_fn = spec.value_fn
        self.key_encode = serde.key_serde.to_bytes
        self.value_serde = serde.value_serde
        self.value_encode = serde.value_serde.to_bytes
        self.writer = context.writer(spec.stream_id)

    def _fuse(self, emit: Receiver, failed: Callable[[Exception], Any]) -> Receiver:
        key_fn, value_fn = self.key_fn, self.value_fn
        key_encode = self.key_encode
        value_serde = self.value_serde
        # For the JSON serde, msgspec itself; the serde is asked again only for a value that
        # did not encode (its SerdeError names the value).
        value_encode: Callable[[Any], bytes] = (
            _json_encode if isinstance(value_serde, JsonSerde) else self.value_encode
        )
        op_id = self.op_id
        writer = self.writer
        buffers, buffer_of, place = writer.buffers, writer.buffer, writer.place
        user = MessageKind.USER
        # Keys of the stable scalar types repeat (pages, users): their bytes and partition are
        # computed once per task epoch; other keys take the checked path every time.
        # (bool is left out: True == 1 would share 1's entry.)
        placed: dict[Any, tuple[bytes | None, int]] = {}
        cached_types = _CACHED_KEY_TYPES
        count = 0

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
                        encoded = key_encode(key)
                        where = (encoded, place(encoded))
                        if len(placed) < _KEY_CACHE_LIMIT:
                            placed[key] = where
                else:
                    check_partition_key(key, op_id)
                    key_bytes = key_encode(key) if key is not None else None
                    where = (key_bytes, place(key_bytes))
                value_bytes = value_encode(value)
            except Exception as error:
                failed(_serde_error(value_serde, value, error))
                return
            buffer = buffers.get(where[1])
            if buffer is None:
                buffer = buffer_of(where[1])
            buffer.append((user, where[0], value_bytes, None))  # type: ignore[arg-type]

        self._counted = lambda: count
        return receive

    def handle_end_of_stream(self) -> list[Any]:
        self.writer.send_to_aggregate(EndOfStreamMessage(self.context.task_name))
        return []

    def handle_watermark(self, watermark: int) -> list[Any]:
        self.writer.send_to_aggregate(WatermarkMessage(watermark, self.context.task_name))
        return []

    def handle_drain(self) -> list[Any]:
        self.writer.send_to_aggregate(DrainMessage(self.context.run_id, self.context.task_name))
        return []


class BroadcastImpl(OperatorImpl):
    def __init__(self, spec: BroadcastOperatorSpec, context: TaskContext):
        super().__init__(spec, context)
        serde = spec.serde
        self.kv = isinstance(serde, KVSerde)
        self.serde = serde
        self.writer = context.writer(spec.stream_id)

    def on_message(self, message: Any, source: OperatorImpl | None) -> None:
        self.messages_in += 1
        self.call(self._write, message)

    def _write(self, message: Any) -> None:
        if isinstance(self.serde, KVSerde):
            if not isinstance(message, KV):
                message = KV(None, message)
            key_bytes = (
                self.serde.key_serde.to_bytes(message.key) if message.key is not None else None
            )
            self.writer.write_to(0, key_bytes, self.serde.value_serde.to_bytes(message.value))
        else:
            self.writer.write_to(0, None, self.serde.to_bytes(message))  # type: ignore[union-attr]

    def _control(self, message: ControlMessage) -> list[Any]:
        self.writer.send_control_to(0, message)
        return []

    def handle_end_of_stream(self) -> list[Any]:
        return self._control(EndOfStreamMessage(self.context.task_name))

    def handle_watermark(self, watermark: int) -> list[Any]:
        return self._control(WatermarkMessage(watermark, self.context.task_name))

    def handle_drain(self) -> list[Any]:
        return self._control(DrainMessage(self.context.run_id, self.context.task_name))

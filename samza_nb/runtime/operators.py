"""Operator implementations: what each operator spec does inside a task (SAMZA.md §5.8, §11.2).

Every task hosts the whole DAG. An implementation receives a message with ``on_message`` and
pushes results to its next operators. Control propagation follows §5.8: an operator reacts to
end-of-stream or drain only when all of its input streams have ended or drained, and passes the
minimum output watermark of its upstream operators on (operators of branches this task does not
consume count as +inf).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec

from samza_nb.plan.kv import KV
from samza_nb.plan.operators import (
    BroadcastOperatorSpec,
    FilterOperatorSpec,
    FlatMapOperatorSpec,
    InputOperatorSpec,
    JoinOperatorSpec,
    MapOperatorSpec,
    OperatorSpec,
    OutputOperatorSpec,
    PartitionByOperatorSpec,
    SendToTableOperatorSpec,
    SinkOperatorSpec,
    StreamTableJoinOperatorSpec,
    WindowOperatorSpec,
)
from samza_nb.plan.serdes import KVSerde
from samza_nb.plan.windows import (
    AccumulationMode,
    AnyTrigger,
    CountTrigger,
    FiringType,
    RepeatingTrigger,
    TimeSinceFirstMessageTrigger,
    TimeSinceLastMessageTrigger,
    TimeTrigger,
    Trigger,
    WindowKey,
    WindowPane,
    WindowType,
)
from samza_nb.runtime.control import (
    LONG_MAX,
    WATERMARK_NOT_EXIST,
    ControlMessage,
    DrainMessage,
    EndOfStreamMessage,
    WatermarkMessage,
)

if TYPE_CHECKING:
    from samza_nb.runtime.task import TaskContext

__all__ = ["OperatorImpl", "UserFunctionError", "build_operator_graph"]

_pack = msgspec.msgpack.Encoder().encode
_unpack = msgspec.msgpack.Decoder().decode


class UserFunctionError(Exception):
    """A user function raised; carries the operator id (the task adds SSP and offset)."""

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

    # -- messages --------------------------------------------------------------------------
    def on_message(self, message: Any, source: OperatorImpl | None) -> None:
        self.messages_in += 1
        self.emit(message)

    def emit(self, message: Any) -> None:
        for op in self.next_ops:
            op.on_message(message, self)

    def emit_all(self, messages: Iterable[Any]) -> None:
        for message in messages:
            self.emit(message)

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception as error:
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


class _InputImpl(OperatorImpl):
    pass


class _MapImpl(OperatorImpl):
    def on_message(self, message: Any, source: OperatorImpl | None) -> None:
        self.messages_in += 1
        fn = self.spec.fn  # type: ignore[attr-defined]
        try:
            result = fn(message)
        except Exception as error:
            raise UserFunctionError(self.op_id, error, self.spec.user_location) from error
        if result is not None:
            self.emit(result)


class _FlatMapImpl(OperatorImpl):
    def on_message(self, message: Any, source: OperatorImpl | None) -> None:
        self.messages_in += 1
        results = self.call(self.spec.fn, message)  # type: ignore[attr-defined]
        if results is not None:
            for result in results:
                self.emit(result)


class _FilterImpl(OperatorImpl):
    def on_message(self, message: Any, source: OperatorImpl | None) -> None:
        self.messages_in += 1
        fn = self.spec.fn  # type: ignore[attr-defined]
        try:
            keep = fn(message)
        except Exception as error:
            raise UserFunctionError(self.op_id, error, self.spec.user_location) from error
        if keep:
            self.emit(message)


class _SinkImpl(OperatorImpl):
    def on_message(self, message: Any, source: OperatorImpl | None) -> None:
        self.messages_in += 1
        self.call(self.spec.fn, message)  # type: ignore[attr-defined]


class _OutputImpl(OperatorImpl):
    """send_to(output stream): keyed messages by murmur2 of the key, others round robin."""

    def __init__(self, spec: OutputOperatorSpec, context: TaskContext):
        super().__init__(spec, context)
        self.stream_id = spec.stream_id
        self.writer = context.writer(spec.stream_id)
        serde = context.stream_serde(spec.stream_id)
        self.kv = isinstance(serde, KVSerde)
        self.key_encode = serde.key_serde.to_bytes if isinstance(serde, KVSerde) else _json_key
        self.value_encode = serde.value_serde.to_bytes if isinstance(serde, KVSerde) else serde.to_bytes

    def on_message(self, message: Any, source: OperatorImpl | None) -> None:
        self.messages_in += 1
        try:
            if isinstance(message, KV):
                key = message.key
                key_bytes = self.key_encode(key) if key is not None else None
                self.writer.write_keyed(key_bytes, self.value_encode(message.value))
            else:
                self.writer.write_unkeyed(self.value_encode(message))
        except Exception as error:
            raise UserFunctionError(self.op_id, error, self.spec.user_location) from error
        self.emit(message)


def _json_key(key: Any) -> bytes:
    return msgspec.json.encode(key)


class _PartitionByImpl(OperatorImpl):
    def __init__(self, spec: PartitionByOperatorSpec, context: TaskContext):
        super().__init__(spec, context)
        serde = spec.serde
        assert serde is not None
        self.key_fn = spec.key_fn
        self.value_fn = spec.value_fn
        self.key_encode = serde.key_serde.to_bytes
        self.value_encode = serde.value_serde.to_bytes
        self.writer = context.writer(spec.stream_id)

    def on_message(self, message: Any, source: OperatorImpl | None) -> None:
        self.messages_in += 1
        try:
            key = self.key_fn(message)  # type: ignore[misc]
            value = self.value_fn(message) if self.value_fn is not None else message
            key_bytes = self.key_encode(key) if key is not None else None
            value_bytes = self.value_encode(value)
        except Exception as error:
            raise UserFunctionError(self.op_id, error, self.spec.user_location) from error
        self.writer.write_keyed(key_bytes, value_bytes)

    def handle_end_of_stream(self) -> list[Any]:
        self.writer.send_to_aggregate(EndOfStreamMessage(self.context.task_name))
        return []

    def handle_watermark(self, watermark: int) -> list[Any]:
        self.writer.send_to_aggregate(WatermarkMessage(watermark, self.context.task_name))
        return []

    def handle_drain(self) -> list[Any]:
        self.writer.send_to_aggregate(DrainMessage(self.context.run_id, self.context.task_name))
        return []


class _BroadcastImpl(OperatorImpl):
    def __init__(self, spec: BroadcastOperatorSpec, context: TaskContext):
        super().__init__(spec, context)
        serde = spec.serde
        self.kv = isinstance(serde, KVSerde)
        self.serde = serde
        self.writer = context.writer(spec.stream_id)

    def on_message(self, message: Any, source: OperatorImpl | None) -> None:
        self.messages_in += 1
        try:
            if isinstance(self.serde, KVSerde):
                if not isinstance(message, KV):
                    message = KV(None, message)
                key_bytes = (
                    self.serde.key_serde.to_bytes(message.key) if message.key is not None else None
                )
                self.writer.write_to(0, key_bytes, self.serde.value_serde.to_bytes(message.value))
            else:
                self.writer.write_to(0, None, self.serde.to_bytes(message))  # type: ignore[union-attr]
        except Exception as error:
            raise UserFunctionError(self.op_id, error, self.spec.user_location) from error

    def _control(self, message: ControlMessage) -> list[Any]:
        self.writer.send_control_to(0, message)
        return []

    def handle_end_of_stream(self) -> list[Any]:
        return self._control(EndOfStreamMessage(self.context.task_name))

    def handle_watermark(self, watermark: int) -> list[Any]:
        return self._control(WatermarkMessage(watermark, self.context.task_name))

    def handle_drain(self) -> list[Any]:
        return self._control(DrainMessage(self.context.run_id, self.context.task_name))


# -- windows --------------------------------------------------------------------------------


@dataclass
class _Pane:
    key: Any
    window_ts: int
    value: Any
    count: int = 0
    first_ts: int = 0
    last_ts: int = 0
    early_count: int = 0
    early_first_ts: int = 0
    early_cancelled: bool = False
    dirty: bool = True

    def encode(self) -> bytes:
        return _pack(
            [
                to_storable(self.key),
                self.window_ts,
                to_storable(self.value),
                self.count,
                self.first_ts,
                self.last_ts,
                self.early_count,
                self.early_first_ts,
                self.early_cancelled,
            ]
        )

    @classmethod
    def decode(cls, data: bytes) -> _Pane:
        key, ts, value, count, first, last, early_count, early_first, cancelled = _unpack(data)
        return cls(
            from_storable(key), ts, from_storable(value), count, first, last, early_count,
            early_first, cancelled, dirty=False,
        )


def _trigger_fires(
    trigger: Trigger, count: int, first_ts: int, last_ts: int, window_ts: int, now: int
) -> bool:
    if isinstance(trigger, CountTrigger):
        return count >= trigger.count
    if isinstance(trigger, TimeTrigger):
        return now >= window_ts + trigger.duration_ms
    if isinstance(trigger, TimeSinceFirstMessageTrigger):
        return count > 0 and now >= first_ts + trigger.duration_ms
    if isinstance(trigger, TimeSinceLastMessageTrigger):
        return count > 0 and now >= last_ts + trigger.duration_ms
    if isinstance(trigger, AnyTrigger):
        return any(
            _trigger_fires(inner, count, first_ts, last_ts, window_ts, now)
            for inner in trigger.triggers
        )
    if isinstance(trigger, RepeatingTrigger):
        return _trigger_fires(trigger.trigger, count, first_ts, last_ts, window_ts, now)
    return False


class _WindowImpl(OperatorImpl):
    """Processing-time windows; state in the store named by the op id."""

    def __init__(self, spec: WindowOperatorSpec, context: TaskContext):
        super().__init__(spec, context)
        window = spec.window
        assert window is not None
        self.window = window
        self.store = context.store(spec.op_id)
        self.panes: dict[bytes, _Pane] = {}
        self.deleted: set[bytes] = set()

    def load(self) -> None:
        self.panes = {key: _Pane.decode(value) for key, value in self.store.items()}

    def save(self) -> None:
        for key in self.deleted:
            if key not in self.panes:
                self.store.delete(key)
        for key, pane in self.panes.items():
            if pane.dirty:
                self.store.put(key, pane.encode())
                pane.dirty = False
        self.deleted.clear()

    def _store_key(self, key: Any, window_ts: int) -> bytes:
        if self.window.window_type is WindowType.SESSION:
            return _pack([to_storable(key)])
        return _pack([to_storable(key), window_ts])

    def on_message(self, message: Any, source: OperatorImpl | None) -> None:
        self.messages_in += 1
        window = self.window
        now = self.context.now_ms
        key = self.call(window.key_fn, message) if window.key_fn is not None else None
        if window.window_type is WindowType.SESSION:
            store_key = self._store_key(key, 0)
            pane = self.panes.get(store_key)
            window_ts = pane.window_ts if pane is not None else now
        else:
            window_ts = now - now % window.size_ms
            store_key = self._store_key(key, window_ts)
            pane = self.panes.get(store_key)
        if pane is None:
            initial = self.call(window.initial) if window.initial is not None else None
            pane = _Pane(key, window_ts, initial if window.is_aggregating else [], first_ts=now)
            pane.early_first_ts = now
            self.panes[store_key] = pane
        if window.is_aggregating:
            pane.value = self.call(window.fold, message, pane.value)  # type: ignore[arg-type]
        else:
            pane.value.append(message)
        if pane.early_count == 0:
            pane.early_first_ts = now
        pane.count += 1
        pane.early_count += 1
        pane.last_ts = now
        pane.dirty = True
        self._check(store_key, pane, now)

    def _check(self, store_key: bytes, pane: _Pane, now: int) -> None:
        window = self.window
        if _trigger_fires(
            window.default_trigger, pane.count, pane.first_ts, pane.last_ts, pane.window_ts, now
        ):
            self._fire(store_key, pane, FiringType.DEFAULT)
            return
        early = window.early_trigger
        if (
            early is not None
            and not pane.early_cancelled
            and pane.early_count > 0
            and _trigger_fires(
                early, pane.early_count, pane.early_first_ts, pane.last_ts, pane.window_ts, now
            )
        ):
            self._fire(store_key, pane, FiringType.EARLY)

    def _fire(self, store_key: bytes, pane: _Pane, firing: FiringType) -> None:
        window = self.window
        value = pane.value if window.is_aggregating else list(pane.value)
        self.emit(
            WindowPane(
                WindowKey(pane.key, str(pane.window_ts)), value, firing, window.accumulation_mode
            )
        )
        if firing is FiringType.DEFAULT:
            del self.panes[store_key]
            self.deleted.add(store_key)
            return
        pane.early_count = 0
        if not isinstance(window.early_trigger, RepeatingTrigger):
            pane.early_cancelled = True
        if window.accumulation_mode is AccumulationMode.DISCARDING:
            pane.value = self.call(window.initial) if window.is_aggregating and window.initial else (
                None if window.is_aggregating else []
            )
        pane.dirty = True

    def on_timer(self, now_ms: int) -> None:
        for store_key, pane in sorted(self.panes.items(), key=lambda item: item[1].window_ts):
            if store_key in self.panes:
                self._check(store_key, pane, now_ms)

    def _flush_all(self) -> list[Any]:
        for store_key, pane in sorted(self.panes.items(), key=lambda item: item[1].window_ts):
            self._fire(store_key, pane, FiringType.DEFAULT)
        return []

    def handle_end_of_stream(self) -> list[Any]:
        return self._flush_all()

    def handle_drain(self) -> list[Any]:
        # SEP wins over Samza's code: pending panes are emitted on drain (DESIGN.md).
        return self._flush_all()


# -- joins and tables -----------------------------------------------------------------------


class _JoinImpl(OperatorImpl):
    """Stream-stream join: the latest message per key and side, joined within ``ttl``."""

    def __init__(self, spec: JoinOperatorSpec, context: TaskContext):
        super().__init__(spec, context)
        self.join_spec = spec
        self.left_store = context.store(f"{spec.op_id}-L")
        self.right_store = context.store(f"{spec.op_id}-R")
        self.left_impl: OperatorImpl | None = None

    def on_message(self, message: Any, source: OperatorImpl | None) -> None:
        self.messages_in += 1
        spec = self.join_spec
        is_left = source is not None and source.spec is spec.left
        key_fn = spec.left_key_fn if is_left else spec.right_key_fn
        key = self.call(key_fn, message) if key_fn is not None else message.key
        if key is None:
            return
        now = self.context.now_ms
        store_key = _pack(to_storable(key))
        mine, other = (
            (self.left_store, self.right_store) if is_left else (self.right_store, self.left_store)
        )
        mine.put(store_key, _pack([to_storable(message), now]))
        stored = other.get(store_key)
        if stored is None:
            return
        other_message, stored_at = _unpack(stored)
        if stored_at <= now - spec.ttl_ms:
            return
        other_message = from_storable(other_message)
        left, right = (message, other_message) if is_left else (other_message, message)
        result = self.call(spec.join_fn, left, right)  # type: ignore[arg-type]
        if result is not None:
            self.emit(result)


class _TableJoinImpl(OperatorImpl):
    def __init__(self, spec: StreamTableJoinOperatorSpec, context: TaskContext):
        super().__init__(spec, context)
        self.table_spec = spec
        table = spec.table
        assert table is not None
        self.table = context.table(table.table_id)

    def on_message(self, message: Any, source: OperatorImpl | None) -> None:
        self.messages_in += 1
        spec = self.table_spec
        key = self.call(spec.key_fn, message) if spec.key_fn is not None else message.key
        record = None
        if key is not None:
            value = self.table.get(key)
            if value is not None:
                record = KV(key, value)
        result = self.call(spec.join_fn, message, record)  # type: ignore[arg-type]
        if result is not None:
            self.emit(result)


class _SendToTableImpl(OperatorImpl):
    def __init__(self, spec: SendToTableOperatorSpec, context: TaskContext):
        super().__init__(spec, context)
        table = spec.table
        assert table is not None
        self.table = context.table(table.table_id)

    def on_message(self, message: Any, source: OperatorImpl | None) -> None:
        self.messages_in += 1
        if not isinstance(message, KV):
            error = TypeError(f"send_to(table) needs KV messages, got {type(message).__name__}")
            raise UserFunctionError(self.op_id, error, self.spec.user_location)
        try:
            self.table.put(message.key, message.value)
        except Exception as error:
            raise UserFunctionError(self.op_id, error, self.spec.user_location) from error


_IMPLS: dict[type[OperatorSpec], type[OperatorImpl]] = {
    InputOperatorSpec: _InputImpl,
    MapOperatorSpec: _MapImpl,
    FlatMapOperatorSpec: _FlatMapImpl,
    FilterOperatorSpec: _FilterImpl,
    SinkOperatorSpec: _SinkImpl,
    OutputOperatorSpec: _OutputImpl,
    PartitionByOperatorSpec: _PartitionByImpl,
    BroadcastOperatorSpec: _BroadcastImpl,
    WindowOperatorSpec: _WindowImpl,
    JoinOperatorSpec: _JoinImpl,
    StreamTableJoinOperatorSpec: _TableJoinImpl,
    SendToTableOperatorSpec: _SendToTableImpl,
}


def build_operator_graph(
    input_specs: dict[str, InputOperatorSpec],
    context: TaskContext,
    task_streams: set[str],
) -> tuple[dict[str, OperatorImpl], dict[str, OperatorImpl]]:
    """Implementations for every operator reachable from the inputs; returns (impls by op id,
    input impls by stream id). ``task_streams`` are the streams this task has SSPs of."""
    impls: dict[str, OperatorImpl] = {}

    def impl_for(spec: OperatorSpec) -> OperatorImpl:
        existing = impls.get(spec.op_id)
        if existing is not None:
            return existing
        factory = _IMPLS.get(type(spec), OperatorImpl)
        impl = factory(spec, context)
        impls[spec.op_id] = impl
        if isinstance(spec, PartitionByOperatorSpec | BroadcastOperatorSpec):
            # A shuffle ends the stage: its consumers hang off the intermediate stream's input.
            return impl
        for next_spec in spec.next_ops:
            next_impl = impl_for(next_spec)
            impl.next_ops.append(next_impl)
            next_impl.prev_ops.append(impl)
        return impl

    inputs = {stream_id: impl_for(spec) for stream_id, spec in sorted(input_specs.items())}

    def mark(impl: OperatorImpl, stream_id: str) -> None:
        if stream_id in impl.input_streams:
            return
        impl.input_streams.add(stream_id)
        if stream_id in task_streams:
            impl.used_in_task = True
        for next_impl in impl.next_ops:
            mark(next_impl, stream_id)

    for stream_id, impl in inputs.items():
        mark(impl, stream_id)
    return impls, inputs

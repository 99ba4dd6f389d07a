"""Windows inside a task: tumbling and session panes, triggers, firing (SAMZA.md §11.2).

Windows use processing time: the epoch's timestamp, the same for every task of the epoch. A
pane's state lives in the task's store named by the window's op id, so it survives epochs and
moves with its changelog. Pending panes fire on end-of-stream and on drain (the SEP).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec

from samza_nb.plan.keys import check_partition_key
from samza_nb.plan.operators import WindowOperatorSpec
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
from samza_nb.runtime.operators import SKIPPED, OperatorImpl, from_storable, to_storable

if TYPE_CHECKING:
    from samza_nb.runtime.context import TaskContext

__all__ = ["WindowImpl"]

_pack = msgspec.msgpack.Encoder().encode
_unpack = msgspec.msgpack.Decoder().decode


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


class WindowImpl(OperatorImpl):
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
        if key is SKIPPED or self.call(check_partition_key, key, self.op_id) is SKIPPED:
            return
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
            if initial is SKIPPED:
                return
            pane = _Pane(key, window_ts, initial if window.is_aggregating else [], first_ts=now)
            pane.early_first_ts = now
            self.panes[store_key] = pane
        if window.is_aggregating:
            folded = self.call(window.fold, message, pane.value)  # type: ignore[arg-type]
            if folded is SKIPPED:
                return
            pane.value = folded
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
            if window.is_aggregating and window.initial:
                initial = self.call(window.initial)
                pane.value = None if initial is SKIPPED else initial
            else:
                pane.value = None if window.is_aggregating else []
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

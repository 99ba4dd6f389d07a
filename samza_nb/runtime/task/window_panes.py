"""A window's pane as a task keeps it (in memory within an epoch, in the window's store between
epochs), and when a trigger fires it (SAMZA.md §11.2); runtime/task/windows.py runs them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from samza_nb.plan.kv import unpack_storable
from samza_nb.plan.windows import (
    AnyTrigger,
    CountTrigger,
    RepeatingTrigger,
    TimeSinceFirstMessageTrigger,
    TimeSinceLastMessageTrigger,
    TimeTrigger,
    Trigger,
)
from samza_nb.runtime.task.operators import to_storable

if TYPE_CHECKING:
    from samza_nb.plan.windows import WindowSpec
    from samza_nb.runtime.task.context import TaskContext

__all__ = ["STABLE_KEY_TYPES", "Pane", "PaneHolder", "trigger_fires"]

#: Keys whose store key is computed once per task epoch (not bool: True equals 1 in a dict).
STABLE_KEY_TYPES = frozenset({str, int, bytes})

_pack = msgspec.msgpack.Encoder().encode


@dataclass
class Pane:
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
    def decode(cls, data: bytes) -> Pane:
        key, ts, value, count, first, last, early_count, early_first, cancelled = unpack_storable(data)
        return cls(key, ts, value, count, first, last, early_count, early_first, cancelled, dirty=False)


class PaneHolder(Protocol):
    """What a window's message receivers (runtime/task/window_event_time.py) use of the window
    operator that holds the panes (runtime/task/windows.py, ``WindowImpl``)."""

    window: WindowSpec
    context: TaskContext
    op_id: str
    panes: dict[bytes, Pane]
    input_watermark: int
    dropped: int

    def failed(self, error: Exception) -> Any: ...

    def store_key(self, key: Any, window_ts: int) -> bytes: ...

    def new_pane(self, store_key: bytes, key: Any, window_ts: int, now: int) -> Pane | None: ...

    def check_triggers(self, store_key: bytes, pane: Pane, now: int) -> None: ...

    def add_counter(self, counter: Callable[[], int]) -> None: ...


def trigger_fires(
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
            trigger_fires(inner, count, first_ts, last_ts, window_ts, now)
            for inner in trigger.triggers
        )
    if isinstance(trigger, RepeatingTrigger):
        return trigger_fires(trigger.trigger, count, first_ts, last_ts, window_ts, now)
    return False

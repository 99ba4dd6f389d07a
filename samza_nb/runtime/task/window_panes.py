"""A window's pane as a task keeps it (in memory within an epoch, in the window's store between
epochs), and when a trigger fires it (SAMZA.md §11.2); runtime/task/windows.py runs them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from samza_nb.plan.windows import (
    AnyTrigger,
    CountTrigger,
    RepeatingTrigger,
    TimeSinceFirstMessageTrigger,
    TimeSinceLastMessageTrigger,
    TimeTrigger,
    Trigger,
)
from samza_nb.runtime.task.operators import from_storable, to_storable

__all__ = ["STABLE_KEY_TYPES", "Pane", "trigger_fires"]

#: Keys whose store key is computed once per task epoch (not bool: True equals 1 in a dict).
STABLE_KEY_TYPES = frozenset({str, int, bytes})

_pack = msgspec.msgpack.Encoder().encode
_unpack = msgspec.msgpack.Decoder().decode


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
        key, ts, value, count, first, last, early_count, early_first, cancelled = _unpack(data)
        return cls(
            from_storable(key), ts, from_storable(value), count, first, last, early_count,
            early_first, cancelled, dirty=False,
        )


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

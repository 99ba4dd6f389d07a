"""Window and trigger specs, and the panes a window emits (SAMZA.md §11.2).

These are plain data: the runtime (samza_nb.runtime) evaluates them. Durations are kept in
milliseconds; builders accept a ``timedelta`` or a number of milliseconds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from typing import Any, Generic, TypeVar

from samza_nb.errors import PlanError

__all__ = [
    "AccumulationMode",
    "AnyTrigger",
    "CountTrigger",
    "FiringType",
    "RepeatingTrigger",
    "TimeSinceFirstMessageTrigger",
    "TimeSinceLastMessageTrigger",
    "TimeTrigger",
    "Trigger",
    "WindowKey",
    "WindowPane",
    "WindowSpec",
    "WindowType",
    "duration_ms",
]

K = TypeVar("K")
M = TypeVar("M")


class AccumulationMode(StrEnum):
    """What a window keeps after an early firing (unset behaves as ACCUMULATING, as in Samza)."""

    ACCUMULATING = "ACCUMULATING"
    DISCARDING = "DISCARDING"


class FiringType(StrEnum):
    """Why a pane was emitted: an early trigger, the default trigger, or a late one."""

    EARLY = "EARLY"
    DEFAULT = "DEFAULT"
    LATE = "LATE"


class WindowType(StrEnum):
    TUMBLING = "TUMBLING"
    SESSION = "SESSION"
    #: Overlapping windows of ``size_ms`` starting every ``slide_ms`` (event time only).
    HOPPING = "HOPPING"


def duration_ms(value: timedelta | int | float, *, what: str) -> int:
    """Milliseconds from a timedelta or a number of milliseconds; must be positive."""
    if isinstance(value, timedelta):
        millis = int(value.total_seconds() * 1000)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        millis = int(value)
    else:
        msg = f"{what} must be a timedelta or milliseconds, got {value!r}"
        raise PlanError(msg)
    if millis <= 0:
        msg = f"{what} must be positive, got {value!r}"
        raise PlanError(msg)
    return millis


@dataclass(frozen=True)
class Trigger:
    """Base of all trigger specs."""

    def timer_durations_ms(self) -> tuple[int, ...]:
        """Durations of the timers this trigger needs (for task.window.ms)."""
        return ()


@dataclass(frozen=True)
class CountTrigger(Trigger):
    """Fires once ``count`` messages arrived in the pane."""

    count: int


@dataclass(frozen=True)
class TimeTrigger(Trigger):
    """Fires at the end of a tumbling window (the next multiple of ``duration_ms``)."""

    duration_ms: int

    def timer_durations_ms(self) -> tuple[int, ...]:
        return (self.duration_ms,)


@dataclass(frozen=True)
class TimeSinceFirstMessageTrigger(Trigger):
    """Fires ``duration_ms`` after the first message of the pane."""

    duration_ms: int

    def timer_durations_ms(self) -> tuple[int, ...]:
        return (self.duration_ms,)


@dataclass(frozen=True)
class TimeSinceLastMessageTrigger(Trigger):
    """Fires once no message arrived for ``duration_ms`` (session gap)."""

    duration_ms: int

    def timer_durations_ms(self) -> tuple[int, ...]:
        return (self.duration_ms,)


@dataclass(frozen=True)
class AnyTrigger(Trigger):
    """Fires when any of its triggers fires."""

    triggers: tuple[Trigger, ...]

    def timer_durations_ms(self) -> tuple[int, ...]:
        return tuple(d for trigger in self.triggers for d in trigger.timer_durations_ms())


@dataclass(frozen=True)
class RepeatingTrigger(Trigger):
    """Re-arms its trigger after every firing."""

    trigger: Trigger

    def timer_durations_ms(self) -> tuple[int, ...]:
        return self.trigger.timer_durations_ms()


@dataclass(frozen=True)
class WindowKey(Generic[K]):
    """The key of a pane: the user key (None for unkeyed windows) and the pane id, which is the
    window's start timestamp in milliseconds as a string (Samza's form)."""

    key: K
    pane_id: str

    def __repr__(self) -> str:
        return f"WindowKey(key={self.key!r}, pane_id={self.pane_id!r})"


@dataclass(frozen=True)
class WindowPane(Generic[K, M]):
    """What a window emits: its key, the aggregate (or collected messages) and why it fired."""

    key: WindowKey[K]
    message: M
    trigger_type: FiringType = FiringType.DEFAULT
    accumulation_mode: AccumulationMode = AccumulationMode.ACCUMULATING


@dataclass(frozen=True)
class WindowSpec:
    """A window: its type, key function, duration or gap, aggregation and triggers.

    ``initial``/``fold`` make an aggregating window (``fold(message, aggregate) -> aggregate``);
    without them the window collects its messages into a list. Aggregates and collected
    messages are stored in the task's state store and must be msgpack-encodable (numbers,
    strings, lists, dicts …); nothing is pickled.
    """

    window_type: WindowType
    key_fn: Callable[[Any], Any] | None
    size_ms: int
    default_trigger: Trigger
    initial: Callable[[], Any] | None = None
    fold: Callable[[Any, Any], Any] | None = None
    early_trigger: Trigger | None = None
    accumulation_mode: AccumulationMode = AccumulationMode.ACCUMULATING
    #: Event time (beyond Samza, whose windows are processing-time only): ``event_time(message)``
    #: gives the message's timestamp in milliseconds; the message goes to the tumbling pane
    #: holding that timestamp, and a pane fires when the watermark passes its end. Messages
    #: for a pane that already fired (behind the watermark) are dropped as late.
    event_time: Callable[[Any], int] | None = None
    #: Hopping windows only (beyond Samza): a window starts at every multiple of ``slide_ms``
    #: and lasts ``size_ms``, so a message belongs to every window covering its timestamp.
    slide_ms: int | None = None
    #: ``merge(aggregate, aggregate) -> aggregate``, combining two aggregates each started
    #: from ``initial()`` (processing-time tumbling windows): with it, a partition_by read only
    #: by this window sends partial aggregates instead of every message (plan/combining.py).
    merge: Callable[[Any, Any], Any] | None = None

    @property
    def is_aggregating(self) -> bool:
        return self.fold is not None

    def set_early_trigger(self, trigger: Trigger) -> WindowSpec:
        """This window with an early trigger (fires before the default trigger)."""
        if not isinstance(trigger, Trigger):
            msg = f"early trigger must be a Triggers.* trigger, got {trigger!r}"
            raise PlanError(msg)
        return dataclasses.replace(self, early_trigger=trigger)

    def set_accumulation_mode(self, mode: AccumulationMode | str) -> WindowSpec:
        try:
            # Strings are taken in any case ("discarding"), as users write them in notebooks.
            resolved = AccumulationMode(mode.upper() if isinstance(mode, str) else mode)
        except ValueError as error:
            msg = f"accumulation mode must be ACCUMULATING or DISCARDING, got {mode!r}"
            raise PlanError(msg) from error
        return dataclasses.replace(self, accumulation_mode=resolved)

    @property
    def is_event_time(self) -> bool:
        return self.event_time is not None

    def timer_durations_ms(self) -> tuple[int, ...]:
        """Durations relevant to task.window.ms (default trigger and early trigger)."""
        durations = () if self.is_event_time else self.default_trigger.timer_durations_ms()
        if self.early_trigger is not None:
            durations += self.early_trigger.timer_durations_ms()
        return durations

"""Window and trigger builders: ``Windows.keyed_tumbling(...)``, ``Triggers.count(...)``.

They build the plain specs of :mod:`samza_nb.plan.windows`, checking arguments at the call.
Durations are ``timedelta`` objects or milliseconds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from samza_nb.api._checks import check_function, describe, user_location
from samza_nb.errors import PlanError
from samza_nb.plan.windows import (
    AccumulationMode,
    AnyTrigger,
    CountTrigger,
    RepeatingTrigger,
    TimeSinceFirstMessageTrigger,
    TimeSinceLastMessageTrigger,
    TimeTrigger,
    Trigger,
    WindowSpec,
    WindowType,
    duration_ms,
)

__all__ = ["Triggers", "Windows"]

Duration = timedelta | int


def _at(location: str | None) -> str:
    return f" (at {location})" if location else ""


class Triggers:
    """Trigger builders for ``early_trigger=`` (SAMZA.md §11.2)."""

    @staticmethod
    def count(count: int) -> Trigger:
        """Fires once ``count`` messages are in the pane.

        >>> Triggers.count(3)
        CountTrigger(count=3)
        """
        if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
            msg = (
                f"Triggers.count{_at(user_location())} needs a positive int, got {describe(count)}"
            )
            raise PlanError(msg)
        return CountTrigger(count)

    @staticmethod
    def time_since_first_message(duration: Duration) -> Trigger:
        """Fires ``duration`` after the first message of the pane."""
        where = f"Triggers.time_since_first_message{_at(user_location())}: duration"
        return TimeSinceFirstMessageTrigger(duration_ms(duration, what=where))

    @staticmethod
    def time_since_last_message(duration: Duration) -> Trigger:
        """Fires once no message arrived for ``duration``."""
        where = f"Triggers.time_since_last_message{_at(user_location())}: duration"
        return TimeSinceLastMessageTrigger(duration_ms(duration, what=where))

    @staticmethod
    def any(*triggers: Trigger) -> Trigger:
        """Fires when any of ``triggers`` fires.

        >>> Triggers.any(Triggers.count(10), Triggers.time_since_first_message(500))
        AnyTrigger(triggers=(CountTrigger(count=10), TimeSinceFirstMessageTrigger(duration_ms=500)))
        """
        if len(triggers) == 1 and isinstance(triggers[0], list | tuple):
            triggers = tuple(triggers[0])
        if not triggers:
            msg = f"Triggers.any{_at(user_location())} needs at least one trigger"
            raise PlanError(msg)
        for trigger in triggers:
            if not isinstance(trigger, Trigger):
                msg = f"Triggers.any{_at(user_location())}: expected Triggers.*, got {describe(trigger)}"
                raise PlanError(msg)
        return AnyTrigger(tuple(triggers))

    @staticmethod
    def repeat(trigger: Trigger) -> Trigger:
        """Re-arms ``trigger`` after every firing."""
        if not isinstance(trigger, Trigger):
            msg = f"Triggers.repeat{_at(user_location())}: expected Triggers.*, got {describe(trigger)}"
            raise PlanError(msg)
        return RepeatingTrigger(trigger)


def _window(
    builder: str,
    window_type: WindowType,
    key_fn: Callable[[Any], Any] | None,
    size: Duration,
    size_name: str,
    initial: Callable[[], Any] | None,
    fold: Callable[[Any, Any], Any] | None,
    early_trigger: Trigger | None,
    accumulation_mode: AccumulationMode | str | None,
    event_time: Callable[[Any], int] | None = None,
    merge: Callable[[Any, Any], Any] | None = None,
) -> WindowSpec:
    name = f"{builder}{_at(user_location())}"
    if key_fn is not None:
        check_function(key_fn, what="key_fn", operator=name, arity=1, hint="the message")
    if event_time is not None:
        check_function(event_time, what="event_time", operator=name, arity=1, hint="the message")
    size_ms = duration_ms(size, what=f"{name}: {size_name}")
    if (initial is None) != (fold is None):
        msg = (
            f"{name}: give both initial= and fold= for an aggregating window, or neither to "
            "collect the messages"
        )
        raise PlanError(msg)
    if initial is not None:
        check_function(initial, what="initial", operator=name, arity=0, hint="no arguments")
        check_function(fold, what="fold", operator=name, arity=2, hint="message, aggregate")
    if merge is not None:
        if initial is None or event_time is not None:
            msg = (
                f"{name}: merge= combines the aggregates of a processing-time window: give it "
                "with initial= and fold=, and without event_time="
            )
            raise PlanError(msg)
        check_function(merge, what="merge", operator=name, arity=2, hint="aggregate, aggregate")
    default: Trigger = (
        TimeSinceLastMessageTrigger(size_ms)
        if window_type is WindowType.SESSION
        else TimeTrigger(size_ms)
    )
    spec = WindowSpec(
        window_type=window_type,
        key_fn=key_fn,
        size_ms=size_ms,
        default_trigger=default,
        initial=initial,
        fold=fold,
        event_time=event_time,
        merge=merge,
    )
    if early_trigger is not None:
        if not isinstance(early_trigger, Trigger):
            msg = (
                f"{name}: early_trigger must be a Triggers.* trigger, got {describe(early_trigger)}"
            )
            raise PlanError(msg)
        spec = spec.set_early_trigger(early_trigger)
    if accumulation_mode is not None:
        try:
            spec = spec.set_accumulation_mode(accumulation_mode)
        except PlanError as error:
            msg = f"{name}: {error}"
            raise PlanError(msg) from error
    return spec


def _hopping(
    builder: str,
    key_fn: Callable[[Any], Any] | None,
    size: Duration,
    slide: Duration,
    event_time: Callable[[Any], int] | None,
    initial: Callable[[], Any] | None,
    fold: Callable[[Any, Any], Any] | None,
    early_trigger: Trigger | None,
    accumulation_mode: AccumulationMode | str | None,
) -> WindowSpec:
    name = f"{builder}{_at(user_location())}"
    if event_time is None:
        msg = (
            f"{name}: hopping windows are event-time only: give event_time=fn, the message's "
            "timestamp in milliseconds"
        )
        raise PlanError(msg)
    spec = _window(
        builder, WindowType.HOPPING, key_fn, size, "size",
        initial, fold, early_trigger, accumulation_mode, event_time,
    )  # fmt: skip
    slide_ms = duration_ms(slide, what=f"{name}: slide")
    if slide_ms > spec.size_ms:
        msg = (
            f"{name}: slide ({slide_ms} ms) must not exceed size ({spec.size_ms} ms); messages "
            "between windows would belong to none"
        )
        raise PlanError(msg)
    return dataclasses.replace(spec, slide_ms=slide_ms)


class Windows:
    """Window builders (SAMZA.md §11.2). With ``initial``/``fold`` a window keeps one
    aggregate per key and pane (``fold(message, aggregate) -> aggregate``); without them it
    collects the messages into a list. Panes are ``WindowPane(WindowKey(key, pane_id), message,
    trigger_type)``."""

    @staticmethod
    def tumbling(
        duration: Duration,
        *,
        initial: Callable[[], Any] | None = None,
        fold: Callable[[Any, Any], Any] | None = None,
        early_trigger: Trigger | None = None,
        accumulation_mode: AccumulationMode | str | None = None,
        event_time: Callable[[Any], int] | None = None,
        merge: Callable[[Any, Any], Any] | None = None,
    ) -> WindowSpec:
        """Fixed, non-overlapping windows of ``duration`` over all messages (key ``None``).

        By default over processing time (Samza's windows). With ``event_time=fn``, over the
        message's own timestamp ``fn(message)`` (milliseconds), each pane fired once the
        watermark passes its end: results do not depend on when epochs run.

        >>> from datetime import timedelta
        >>> Windows.tumbling(timedelta(seconds=10)).size_ms
        10000
        >>> Windows.tumbling(10_000, event_time=lambda bid: bid["ts"]).is_event_time
        True
        """
        return _window(
            "Windows.tumbling", WindowType.TUMBLING, None, duration, "duration",
            initial, fold, early_trigger, accumulation_mode, event_time, merge,
        )  # fmt: skip

    @staticmethod
    def keyed_tumbling(
        key_fn: Callable[[Any], Any],
        duration: Duration,
        *,
        initial: Callable[[], Any] | None = None,
        fold: Callable[[Any, Any], Any] | None = None,
        early_trigger: Trigger | None = None,
        accumulation_mode: AccumulationMode | str | None = None,
        event_time: Callable[[Any], int] | None = None,
        merge: Callable[[Any, Any], Any] | None = None,
    ) -> WindowSpec:
        """Fixed windows of ``duration`` per key ``key_fn(message)``; over event time with
        ``event_time=fn`` (see :meth:`tumbling`).

        ``merge(a, b)`` combines two aggregates, each started from ``initial()`` (for a count,
        ``lambda a, b: a + b``); the aggregate must not depend on the order of the messages.
        With it, a processing-time window without early trigger that reads a partition_by's
        stream alone lets each task fold what it shuffles before the shuffle and send one
        partial aggregate per key and epoch, as Spark's ``reduceByKey`` does: the same
        aggregates, far fewer shuffled records (plan/combining.py says what else differs)."""
        if key_fn is None:
            msg = f"Windows.keyed_tumbling{_at(user_location())} needs a key_fn"
            raise PlanError(msg)
        return _window(
            "Windows.keyed_tumbling", WindowType.TUMBLING, key_fn, duration, "duration",
            initial, fold, early_trigger, accumulation_mode, event_time, merge,
        )  # fmt: skip

    @staticmethod
    def keyed_session(
        key_fn: Callable[[Any], Any],
        gap: Duration,
        *,
        initial: Callable[[], Any] | None = None,
        fold: Callable[[Any, Any], Any] | None = None,
        early_trigger: Trigger | None = None,
        accumulation_mode: AccumulationMode | str | None = None,
    ) -> WindowSpec:
        """Session windows per key: a pane closes once its key is quiet for ``gap``."""
        if key_fn is None:
            msg = f"Windows.keyed_session{_at(user_location())} needs a key_fn"
            raise PlanError(msg)
        return _window(
            "Windows.keyed_session", WindowType.SESSION, key_fn, gap, "gap",
            initial, fold, early_trigger, accumulation_mode,
        )  # fmt: skip

    @staticmethod
    def hopping(
        size: Duration,
        slide: Duration,
        *,
        event_time: Callable[[Any], int],
        initial: Callable[[], Any] | None = None,
        fold: Callable[[Any, Any], Any] | None = None,
        early_trigger: Trigger | None = None,
        accumulation_mode: AccumulationMode | str | None = None,
    ) -> WindowSpec:
        """Overlapping (sliding) windows over all messages (key ``None``); see
        :meth:`keyed_hopping`.

        >>> spec = Windows.hopping(10_000, 2_000, event_time=lambda bid: bid["ts"])
        >>> spec.size_ms, spec.slide_ms
        (10000, 2000)
        """
        return _hopping(
            "Windows.hopping", None, size, slide, event_time,
            initial, fold, early_trigger, accumulation_mode,
        )  # fmt: skip

    @staticmethod
    def keyed_hopping(
        key_fn: Callable[[Any], Any],
        size: Duration,
        slide: Duration,
        *,
        event_time: Callable[[Any], int],
        initial: Callable[[], Any] | None = None,
        fold: Callable[[Any, Any], Any] | None = None,
        early_trigger: Trigger | None = None,
        accumulation_mode: AccumulationMode | str | None = None,
    ) -> WindowSpec:
        """Hopping (sliding) windows per key ``key_fn(message)``, over event time only.

        Beyond Samza, whose windows are tumbling or session and processing-time only
        (SAMZA.md A.10). A window starts at every multiple of ``slide`` and lasts ``size``:
        a message with timestamp ``event_time(message)`` (milliseconds) belongs to every
        window ``[start, start + size)`` covering it, ``size / slide`` of them when ``size``
        is a multiple of ``slide`` (else ``⌊size / slide⌋`` or ``⌈size / slide⌉``). The pane
        id is the window's start. As for event-time tumbling windows, a pane fires once the
        operator's input watermark passes its end, end of stream and drain fire what is
        left, the panes live in the task's store (with its changelog), and a message whose
        windows already fired is dropped as late from those windows (kept in the others).
        ``size > 0`` and ``0 < slide <= size``, else :class:`PlanError`.

        >>> spec = Windows.keyed_hopping(
        ...     lambda bid: bid["auction"], 10_000, 2_000, event_time=lambda bid: bid["ts"],
        ...     initial=lambda: 0, fold=lambda bid, n: n + 1)
        >>> spec.window_type.value, spec.slide_ms
        ('HOPPING', 2000)
        """
        if key_fn is None:
            msg = f"Windows.keyed_hopping{_at(user_location())} needs a key_fn"
            raise PlanError(msg)
        return _hopping(
            "Windows.keyed_hopping", key_fn, size, slide, event_time,
            initial, fold, early_trigger, accumulation_mode,
        )  # fmt: skip

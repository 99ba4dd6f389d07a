"""Window and trigger builders: ``Windows.keyed_tumbling(...)``, ``Triggers.count(...)``.

They build the plain specs of :mod:`samza_nb.plan.windows`, checking arguments at the call.
Durations are ``timedelta`` objects or milliseconds.
"""

from __future__ import annotations

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
    default: Trigger = (
        TimeTrigger(size_ms)
        if window_type is WindowType.TUMBLING
        else TimeSinceLastMessageTrigger(size_ms)
    )
    spec = WindowSpec(
        window_type=window_type,
        key_fn=key_fn,
        size_ms=size_ms,
        default_trigger=default,
        initial=initial,
        fold=fold,
        event_time=event_time,
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
            initial, fold, early_trigger, accumulation_mode, event_time,
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
    ) -> WindowSpec:
        """Fixed windows of ``duration`` per key ``key_fn(message)``; over event time with
        ``event_time=fn`` (see :meth:`tumbling`)."""
        if key_fn is None:
            msg = f"Windows.keyed_tumbling{_at(user_location())} needs a key_fn"
            raise PlanError(msg)
        return _window(
            "Windows.keyed_tumbling", WindowType.TUMBLING, key_fn, duration, "duration",
            initial, fold, early_trigger, accumulation_mode, event_time,
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

"""Windows and Triggers builders (SAMZA.md §11.2)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from samza_nb.api import AccumulationMode, FiringType, Triggers, WindowKey, WindowPane, Windows
from samza_nb.errors import PlanError
from samza_nb.plan.windows import (
    AnyTrigger,
    CountTrigger,
    RepeatingTrigger,
    TimeSinceFirstMessageTrigger,
    TimeSinceLastMessageTrigger,
    TimeTrigger,
    WindowType,
)


def test_tumbling_defaults() -> None:
    window = Windows.tumbling(timedelta(seconds=10))
    assert window.window_type is WindowType.TUMBLING
    assert window.key_fn is None and window.size_ms == 10_000
    assert window.default_trigger == TimeTrigger(10_000)
    assert not window.is_aggregating and window.early_trigger is None
    assert window.accumulation_mode is AccumulationMode.ACCUMULATING


def test_keyed_tumbling_aggregating() -> None:
    def key(kv: object) -> object:
        return kv

    def initial() -> int:
        return 0

    def fold(message: object, count: int) -> int:
        return count + 1

    window = Windows.keyed_tumbling(key, 500, initial=initial, fold=fold)
    assert (window.key_fn, window.initial, window.fold) == (key, initial, fold)
    assert window.is_aggregating and window.size_ms == 500


def test_keyed_session_uses_the_gap() -> None:
    window = Windows.keyed_session(len, timedelta(minutes=1))
    assert window.window_type is WindowType.SESSION
    assert window.default_trigger == TimeSinceLastMessageTrigger(60_000)


def test_early_trigger_and_accumulation_mode() -> None:
    early = Triggers.repeat(Triggers.count(5))
    window = Windows.keyed_tumbling(len, 1000, early_trigger=early, accumulation_mode="DISCARDING")
    assert window.early_trigger == RepeatingTrigger(CountTrigger(5))
    assert window.accumulation_mode is AccumulationMode.DISCARDING
    timed = Windows.tumbling(1000, early_trigger=Triggers.time_since_first_message(250))
    assert timed.timer_durations_ms() == (1000, 250)


def test_triggers() -> None:
    assert Triggers.count(3) == CountTrigger(3)
    assert Triggers.time_since_first_message(timedelta(seconds=1)) == TimeSinceFirstMessageTrigger(
        1000
    )
    assert Triggers.time_since_last_message(20) == TimeSinceLastMessageTrigger(20)
    both = Triggers.any(Triggers.count(2), Triggers.time_since_last_message(10))
    assert both == AnyTrigger((CountTrigger(2), TimeSinceLastMessageTrigger(10)))
    assert Triggers.any([Triggers.count(2)]) == AnyTrigger((CountTrigger(2),))
    assert both.timer_durations_ms() == (10,)


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: Triggers.count(0), "Triggers.count.*positive int"),
        (lambda: Triggers.count(True), "Triggers.count"),
        (lambda: Triggers.any(), "at least one trigger"),
        (lambda: Triggers.any(3), "expected Triggers"),
        (lambda: Triggers.repeat("x"), "Triggers.repeat"),
        (lambda: Triggers.time_since_first_message(-1), "must be positive"),
        (lambda: Windows.tumbling("10s"), "Windows.tumbling.*duration must be a timedelta"),
        (lambda: Windows.keyed_tumbling(None, 10), "needs a key_fn"),
        (lambda: Windows.keyed_session(3, 10), "key_fn must be a function"),
        (lambda: Windows.keyed_session(len, 0), "gap must be positive"),
        (lambda: Windows.tumbling(10, fold=lambda m, a: a), "both initial= and fold="),
        (lambda: Windows.tumbling(10, initial=lambda x: 0, fold=lambda m, a: a), "initial"),
        (lambda: Windows.tumbling(10, early_trigger=5), "early_trigger"),
        (lambda: Windows.tumbling(10, accumulation_mode="SOMETIMES"), "accumulation mode"),
    ],
)
def test_bad_arguments(build, match: str) -> None:
    with pytest.raises(PlanError, match=match) as info:
        build()
    assert "test_window_builders.py:" in str(info.value)  # where the user built it


def test_panes() -> None:
    pane = WindowPane(WindowKey("page-1", "10000"), 3)
    assert pane.key.key == "page-1" and pane.key.pane_id == "10000"
    assert pane.trigger_type is FiringType.DEFAULT

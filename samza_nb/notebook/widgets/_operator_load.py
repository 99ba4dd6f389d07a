"""How loaded each operator of a running job is: its rate, lag and watermark, and a state.

The StageGraph samples ``job.metrics()`` at every refresh; :class:`OperatorLoads` keeps a short
history per operator (counts for the rate, lags for the trend) and :func:`load_state` turns
the numbers into one of four states, a pure function of them:

- ``"idle"``: the operator received nothing over the rate window (rate 0 or not known yet).
- ``"backpressured"``: rate > 0 and its backlog grew over each of the last
  :data:`BACKLOG_SAMPLES` samples (never shrinking, and the newest larger than the oldest):
  what feeds it arrives faster than it consumes. The backlog is the consumer lag of the stream
  it reads for an input operator (of an input or intermediate stream), else its stage's input
  lag (every operator of a stage handles each message the stage reads, in turn).
- ``"busy"``: not backpressured, rate > 0, it handles at least :data:`BUSY_SHARE` of the
  messages its stage reads (its rate over the stage's input rate) and the backlog is above 0:
  it works flat out on a backlog that is not growing.
- ``"active"``: any other operator with rate > 0 (it keeps up: no backlog, or it sees only a
  small share of the stage's messages, as behind a selective filter).

Colours (:data:`STATE_COLOURS`): busy is GitHub's "attention" amber, backpressured its "danger"
red, each drawn as the node's outline (thicker) and as its light tint; both read on light and
dark themes, like the drawing's other colours. Idle and active operators keep their usual
colour.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from samza_nb.notebook.widgets._rate import RateMeter
from samza_nb.runtime.task.control import LONG_MAX

__all__ = [
    "BACKLOG_SAMPLES",
    "BUSY_SHARE",
    "STATE_COLOURS",
    "OperatorLoad",
    "OperatorLoads",
    "format_watermark",
    "load_state",
]

#: Samples of the backlog a growth must span to call an operator backpressured.
BACKLOG_SAMPLES = 3
#: The share of its stage's input rate from which an operator with a backlog is busy.
BUSY_SHARE = 0.5
STATE_COLOURS = {"busy": "#bf8700", "backpressured": "#cf222e"}


def load_state(rate: float | None, backlog: Sequence[int], stage_rate: float | None) -> str:
    """The operator's state from its rate (messages/s), its backlog at the last samples
    (oldest first) and its stage's input rate (see the module's docstring)."""
    if not rate or rate <= 0:
        return "idle"
    recent = list(backlog)[-BACKLOG_SAMPLES:]
    if (
        len(recent) == BACKLOG_SAMPLES
        and all(b >= a for a, b in zip(recent, recent[1:], strict=False))
        and recent[-1] > recent[0]
    ):
        return "backpressured"
    share = 1.0 if not stage_rate or stage_rate <= 0 else rate / stage_rate
    if recent and recent[-1] > 0 and share >= BUSY_SHARE:
        return "busy"
    return "active"


def format_watermark(ms: int | None, *, short: bool = False) -> str:
    """An event-time watermark (ms since the epoch) as a UTC time; "–" when there is none,
    "∞" for the +inf watermark a drain sends, the number of ms past the calendar's end."""
    if ms is None or ms < 0:
        return "–"
    if ms >= LONG_MAX:
        return "∞"
    try:
        at = datetime.fromtimestamp(ms / 1000, tz=UTC)
    except (OverflowError, ValueError, OSError):
        return f"{ms} ms"
    if short:
        return at.strftime("%H:%M:%S")
    return at.strftime("%Y-%m-%d %H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"


@dataclass(frozen=True)
class OperatorLoad:
    """One operator at the last refresh: messages in, rate (messages/s or None), lag (the
    consumer lag of the stream it reads, None when it reads none), watermark (min over tasks
    of its output watermark, ms; None when none yet), backlog (the lag its state is judged
    on) and state."""

    op_id: str
    messages_in: int
    rate: float | None
    lag: int | None
    watermark: int | None
    backlog: int
    state: str


class OperatorLoads:
    """Per operator: a RateMeter over ``window`` seconds and the last few backlogs."""

    def __init__(self, window: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._window = window
        self._clock = clock
        self._meters: dict[str, RateMeter] = {}
        self._backlogs: dict[str, deque[int]] = {}

    def add(
        self,
        op_id: str,
        messages_in: int,
        *,
        lag: int | None,
        backlog: int,
        watermark: int | None,
        stage_rate: float | None,
        done: bool,
    ) -> OperatorLoad:
        meter = self._meters.setdefault(op_id, RateMeter(self._window, self._clock))
        rate = meter.add(messages_in, done=done)
        backlogs = self._backlogs.setdefault(op_id, deque(maxlen=BACKLOG_SAMPLES))
        backlogs.append(backlog)
        # A finished job has nothing left to be loaded with, whatever its average rate.
        state = "idle" if done else load_state(rate, backlogs, stage_rate)
        return OperatorLoad(op_id, messages_in, rate, lag, watermark, backlog, state)

"""How fast a count grows: the one rule behind every rate the views show.

RunProgress (and the other live views) and ``job.plot()`` both take the rate of input messages
read over the trailing ``RATE_WINDOW`` seconds: from the last sample at least that old (or the
first sample, early on) to the newest. Keeping the rule here keeps their numbers equal.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["RATE_WINDOW", "trailing_rate"]

#: Seconds the running rate is taken over, by default (RunProgress's ``window``).
RATE_WINDOW = 10.0


def trailing_rate(points: Sequence[tuple[float, int]], window: float) -> float | None:
    """Count per second at the newest of ``points`` ((time, count), oldest first) over the
    trailing ``window`` seconds; None for fewer than two points or no time between them."""
    if len(points) < 2:
        return None
    end, at_end = points[-1]
    # The sample just before the first one inside the window, so the rate spans the window.
    start_index = len(points) - 2
    while start_index > 0 and end - points[start_index][0] < window:
        start_index -= 1
    start, at_start = points[start_index]
    elapsed = end - start
    return (at_end - at_start) / elapsed if elapsed > 0 else None

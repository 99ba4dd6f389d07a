"""RateMeter: messages per second of a growing count, as the views refresh.

While the count grows the rate is taken over the refreshes of the last ``window`` seconds
(``trailing_rate``, the rule ``job.plot()`` draws its rate by).
Once the job is done nothing more arrives, and that window's rate would fall to 0/s: the rate
is then the average over the time the count grew (from the first refresh to the last refresh
that saw it grow), which is how fast the job went.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from samza_nb.job.rates import trailing_rate

__all__ = ["RateMeter"]


class RateMeter:
    """Feed it ``add(count, done=...)`` at every refresh; ``rate`` is None until two samples
    are apart in time."""

    def __init__(self, window: float, clock: Callable[[], float]) -> None:
        self.window = window
        self._clock = clock
        #: (clock time, count) at each refresh within the window (and one just before it).
        self.samples: deque[tuple[float, int]] = deque()
        self._first: tuple[float, int] | None = None
        self._last_growth: tuple[float, int] | None = None
        self.rate: float | None = None

    def add(self, count: int, *, done: bool) -> float | None:
        now = self._clock()
        if self._first is None:
            self._first = (now, count)
        if self._last_growth is None or count > self._last_growth[1]:
            self._last_growth = (now, count)
        self.samples.append((now, count))
        # Keep one sample older than the window so the rate always spans the whole window.
        while len(self.samples) > 2 and now - self.samples[1][0] >= self.window:
            self.samples.popleft()
        if done:
            (start, at_start), (end, at_end) = self._first, self._last_growth
            elapsed = end - start
            self.rate = (at_end - at_start) / elapsed if elapsed > 0 else None
        else:
            # The rule job.plot() draws its rate by (job/rates.py).
            self.rate = trailing_rate(self.samples, self.window)
        return self.rate

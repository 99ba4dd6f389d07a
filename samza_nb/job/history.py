"""JobHistory: the job's counters after every committed epoch, for ``job.plot()``.

The job keeps totals only (JobMetrics); this keeps a few numbers per commit (when, the epoch,
input messages read, messages written to outputs, input lag) so the job's course can be drawn
after the fact. It is bounded: past ``limit`` samples every other old sample is dropped, so a
job running for days keeps its whole course at a coarser grain. Lag costs a look at every
input's newest offsets, so it is measured at most every ``lag_interval`` seconds (other samples
hold None) and once more when the course is read.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from samza_nb.job.rates import RATE_WINDOW, trailing_rate

__all__ = ["JobHistory"]


class JobHistory:
    """Thread-safe samples (every processor of a process commits here)."""

    def __init__(
        self, clock: Callable[[], float] = time.monotonic, limit: int = 2_000, lag_interval: float = 0.5
    ) -> None:
        self._clock = clock
        self._limit = limit
        self._lag_interval = lag_interval
        self._lag_at: float | None = None
        self._begun: float | None = None
        self._lock = threading.Lock()
        self._samples: list[tuple[float, int, int, int, int | None]] = []

    def begin(self) -> None:
        """Mark the job's start: the first sample (:meth:`add_start`) is dated then."""
        self._begun = self._clock()

    def is_empty(self) -> bool:
        with self._lock:
            return not self._samples

    def add_start(self, lag: int) -> None:
        """The course's first point, at :meth:`begin`: nothing read yet, ``lag`` to read."""
        with self._lock:
            at = self._begun if self._begun is not None else self._clock()
            self._samples.insert(0, (at, 0, 0, 0, lag))

    def lag_due(self) -> bool:
        """Whether the next sample should measure lag."""
        return self._lag_at is None or self._clock() - self._lag_at >= self._lag_interval

    def add(self, epoch: int, messages_in: int, messages_out: int, lag: int | None) -> None:
        with self._lock:
            now = self._clock()
            if lag is not None:
                self._lag_at = now
            self._samples.append((now, epoch, messages_in, messages_out, lag))
            if len(self._samples) > self._limit:
                # Keep the newest half as it is, thin the older half.
                half = len(self._samples) // 2
                self._samples = self._samples[:half:2] + self._samples[half:]

    def set_last_lag(self, lag: int) -> None:
        """Fill in the lag of the newest sample when it was not measured."""
        with self._lock:
            if self._samples and self._samples[-1][4] is None:
                self._samples[-1] = (*self._samples[-1][:4], lag)

    def average_rate(self) -> float | None:
        """Input messages per second from the job's start (:meth:`begin`) to the first commit
        that saw its final count; None before the job read anything."""
        with self._lock:
            begun, samples = self._begun, list(self._samples)
        if begun is None or not samples:
            return None
        total = max(sample[2] for sample in samples)
        reached = next(sample[0] for sample in samples if sample[2] == total)
        return total / (reached - begun) if total and reached > begun else None

    def rows(self, window: float = RATE_WINDOW) -> list[dict[str, Any]]:
        """One dict per sample, oldest first: seconds (since the job started, :meth:`begin`;
        else since the first sample), epoch, messages_in, messages_out, rate (input messages
        per second over the trailing ``window`` seconds, the rule RunProgress's rate follows;
        None for the first sample) and lag (None where it was not measured)."""
        with self._lock:
            begun, samples = self._begun, list(self._samples)
        start = begun if begun is not None else (samples[0][0] if samples else 0.0)
        points = [(sample[0], sample[2]) for sample in samples]
        rows: list[dict[str, Any]] = []
        for index, (at, epoch, read, written, lag) in enumerate(samples):
            rows.append(
                {
                    "seconds": round(at - start, 3),
                    "epoch": epoch,
                    "messages_in": read,
                    "messages_out": written,
                    "rate": trailing_rate(points[: index + 1], window),
                    "lag": lag,
                }
            )
        return rows

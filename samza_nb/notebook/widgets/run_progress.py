"""RunProgress: epochs, messages and rate of a job started by ``run``, until it ends."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

import ipywidgets as widgets

from samza_nb.errors import ConfigError
from samza_nb.notebook.widgets._html import count, html_table, paragraph, text_table
from samza_nb.notebook.widgets._live import DEFAULT_INTERVAL, LiveWidget

if TYPE_CHECKING:
    from samza_nb.runtime.job import Job, JobStatus

__all__ = ["STARTING", "RunProgress"]

#: The phase before the job's first epoch: the JVM and the Spark session are starting.
STARTING = "starting Spark…"

_HEADERS = ["epochs", "read", "written", "processed", "lag", "rate", "state"]
_BAR_STYLES = {
    "finished": "success",
    "drained": "success",
    "stopped": "warning",
    "failed": "danger",
}


class RunProgress(LiveWidget):
    """A progress bar towards "caught up" and the job's counters, refreshed while it runs.

    The bar's total is what the inputs hold for this run: the messages read so far plus the
    input lag (between the checkpoints and the newest offsets), so it fills as the job catches
    up and grows when new input arrives. Before anything is readable there is no total and
    only the counters show. While the job has not started its first epoch (``job.epoch == 0``,
    no result yet: the JVM and the Spark session start, 5–15 s in a fresh kernel) the state
    reads "starting Spark…". The rate is input messages per second over the refreshes of the
    last ``window`` seconds, a series this view keeps for itself (the job keeps totals only);
    once the job is done it is the average over the time the job read its inputs (from this
    view's first refresh to the last refresh that saw new input), not the last window's 0/s.

    Attributes: ``job``, ``bar`` (IntProgress), ``counters`` (HTML widget), ``job_status``
    (the last ``job.status()``), ``epochs``, ``messages_in`` (read from the inputs),
    ``messages_out`` (written to the outputs), ``processed`` (messages all tasks received,
    intermediate streams included), ``lag`` (input messages not read yet), ``rate`` (input
    messages per second, None until two refreshes apart), ``phase`` ("starting Spark…", the
    job's state, or its state and "(average rate)") and ``samples``.
    """

    def __init__(
        self,
        job: Job,
        *,
        auto_refresh: bool = True,
        interval: float = DEFAULT_INTERVAL,
        window: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if window <= 0:
            msg = f"window must be a positive number of seconds, got {window!r}"
            raise ConfigError(msg)
        self.window = window
        self._clock = clock
        #: (clock time, messages read from the inputs) at each refresh within the window.
        self.samples: deque[tuple[float, int]] = deque()
        self.job_status: JobStatus | None = None
        self.epochs = 0
        self.messages_in = 0
        self.messages_out = 0
        self.processed = 0
        self.lag = 0
        self.rate: float | None = None
        self.phase = ""
        #: (clock time, messages read) at the first refresh and at the last one that saw input.
        self._first: tuple[float, int] | None = None
        self._last_read: tuple[float, int] | None = None
        self.bar = widgets.IntProgress(value=0, min=0, max=1, description="caught up")
        self.counters = widgets.HTML()
        super().__init__(
            job, children=[self.bar, self.counters], auto_refresh=auto_refresh, interval=interval
        )

    # -- reading ---------------------------------------------------------------------------
    def _refresh(self) -> None:
        assert self.job is not None  # the constructor takes a job
        status = self.job_status = self.job.status()
        metrics = self.job.metrics()
        kinds = {stream_id: info.kind for stream_id, info in self.job.plan.streams.items()}
        streams = metrics["streams"]
        self.epochs = int(metrics["epochs"])
        self.messages_in = sum(
            v.get("in", 0) for s, v in streams.items() if kinds.get(s) == "input"
        )
        self.lag = sum(v.get("lag", 0) for s, v in streams.items() if kinds.get(s) == "input")
        self.messages_out = sum(
            v.get("out", 0) for s, v in streams.items() if kinds.get(s) == "output"
        )
        self.processed = sum(task.get("messages_in", 0) for task in metrics["tasks"].values())
        self._sample()

        total = self.messages_in + self.lag
        bar = self.bar
        if total:
            bar.layout.display = None
            bar.max = total
            bar.value = self.messages_in
        else:
            bar.layout.display = "none"
        starting = status.state == "running" and status.epoch == 0 and self.epochs == 0
        if starting and not self.messages_in:
            self.phase = STARTING
        elif status.done and self.rate is not None:
            self.phase = f"{status.state} (average rate)"
        else:
            self.phase = status.state
        bar.bar_style = _BAR_STYLES.get(status.state, "")
        bar.description = STARTING if self.phase == STARTING else status.state
        self.counters.value = paragraph(self._progress_text(), bold=True) + html_table(
            _HEADERS, [self._row()]
        )
        if status.error:
            self.message.value = paragraph(f"job failed: {status.error}", colour="#cf222e")

    def _sample(self) -> None:
        now = self._clock()
        if self._first is None:
            self._first = (now, self.messages_in)
        if self._last_read is None or self.messages_in > self._last_read[1]:
            self._last_read = (now, self.messages_in)
        self.samples.append((now, self.messages_in))
        # Keep one sample older than the window so the rate always spans the whole window.
        while len(self.samples) > 2 and now - self.samples[1][0] >= self.window:
            self.samples.popleft()
        status = self.job_status
        if status is not None and status.done:
            # Done: nothing more will be read, so the last window's rate falls to 0/s. The
            # average over the time the job was reading says how fast it went.
            (start, read_at_start), (end, read) = self._first, self._last_read
            elapsed = end - start
            self.rate = (read - read_at_start) / elapsed if elapsed > 0 else None
            return
        first_time, first_count = self.samples[0]
        elapsed = now - first_time
        self.rate = (self.messages_in - first_count) / elapsed if elapsed > 0 else None

    def _row(self) -> list[str]:
        rate = "–" if self.rate is None else f"{self.rate:,.1f}/s"
        state = self.phase or "–"
        return [
            count(self.epochs),
            count(self.messages_in),
            count(self.messages_out),
            count(self.processed),
            count(self.lag),
            rate,
            state,
        ]

    # -- display ---------------------------------------------------------------------------
    def _progress_text(self) -> str:
        total = self.messages_in + self.lag
        if self.phase == STARTING:
            return "starting Spark… (a fresh kernel starts a JVM first: 5–15 s)"
        if not total:
            return "no input yet"
        return f"{self.messages_in:,} of {total:,} input messages read ({100 * self.messages_in / total:.0f}%)"

    def snapshot_html(self) -> str:
        return self.counters.value + self.message.value

    def snapshot_text(self) -> str:
        return f"RunProgress: {self._progress_text()}\n" + text_table(_HEADERS, [self._row()])

    def __repr__(self) -> str:
        state = self.phase or "–"
        return f"RunProgress({state}, epoch {self.epochs}, {self.messages_in:,} read)"

"""RunProgress: epochs, messages and rate of a job started by ``run``, until it ends."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from html import escape
from typing import TYPE_CHECKING

import ipywidgets as widgets

from samza_nb.errors import ConfigError
from samza_nb.job.charts import sparkline_svg
from samza_nb.notebook.widgets._html import ERROR, TEXT, count, html_table, paragraph, text_table
from samza_nb.notebook.widgets._html import rate as format_rate
from samza_nb.notebook.widgets._live import DEFAULT_INTERVAL, LiveWidget
from samza_nb.notebook.widgets._rate import RateMeter
from samza_nb.plan.drawing import svg_image

if TYPE_CHECKING:
    from samza_nb.job.handle import Job, JobStatus

__all__ = ["STARTING", "RunProgress"]

#: The phase before the job's first epoch: the JVM and the Spark session are starting.
STARTING = "starting Spark…"

#: Refreshes the sparkline spans (30 s at the default interval).
_SPARK_POINTS = 60
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
    last ``window`` seconds, a series this view keeps for itself, by the rule ``job.plot()``
    draws its rate by (job/rates.py); once the job is done it is the job's average rate
    (``job.average_rate()``: from its start to the commit that read its last input message, the
    average ``job.plot()`` states), or for a job without a course the average over this view's
    refreshes that saw new input, not the last window's 0/s.

    Attributes: ``job``, ``bar`` (IntProgress), ``counters`` (HTML widget), ``job_status``
    (the last ``job.status()``), ``epochs``, ``messages_in`` (read from the inputs),
    ``messages_out`` (written to the outputs), ``processed`` (messages all tasks received,
    intermediate streams included), ``lag`` (input messages not read yet), ``rate`` (input
    messages per second, None until two refreshes apart), ``phase`` ("starting Spark…", the
    job's state, or its state and "(average rate)") and ``samples``.

    Once its job is done it has nothing left to do: every display of it becomes its snapshot
    (``freeze_when_final``), in JupyterLab too, so a saved notebook shows the final progress.
    """

    freeze_when_final = True

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
        self.job_status: JobStatus | None = None
        self.epochs = 0
        self.messages_in = 0
        self.messages_out = 0
        self.processed = 0
        self.lag = 0
        self.rate: float | None = None
        self.phase = ""
        self._meter = RateMeter(window, clock)
        #: The rate at each refresh while the job ran (the sparkline), newest last.
        self.rates: deque[float] = deque(maxlen=_SPARK_POINTS)
        #: The Spark UI's address while the job runs on Spark with the UI on.
        self.spark_ui: str | None = None
        self.samples = self._meter.samples
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
        if self.rate is not None and not status.done:
            self.rates.append(self.rate)
        self.spark_ui = self.job.spark_ui
        self.counters.value = (
            paragraph(self._progress_text(), bold=True)
            + html_table(_HEADERS, [self._row()])
            + self._extras_html()
        )
        if status.error:
            self.message.value = paragraph(f"job failed: {status.error}", colour=ERROR)

    def _extras_html(self) -> str:
        """The rate's sparkline and the Spark UI's link, when there are."""
        parts = []
        line = sparkline_svg(list(self.rates))
        if line:
            parts.append(f'<span style="font-size:12px;color:{TEXT}">rate {line}</span>')
        if self.spark_ui:
            url = escape(self.spark_ui)
            parts.append(
                f'<span style="font-size:12px;color:{TEXT}">Spark UI: '
                f'<a href="{url}" target="_blank" rel="noopener">{url}</a></span>'
            )
        return f'<div class="samza-run-extras">{" · ".join(parts)}</div>' if parts else ""

    def _sample(self) -> None:
        status = self.job_status
        done = status is not None and status.done
        self.rate = self._meter.add(self.messages_in, done=done)
        if done:
            # A job of this process keeps its own course, from its start to the commit that
            # read its last message: that average is the one job.plot() states, so it wins over
            # what this view's refreshes saw (they may have begun late or seen nothing grow).
            average_rate = getattr(self.job, "average_rate", None)
            average = average_rate() if average_rate is not None else None
            if average is not None:
                self.rate = average

    def _row(self) -> list[str]:
        rate = format_rate(self.rate)
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
            if _spark_running():
                return "starting the job…"
            return "starting Spark… (a fresh kernel starts a JVM first: 5–15 s)"
        if not total:
            return "no input yet"
        return f"{self.messages_in:,} of {total:,} input messages read ({100 * self.messages_in / total:.0f}%)"

    def snapshot_html(self) -> str:
        return svg_image(self.counters.value) + self.message.value

    def snapshot_text(self) -> str:
        return f"RunProgress: {self._progress_text()}\n" + text_table(_HEADERS, [self._row()])

    def __repr__(self) -> str:
        state = self.phase or "–"
        return f"RunProgress({state}, epoch {self.epochs}, {self.messages_in:,} read)"


def _spark_running() -> bool:
    """Whether this process has a SparkContext already (a warm kernel starts no JVM)."""
    from pyspark import SparkContext

    return SparkContext._active_spark_context is not None

"""DrainStatesWidget: which task drained which input partition, and how the drain travelled.

A drain starts at the sources (every task stops reading its inputs once the drain notification
arrives) and crosses each shuffle when the consuming task has heard a drain control message
from all the upstream tasks that write to that stream ("k of n"). The table shows that per
task and SSP; the drawing colours streams as their partitions drain; the slider replays the
job's DrainStates history epoch by epoch. A partition of an intermediate stream may also drain
with fewer than n drains heard: the consumer that heard all n for its own partition tells the
other partitions' consumers, and the table marks those "(aggregate)".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from samza_nb.errors import SamzaNbError
from samza_nb.notebook.widgets._html import ERROR, count, html_table, paragraph, text_table
from samza_nb.notebook.widgets._live import DEFAULT_INTERVAL, LiveWidget
from samza_nb.plan.drawing import render_svg, scroll_box, svg_image

if TYPE_CHECKING:
    from samza_nb.job.handle import DrainStatesView, Job, JobStatus

__all__ = ["DRAINED_COLOUR", "DRAINING_COLOUR", "DrainStatesWidget"]

#: Stroke of a stream whose every partition drained at the shown epoch.
DRAINED_COLOUR = "#0969da"
#: Stroke of a stream with some partitions drained, or some upstream drains heard: a pink none
#: of the drawing's own colours uses (shuffle orange, output amber, state purple).
DRAINING_COLOUR = "#bf3989"

_HEADERS = ["task", "SSP", "drained", "upstream drains", "drained at epoch"]


class DrainStatesWidget(LiveWidget):
    """DrainStates per task and SSP, a coloured plan drawing and an epoch slider.

    Attributes: ``job``, ``plan``, ``states`` (the last ``job.drain_states()``),
    ``epoch_slider`` (IntSlider over the history's epochs; it follows the newest epoch while it
    sits at the end), ``drain_button`` (calls ``job.drain()``), ``summary``, ``graph`` and
    ``table`` (HTML widgets), ``rows`` (the rows shown, for the slider's epoch) and
    ``stream_states`` (stream id → ``"drained"``, ``"draining"`` or ``"running"`` at that
    epoch).
    """

    def __init__(
        self, job: Job, *, auto_refresh: bool = True, interval: float = DEFAULT_INTERVAL
    ) -> None:
        self.plan = job.plan
        self.states: DrainStatesView | None = None
        self.job_status: JobStatus | None = None
        self.rows: list[dict[str, Any]] = []
        self.stream_states: dict[str, str] = {}
        self.summary = widgets.HTML()
        self.graph = widgets.HTML()
        self.table = widgets.HTML()
        self.epoch_slider = widgets.IntSlider(
            value=0, min=0, max=0, description="epoch", disabled=True, continuous_update=True
        )
        self.drain_button = widgets.Button(
            description="Drain",
            tooltip="job.drain(): stop reading inputs, finish what is in flight",
        )
        self._redrawing = False
        self._drain_clicked = False
        self.epoch_slider.observe(self._on_epoch, names="value")
        self.drain_button.on_click(self._on_drain)
        super().__init__(
            job,
            children=[
                self.summary,
                widgets.HBox([self.epoch_slider, self.drain_button]),
                self.graph,
                self.table,
            ],
            auto_refresh=auto_refresh,
            interval=interval,
        )

    @property
    def epochs(self) -> list[int]:
        """The epochs of the DrainStates history, oldest first."""
        return [epoch for epoch, _rows in self.states.history] if self.states else []

    # -- reading ---------------------------------------------------------------------------
    def _refresh(self) -> None:
        assert self.job is not None  # the constructor takes a job
        self.job_status = self.job.status()
        self.states = self.job.drain_states()
        epochs = self.epochs
        slider = self.epoch_slider
        # Redraw once, after the slider settled, not once per trait the slider changes.
        self._redrawing = True
        try:
            following = slider.value == slider.max
            if epochs:
                # The slider runs to the job's epoch: the newest DrainStates hold until then.
                first, last = epochs[0], max(epochs[-1], self.job_status.epoch)
                # The slider refuses min > max at every step, so widen on the side that moves.
                if first > slider.max:
                    slider.max = last
                    slider.min = first
                else:
                    slider.min = first
                    slider.max = last
                if following:
                    slider.value = last
            slider.disabled = len(epochs) < 2
        finally:
            self._redrawing = False
        self.drain_button.disabled = self._drain_clicked or self.job_status.done
        self._label_button()
        self._draw()

    @property
    def draining(self) -> bool:
        """Whether the job is draining now: a drain was asked for (here, by a magic or by
        ``samza-nb drain``) and the job has not ended."""
        if self.job_status is None or self.job_status.done:
            return False
        seen = getattr(self.job, "drain_seen_epoch", None) is not None
        rows = self.states.rows if self.states else []
        return self._drain_clicked or seen or any(row["drained"] or row["heard"] for row in rows)

    def _label_button(self) -> None:
        """The button says what the drain is doing, not only that it cannot be clicked."""
        button = self.drain_button
        if self.job_status is not None and self.job_status.state == "drained":
            button.description, button.icon = "Drained", "check"
        elif self.draining:
            button.description, button.icon = "Draining…", "hourglass-half"
        else:
            button.description, button.icon = "Drain", ""

    def _on_epoch(self, _change: dict[str, Any]) -> None:
        if not self._redrawing:
            with self._lock:
                self._draw()

    def _on_drain(self, _button: widgets.Button) -> None:
        assert self.job is not None
        try:
            status = self.job.drain()
        except SamzaNbError as error:
            # The job ended after the last refresh (nothing to drain): one line, then redraw,
            # which disables the button for a job that is done.
            self.message.value = paragraph(str(error), colour=ERROR)
            self.refresh()
            return
        self._drain_clicked = self.drain_button.disabled = True
        self._label_button()
        self._draw()
        self.message.value = paragraph(
            f"drain requested at epoch {status.epoch}; the job stops reading its inputs once "
            "its drain monitor sees the request"
        )

    def _shown_rows(self) -> list[dict[str, Any]]:
        """The DrainStates as they stood after the slider's epoch: the history's last entry at
        or before it (the history keeps only the epochs that changed something)."""
        if self.states is None:
            return []
        shown = self.states.history[0][1] if self.states.history else self.states.rows
        for epoch, rows in self.states.history:
            if epoch > self.epoch_slider.value:
                break
            shown = rows
        return shown

    def _draw(self) -> None:
        rows = self.rows = self._shown_rows()
        by_stream: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            by_stream.setdefault(row["stream"], []).append(row)
        self.stream_states = {}
        labels: dict[str, str] = {}
        styles: dict[str, str] = {}
        for stream_id, stream_rows in by_stream.items():
            drained = sum(1 for row in stream_rows if row["drained"])
            heard = any(row["heard"] for row in stream_rows)
            if drained == len(stream_rows):
                state, styles[stream_id] = "drained", DRAINED_COLOUR
            elif drained or heard:
                state, styles[stream_id] = "draining", DRAINING_COLOUR
            else:
                state = "running"
            self.stream_states[stream_id] = state
            labels[stream_id] = f"drained {drained}/{len(stream_rows)}"
        svg = render_svg(self.plan, stream_styles=styles, stream_labels=labels)
        self.graph.value = scroll_box(svg)
        self.summary.value = paragraph(self._summary_text(), bold=True)
        self.table.value = html_table(_HEADERS, self._table_rows())

    def _summary_text(self) -> str:
        drained = sum(1 for row in self.rows if row["drained"])
        status = self.job_status
        state = f" · job {'draining' if self.draining else status.state}" if status else ""
        if not self.epochs:
            epoch = f" at epoch {status.epoch}" if status else ""
            return f"DrainStates of {self.plan.app_name}: no epoch committed yet{state}{epoch}"
        slider = self.epoch_slider
        shown = (
            f"after epoch {slider.value}"
            if slider.value == slider.max
            else f"replaying epoch {slider.value} of {slider.max}"
        )
        return (
            f"DrainStates of {self.plan.app_name} {shown}: {drained} of {len(self.rows)} SSPs "
            f"drained{state}"
        )

    def _table_rows(self) -> list[list[str]]:
        order = {stream_id: index for index, stream_id in enumerate(self.plan.streams)}
        ordered = sorted(
            self.rows,
            key=lambda row: (order.get(row["stream"], len(order)), row["partition"], row["task"]),
        )
        return [
            [
                row["task"],
                row["ssp"],
                "✓" if row["drained"] else "–",
                _upstream(row),
                count(row["drained_epoch"]),
            ]
            for row in ordered
        ]

    # -- display ---------------------------------------------------------------------------
    def snapshot_html(self) -> str:
        return (
            self.summary.value + svg_image(self.graph.value) + self.table.value + self.message.value
        )

    def snapshot_text(self) -> str:
        return self._summary_text() + "\n" + text_table(_HEADERS, self._table_rows())

    def __repr__(self) -> str:
        drained = sum(1 for row in self.rows if row["drained"])
        return (
            f"DrainStatesWidget({self.plan.app_name!r}, epoch {self.epoch_slider.value}, "
            f"{drained} of {len(self.rows)} SSPs drained)"
        )


def _upstream(row: Mapping[str, Any]) -> str:
    """ "k of n" upstream drains of an SSP, and how it drained when that is not by k = n."""
    if not row["expected"]:
        # A source has no upstream tasks: the drain notification drains it.
        return "source"
    heard, expected = len(row["heard"]), row["expected"]
    if row["drained"] and heard < expected:
        # The task that heard all n upstream drains of one partition of an intermediate stream
        # rebroadcasts a drain to the other partitions (Samza's aggregation), which drains them.
        return f"all {expected} via another partition ({heard} heard here)"
    return f"{heard} of {expected}"

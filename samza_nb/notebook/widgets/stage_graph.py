"""StageGraph: the plan drawing with live per-stage, per-stream and per-operator counters."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from samza_nb.errors import ConfigError
from samza_nb.notebook.widgets._html import (
    compact,
    count,
    html_table,
    paragraph,
    text_table,
)
from samza_nb.notebook.widgets._html import rate as format_rate
from samza_nb.notebook.widgets._live import DEFAULT_INTERVAL, LiveWidget
from samza_nb.notebook.widgets._operator_load import (
    STATE_COLOURS,
    OperatorLoad,
    OperatorLoads,
    format_watermark,
)
from samza_nb.notebook.widgets._rate import RateMeter
from samza_nb.plan.drawing import render_svg, scroll_box, svg_image
from samza_nb.plan.execution_plan import ExecutionPlan
from samza_nb.plan.operators import InputOperatorSpec

if TYPE_CHECKING:
    from samza_nb.job.handle import Job, JobStatus

__all__ = ["StageGraph", "plan_and_job"]

#: Refreshes a stage's rate sparkline spans (30 s at the default interval).
TREND_POINTS = 30


def plan_and_job(plan_or_job: ExecutionPlan | Job, widget: str) -> tuple[ExecutionPlan, Job | None]:
    """The plan to draw and the job to read counters from (None for a bare plan)."""
    if isinstance(plan_or_job, ExecutionPlan):
        return plan_or_job, None
    plan = getattr(plan_or_job, "plan", None)
    if isinstance(plan, ExecutionPlan) and hasattr(plan_or_job, "metrics"):
        return plan, plan_or_job
    msg = (
        f"{widget} takes an ExecutionPlan or a Job, got {type(plan_or_job).__name__}; "
        "for an application pass app.plan(), for a run pass the Job that run() returned"
    )
    raise ConfigError(msg)


class StageGraph(LiveWidget):
    """The plan's drawing; with a job, live counters on streams, operators and stages.

    Streams are labelled with messages in (read by tasks), out (written by tasks) and lag
    (between the consumers' checkpoints and the newest offsets), operators with the messages
    they received, stages with their totals and their rate (messages in per second over the
    last ``window`` seconds; once the job is done, the average while it read). Two tables
    repeat the counters exactly. Each operator also shows its rate (messages in per second over
    the window), the consumer lag of the stream it reads (input operators) and its watermark
    (the lowest output watermark over its tasks, UTC; "–" before any), and is coloured when busy
    or backpressured (defined in :mod:`samza_nb.notebook.widgets._operator_load`); each stage
    box carries a sparkline of its rate over the last refreshes. An operators table repeats
    these numbers. The drawing keeps to the cell's width (stages wrap their
    operators into lines, stages stack top to bottom) at a readable size; a larger drawing
    (``zoom``) scrolls in its own box. ``fold`` buttons draw a stage as one box.

    Attributes: ``plan``, ``job`` (None for a bare plan), ``graph`` (HTML widget with the
    SVG), ``stages_table`` and ``streams_table`` (HTML widgets), ``summary`` (HTML widget),
    ``zoom`` (Dropdown: the drawing's scale), ``fold_buttons`` (stage id → ToggleButton;
    pressed = folded), ``folded`` (the folded stage ids), ``metrics`` (the last
    ``job.metrics()``), ``job_status`` (the last ``job.status()``), ``stage_counters`` (stage
    id → in/out/lag), ``stage_rates`` (stage id → messages in per second, or None) and
    ``stream_counters`` (stream id → in/out/lag, lag absent for outputs),
    ``operator_loads`` (op id → OperatorLoad: messages in, rate, lag, watermark, state),
    ``stage_trends`` (stage id → the stage's rates at the last refreshes, oldest first) and
    ``operators_table`` (HTML widget).
    """

    def __init__(
        self,
        plan_or_job: ExecutionPlan | Job,
        *,
        auto_refresh: bool = True,
        interval: float = DEFAULT_INTERVAL,
        window: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        plan, job = plan_and_job(plan_or_job, "StageGraph")
        self.plan = plan
        self.metrics: dict[str, Any] = {}
        self.job_status: JobStatus | None = None
        self.stage_counters: dict[int, dict[str, int]] = {}
        self.stage_rates: dict[int, float | None] = {}
        self.stream_counters: dict[str, dict[str, int]] = {}
        self._meters = {stage.id: RateMeter(window, clock) for stage in plan.stages}
        self._loads = OperatorLoads(window, clock)
        self.operator_loads: dict[str, OperatorLoad] = {}
        self.stage_trends: dict[int, deque[float]] = {
            stage.id: deque(maxlen=TREND_POINTS) for stage in plan.stages
        }
        self.operators_table = widgets.HTML()
        self._svg_options: dict[str, Any] = {}
        self.summary = widgets.HTML()
        self.graph = widgets.HTML(layout=widgets.Layout(width="100%"))
        self.stages_table = widgets.HTML()
        self.streams_table = widgets.HTML()
        self.zoom = widgets.Dropdown(
            options=[("100%", 1.0), ("125%", 1.25), ("150%", 1.5), ("200%", 2.0)],
            value=1.0,
            description="zoom",
            layout=widgets.Layout(width="160px"),
        )
        self.fold_buttons = {
            stage.id: widgets.ToggleButton(
                value=False,
                description=f"stage {stage.id}",
                tooltip=f"fold stage {stage.id} into one box",
                icon="compress",
                layout=widgets.Layout(width="auto"),
            )
            for stage in plan.stages
        }
        self.zoom.observe(self._on_view_change, names="value")
        for button in self.fold_buttons.values():
            button.observe(self._on_view_change, names="value")
        controls = widgets.HBox(
            [self.zoom, widgets.Label("fold:"), *self.fold_buttons.values()],
            layout=widgets.Layout(flex_flow="row wrap", align_items="center"),
        )
        super().__init__(
            job,
            children=[
                self.summary,
                controls,
                self.graph,
                self.stages_table,
                self.operators_table,
                self.streams_table,
            ],
            auto_refresh=auto_refresh,
            interval=interval,
        )

    @property
    def folded(self) -> set[int]:
        """The stages drawn as one box."""
        return {stage_id for stage_id, button in self.fold_buttons.items() if button.value}

    def fold(self, *stage_ids: int, folded: bool = True) -> None:
        """Fold (or, with ``folded=False``, unfold) stages; no ids: every stage."""
        for stage_id in stage_ids or tuple(self.fold_buttons):
            if stage_id not in self.fold_buttons:
                msg = f"the plan has no stage {stage_id}; its stages: {sorted(self.fold_buttons)}"
                raise ConfigError(msg)
            self.fold_buttons[stage_id].value = folded

    # -- reading ---------------------------------------------------------------------------
    def _refresh(self) -> None:
        plan = self.plan
        if self.job is None:
            self.summary.value = paragraph(
                f"{plan.app_name} (job {plan.job_id}): plan only, no counters", bold=True
            )
            self._svg_options = {}
            self._draw()
            self.stages_table.value = html_table(
                ["stage", "operators", "reads", "writes"], self._stage_rows(counters=False)
            )
            self.streams_table.value = html_table(
                ["stream", "kind", "partitions"], self._stream_rows(counters=False)
            )
            return
        status = self.job_status = self.job.status()
        self.metrics = self.job.metrics()
        streams: dict[str, dict[str, int]] = self.metrics["streams"]
        self.stream_counters = {sid: dict(values) for sid, values in streams.items()}
        self.stage_counters = {
            stage.id: {
                "in": sum(streams.get(s, {}).get("in", 0) for s in stage.input_streams),
                "out": sum(streams.get(s, {}).get("out", 0) for s in stage.output_streams),
                "lag": sum(streams.get(s, {}).get("lag", 0) for s in stage.input_streams),
            }
            for stage in plan.stages
        }
        self.stage_rates = {
            stage_id: self._meters[stage_id].add(counters["in"], done=status.done)
            for stage_id, counters in self.stage_counters.items()
        }
        if not status.done:
            for stage_id, rate in self.stage_rates.items():
                if rate is not None:
                    self.stage_trends[stage_id].append(rate)
        operators: dict[str, int] = self.metrics["operators"]
        self.operator_loads = self._operator_loads(operators, streams, done=status.done)
        self._svg_options = {
            "stream_labels": {sid: self._stream_label(sid) for sid in plan.streams},
            "operator_labels": {
                op_id: _operator_label(n, self.metrics.get("operator_counters", {}).get(op_id, {}))
                + _load_lines(self.operator_loads.get(op_id))
                for op_id, n in operators.items()
            },
            "operator_styles": {
                op_id: _load_style(load.state) for op_id, load in self.operator_loads.items()
            },
            "stage_sparklines": {sid: list(trend) for sid, trend in self.stage_trends.items()},
            "stage_labels": {
                sid: f"in {compact(c['in'])} · out {compact(c['out'])} · lag {compact(c['lag'])}"
                f" · {_short_rate(self.stage_rates.get(sid))}"
                for sid, c in self.stage_counters.items()
            },
        }
        error = f" · error: {status.error}" if status.error else ""
        self.summary.value = paragraph(
            f"{plan.app_name} (job {plan.job_id}): {status.state}, epoch {status.epoch}{error}",
            bold=True,
        )
        self._draw()
        self.stages_table.value = html_table(
            ["stage", "operators", "reads", "writes", "in", "out", "lag", "rate"],
            self._stage_rows(counters=True),
        )
        self.operators_table.value = html_table(_OPERATOR_HEADERS, self._operator_rows())
        self.streams_table.value = html_table(
            ["stream", "kind", "partitions", "in", "out", "lag"], self._stream_rows(counters=True)
        )

    def _operator_loads(
        self, operators: dict[str, int], streams: dict[str, dict[str, int]], *, done: bool
    ) -> dict[str, OperatorLoad]:
        """Each operator's rate, lag, watermark and state from this refresh's numbers."""
        read_watermarks = getattr(self.job, "operator_watermarks", None)
        watermarks: dict[str, int] = {}
        if read_watermarks is not None:
            for per_op in read_watermarks().values():
                for op_id, (_in, out) in per_op.items():
                    watermarks[op_id] = min(out, watermarks.get(op_id, out))
        loads = {}
        for stage in self.plan.stages:
            stage_lag = self.stage_counters.get(stage.id, {}).get("lag", 0)
            for op_id in stage.operators:
                spec = self.plan.operators[op_id]
                lag = None
                if isinstance(spec, InputOperatorSpec):
                    lag = streams.get(spec.stream_id, {}).get("lag")
                watermark = watermarks.get(op_id)
                loads[op_id] = self._loads.add(
                    op_id,
                    operators.get(op_id, 0),
                    lag=lag,
                    backlog=stage_lag if lag is None else lag,
                    watermark=None if watermark is None or watermark < 0 else watermark,
                    stage_rate=self.stage_rates.get(stage.id),
                    done=done,
                )
        return loads

    def _operator_rows(self) -> list[list[str]]:
        stage_of = {op_id: stage.id for stage in self.plan.stages for op_id in stage.operators}
        return [
            [
                op_id,
                str(stage_of.get(op_id, "–")),
                count(load.messages_in),
                format_rate(load.rate),
                count(load.lag),
                format_watermark(load.watermark),
                load.state,
            ]
            for op_id, load in self.operator_loads.items()
        ]

    def _draw(self) -> None:
        """Redraw the SVG from the last counters, with the zoom and the folded stages."""
        svg = render_svg(
            self.plan, folded=self.folded, scale=float(self.zoom.value), **self._svg_options
        )
        self.graph.value = scroll_box(svg)

    def _on_view_change(self, _change: dict[str, Any]) -> None:
        with self._lock:
            self._draw()

    def _stream_label(self, stream_id: str) -> str:
        """in/out/lag where they mean something: nothing in the job writes to an input, nothing
        reads an output, and an output has no consumer to lag behind."""
        values = self.stream_counters.get(stream_id, {})
        kind = self.plan.streams[stream_id].kind
        parts = []
        if kind != "output":
            parts.append(f"in {compact(values.get('in', 0))}")
        if kind in ("intermediate", "output"):
            parts.append(f"out {compact(values.get('out', 0))}")
        if "lag" in values:
            parts.append(f"lag {compact(values['lag'])}")
        return " · ".join(parts)

    def _stage_rows(self, *, counters: bool) -> list[list[str]]:
        rows = []
        for stage in self.plan.stages:
            row = [
                str(stage.id),
                str(len(stage.operators)),
                ", ".join(stage.input_streams) or "–",
                ", ".join(stage.output_streams) or "–",
            ]
            if counters:
                values = self.stage_counters.get(stage.id, {})
                row += [
                    count(values.get("in")),
                    count(values.get("out")),
                    count(values.get("lag")),
                    format_rate(self.stage_rates.get(stage.id)),
                ]
            rows.append(row)
        return rows

    def _stream_rows(self, *, counters: bool) -> list[list[str]]:
        rows = []
        for stream_id, info in self.plan.streams.items():
            row = [stream_id, info.kind.replace("_", " "), str(info.partitions)]
            if counters:
                values = self.stream_counters.get(stream_id, {})
                row += [count(values.get("in")), count(values.get("out")), count(values.get("lag"))]
            rows.append(row)
        return rows

    # -- display ---------------------------------------------------------------------------
    def snapshot_html(self) -> str:
        return (
            self.summary.value
            + svg_image(self.graph.value)
            + self.stages_table.value
            + self.operators_table.value
            + self.streams_table.value
            + self.message.value
        )

    def snapshot_text(self) -> str:
        plan = self.plan
        counters = self.job is not None
        stage_headers = ["stage", "operators", "reads", "writes"]
        stream_headers = ["stream", "kind", "partitions"]
        if counters:
            stage_headers += ["in", "out", "lag", "rate"]
            stream_headers += ["in", "out", "lag"]
        head = f"StageGraph {plan.app_name!r} (job {plan.job_id}): "
        if self.job_status is None:
            head += "plan only"
        else:
            head += f"{self.job_status.state}, epoch {self.job_status.epoch}"
        tables = [text_table(stage_headers, self._stage_rows(counters=counters))]
        if self.operator_loads:
            tables.append(text_table(_OPERATOR_HEADERS, self._operator_rows()))
        tables.append(text_table(stream_headers, self._stream_rows(counters=counters)))
        return "\n".join([head, *tables])

    def __repr__(self) -> str:
        status = self.job_status
        where = "plan only" if status is None else f"{status.state}, epoch {status.epoch}"
        return f"StageGraph({self.plan.app_name!r}, {len(self.plan.stages)} stages, {where})"


def _operator_label(messages_in: int, counters: dict[str, int]) -> str:
    """Messages in, and what the operator skipped (errors), dropped (None) or failed on."""
    parts = [f"in {compact(messages_in)}"]
    for key, word in (("dropped", "dropped"), ("skipped", "skipped"), ("errors", "errors")):
        if counters.get(key) and not (key == "errors" and counters["errors"] == counters.get("skipped")):
            parts.append(f"{word} {compact(counters[key])}")
    return " · ".join(parts)


_OPERATOR_HEADERS = ["operator", "stage", "in", "rate", "lag", "watermark", "state"]


def _load_lines(load: OperatorLoad | None) -> str:
    """The node's extra lines: rate and lag, the watermark once there is one, and the state
    when busy or backpressured (a node holds about twenty characters a line)."""
    if load is None:
        return ""
    lines = _short_rate(load.rate)
    if load.lag is not None:
        lines += f" · lag {compact(load.lag)}"
    if load.watermark is not None:
        lines += f"\nwm {format_watermark(load.watermark, short=True)}"
    if load.state in STATE_COLOURS:
        lines += f"\n{load.state}"
    return "\n" + lines


def _load_style(state: str) -> dict[str, str]:
    """The node's box for a state: its colour (outline, thicker, and tint) when loaded."""
    colour = STATE_COLOURS.get(state)
    if colour is None:
        return {"data-load": state}
    return {"data-load": state, "fill": colour, "stroke": colour, "stroke-width": "2.5"}


def _short_rate(value: float | None) -> str:
    return "–/s" if value is None else f"{compact(round(value))}/s"

"""StageGraph: the plan drawing with live per-stage, per-stream and per-operator counters."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from samza_nb.errors import ConfigError
from samza_nb.notebook.widgets._html import (
    FONT,
    compact,
    count,
    html_table,
    paragraph,
    text_table,
)
from samza_nb.notebook.widgets._live import DEFAULT_INTERVAL, LiveWidget
from samza_nb.plan.drawing import render_svg
from samza_nb.plan.execution_plan import ExecutionPlan

if TYPE_CHECKING:
    from samza_nb.runtime.job import Job, JobStatus

__all__ = ["StageGraph", "plan_and_job"]


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
    they received, stages with their totals. Two tables repeat the counters exactly.

    Attributes: ``plan``, ``job`` (None for a bare plan), ``graph`` (HTML widget with the
    SVG), ``stages_table`` and ``streams_table`` (HTML widgets), ``summary`` (HTML widget),
    ``metrics`` (the last ``job.metrics()``), ``job_status`` (the last ``job.status()``),
    ``stage_counters`` (stage id → in/out/lag) and
    ``stream_counters`` (stream id → in/out/lag, lag absent for outputs).
    """

    def __init__(
        self,
        plan_or_job: ExecutionPlan | Job,
        *,
        auto_refresh: bool = True,
        interval: float = DEFAULT_INTERVAL,
    ) -> None:
        plan, job = plan_and_job(plan_or_job, "StageGraph")
        self.plan = plan
        self.metrics: dict[str, Any] = {}
        self.job_status: JobStatus | None = None
        self.stage_counters: dict[int, dict[str, int]] = {}
        self.stream_counters: dict[str, dict[str, int]] = {}
        self.summary = widgets.HTML()
        self.graph = widgets.HTML()
        self.stages_table = widgets.HTML()
        self.streams_table = widgets.HTML()
        super().__init__(
            job,
            children=[self.summary, self.graph, self.stages_table, self.streams_table],
            auto_refresh=auto_refresh,
            interval=interval,
        )

    # -- reading ---------------------------------------------------------------------------
    def _refresh(self) -> None:
        plan = self.plan
        if self.job is None:
            self.summary.value = paragraph(
                f"{plan.app_name} (job {plan.job_id}): plan only, no counters", bold=True
            )
            self.graph.value = _scrollable(render_svg(plan))
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
        operators: dict[str, int] = self.metrics["operators"]
        svg = render_svg(
            plan,
            stream_labels={sid: self._stream_label(sid) for sid in plan.streams},
            operator_labels={op_id: f"in {compact(n)}" for op_id, n in operators.items()},
            stage_labels={
                sid: f"in {compact(c['in'])} · out {compact(c['out'])} · lag {compact(c['lag'])}"
                for sid, c in self.stage_counters.items()
            },
        )
        error = f" · error: {status.error}" if status.error else ""
        self.summary.value = paragraph(
            f"{plan.app_name} (job {plan.job_id}): {status.state}, epoch {status.epoch}{error}",
            bold=True,
        )
        self.graph.value = _scrollable(svg)
        self.stages_table.value = html_table(
            ["stage", "operators", "reads", "writes", "in", "out", "lag"],
            self._stage_rows(counters=True),
        )
        self.streams_table.value = html_table(
            ["stream", "kind", "partitions", "in", "out", "lag"], self._stream_rows(counters=True)
        )

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
                row += [count(values.get("in")), count(values.get("out")), count(values.get("lag"))]
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
            + self.graph.value
            + self.stages_table.value
            + self.streams_table.value
            + self.message.value
        )

    def snapshot_text(self) -> str:
        plan = self.plan
        counters = self.job is not None
        stage_headers = ["stage", "operators", "reads", "writes"]
        stream_headers = ["stream", "kind", "partitions"]
        if counters:
            stage_headers += ["in", "out", "lag"]
            stream_headers += ["in", "out", "lag"]
        head = f"StageGraph {plan.app_name!r} (job {plan.job_id}): "
        if self.job_status is None:
            head += "plan only"
        else:
            head += f"{self.job_status.state}, epoch {self.job_status.epoch}"
        return "\n".join(
            [
                head,
                text_table(stage_headers, self._stage_rows(counters=counters)),
                text_table(stream_headers, self._stream_rows(counters=counters)),
            ]
        )

    def __repr__(self) -> str:
        status = self.job_status
        where = "plan only" if status is None else f"{status.state}, epoch {status.epoch}"
        return f"StageGraph({self.plan.app_name!r}, {len(self.plan.stages)} stages, {where})"


def _scrollable(svg: str) -> str:
    return f'<div style="overflow:auto;max-width:100%;font-family:{FONT}">{svg}</div>'

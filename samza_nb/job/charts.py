"""A job's numbers drawn: its history over time (``job.plot()``), lag per task and partition
(``job.lag_heatmap()``) and sparklines for the live views.

Plain SVG and HTML with inline styles (no plotting library, no CSS a theme must provide), so a
saved notebook or an offline export shows them as they were. Colours are JupyterLab's theme
variables with light-theme fallbacks, readable on the dark theme too.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from samza_nb.job.rates import RATE_WINDOW
from samza_nb.plan.drawing import sparkline_points, svg_image

__all__ = ["ChartPanel", "JobChart", "LagHeatmap", "line_chart_svg", "sparkline_svg"]

_TEXT = "var(--jp-content-font-color1,#24292f)"
_GRID = "var(--jp-border-color2,#d0d7de)"
_FONT = "-apple-system,BlinkMacSystemFont,'Segoe UI',Helvetica,Arial,sans-serif"
#: One colour per series (GitHub's data-visualisation palette: readable on light and dark).
_COLOURS = ("#0969da", "#bf3989", "#1a7f37", "#9a6700", "#8250df")


def _fmt(value: float) -> str:
    return f"{value:.1f}".removesuffix(".0")


def _short(value: float) -> str:
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= limit:
            return f"{value / limit:.1f}".removesuffix(".0") + suffix
    return f"{value:.1f}".removesuffix(".0")


def sparkline_svg(values: Sequence[float], *, width: int = 120, height: int = 24) -> str:
    """A small line of ``values`` (oldest first), scaled to its own maximum; empty for fewer
    than two values."""
    if len(values) < 2:
        return ""
    points = sparkline_points(values, width=width, height=height)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="samza-sparkline" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" style="vertical-align:middle">'
        f'<polyline points="{points}" fill="none" stroke="{_COLOURS[0]}" stroke-width="1.5"/></svg>'
    )


def _nice_ceiling(value: float) -> float:
    """The round number (1, 2, 2.5 or 5 times a power of ten) at or above ``value``."""
    if value <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    return next(m * power for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * power >= value * (1 - 1e-9))


def _per_second(value: float) -> str:
    """A rate as RunProgress writes it."""
    return f"{value:,.1f}/s"


#: Per panel: its title and the unit of its y axis.
_PANELS: dict[str, tuple[str, str]] = {
    "rate": ("input rate", "messages/s"),
    "lag": ("input lag (messages not read yet)", "messages"),
    "messages_in": ("input messages read", "messages"),
    "messages_out": ("messages written to outputs", "messages"),
    "epoch": ("epochs committed", "epochs"),
}
_X_LABELS = {"seconds": "seconds since the job started", "epoch": "epoch"}


@dataclass(frozen=True)
class ChartPanel:
    """One panel of ``job.plot()`` as drawn: its points, its axes in real units and its legend.

    ``x_range`` is the same for every panel of a chart (the job's whole course); ``y_max`` is
    the top of the y axis (a round number at or above every value and the ``average`` line);
    ``average`` is a horizontal line (the rate panel's average rate), None for none.
    """

    name: str
    title: str
    unit: str
    x_label: str
    x: list[float]
    values: list[float]
    x_range: tuple[float, float]
    y_max: float
    legend: list[str]
    average: float | None = None


def line_chart_svg(panel: ChartPanel, *, width: int = 640, height: int = 210) -> str:
    """One panel: its series as a line over the shared x range, a y axis in the panel's unit
    (0, half and top), the average as a dashed line when there is one, the legend above."""
    legend_h = 14 * len(panel.legend)
    left, right, top, bottom = 62, 14, 24 + legend_h, 40
    inner_w, inner_h = width - left - right, height - top - bottom
    lo, hi = panel.x_range
    span = (hi - lo) or 1.0

    def px(value: float) -> str:
        return _fmt(left + inner_w * (value - lo) / span)

    def py(value: float) -> str:
        return _fmt(top + inner_h * (1 - value / panel.y_max))

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="samza-chart" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" font-family="{_FONT}" font-size="11" '
        f'style="max-width:100%;height:auto">',
        f'<text x="{left}" y="14" fill="{_TEXT}" font-weight="600">{html.escape(panel.title)}</text>',
    ]
    for fraction in (0.0, 0.5, 1.0):
        value = panel.y_max * fraction
        out.append(
            f'<line x1="{left}" x2="{left + inner_w}" y1="{py(value)}" y2="{py(value)}" stroke="{_GRID}"/>'
            f'<text class="samza-y-tick" x="{left - 4}" y="{_fmt(float(py(value)) + 4)}" '
            f'text-anchor="end" fill="{_TEXT}">{_short(value)}</text>'
        )
    middle_y = _fmt(top + inner_h / 2)
    out.append(
        f'<text class="samza-y-label" x="12" y="{middle_y}" text-anchor="middle" fill="{_TEXT}" '
        f'transform="rotate(-90 12 {middle_y})">{html.escape(panel.unit)}</text>'
    )
    axis_y = top + inner_h
    for value, anchor in ((lo, "start"), ((lo + hi) / 2, "middle"), (hi, "end")):
        out.append(
            f'<text class="samza-x-tick" x="{px(value)}" y="{axis_y + 14}" text-anchor="{anchor}" '
            f'fill="{_TEXT}">{_short(value)}</text>'
        )
    out.append(
        f'<text class="samza-x-label" x="{_fmt(left + inner_w / 2)}" y="{height - 6}" '
        f'text-anchor="middle" fill="{_TEXT}">{html.escape(panel.x_label)}</text>'
    )
    colour = _COLOURS[0]
    if len(panel.values) > 1:
        points = " ".join(f"{px(xi)},{py(v)}" for xi, v in zip(panel.x, panel.values, strict=True))
        out.append(
            f'<polyline class="samza-series" data-series="{html.escape(panel.name)}" points="{points}" '
            f'fill="none" stroke="{colour}" stroke-width="1.8"/>'
        )
    if panel.average is not None:
        out.append(
            f'<line class="samza-average" x1="{left}" x2="{left + inner_w}" y1="{py(panel.average)}" '
            f'y2="{py(panel.average)}" stroke="{_COLOURS[1]}" stroke-width="1.5" stroke-dasharray="5 3"/>'
        )
    for index, text in enumerate(panel.legend):
        entry_colour = _COLOURS[index % len(_COLOURS)]
        mark = "■" if index == 0 else "┅"
        out.append(
            f'<text class="samza-legend" x="{left}" y="{30 + 14 * index}" fill="{entry_colour}">'
            f"{mark} {html.escape(text)}</text>"
        )
    out.append("</svg>")
    return "".join(out)


@dataclass
class JobChart:
    """What ``job.plot()`` returns: the job's history as charts (SVG) and as data.

    ``rows``: one dict per committed epoch, oldest first (``seconds`` since the job started,
    ``epoch``, ``messages_in``, ``messages_out``, ``rate`` and ``lag``); ``panels``: the charts
    drawn. Every panel shares one x axis, the job's whole course. ``rate`` is input messages per
    second over the trailing ``window`` seconds, the rule RunProgress's running rate follows;
    ``average_rate`` is the job's average from its start to the commit that read its last input
    message, the rate RunProgress shows once the job is done. ``panel(name)`` gives a panel's
    data as drawn.
    """

    app_name: str
    rows: list[dict[str, Any]]
    panels: tuple[str, ...] = ("rate", "lag")
    x: str = "seconds"
    average_rate: float | None = None
    window: float = RATE_WINDOW

    def to_frame(self) -> Any:
        import pandas as pd

        return pd.DataFrame(self.rows)

    @property
    def x_range(self) -> tuple[float, float]:
        """The x axis every panel shares: from the job's start (0 s) or its first epoch to its
        last sample."""
        xs = [float(row[self.x]) for row in self.rows]
        if not xs:
            return (0.0, 1.0)
        return (0.0 if self.x == "seconds" else min(xs), max(xs))

    def panel(self, name: str) -> ChartPanel:
        """The data of panel ``name`` as drawn (values in the panel's unit)."""
        title, unit = _PANELS.get(name, (name, name))
        # Samples without the value (the first rate, lag not measured) are left out.
        points = [
            (float(row[self.x]), float(row[name])) for row in self.rows if row.get(name) is not None
        ]
        values = [value for _, value in points]
        peak = max(values, default=0.0)
        average = self.average_rate if name == "rate" else None
        if name == "rate":
            legend = [f"rate over the last {self.window:g} s (peak {_per_second(peak)})"]
            if average is not None:
                legend.append(
                    f"average {_per_second(average)} from the start to the last input read "
                    "(RunProgress's rate once done)"
                )
        else:
            latest = f"{values[-1]:,.0f}" if values else "–"
            legend = [f"{name} (latest {latest}, peak {peak:,.0f} {unit})"]
        return ChartPanel(
            name=name,
            title=f"{self.app_name}: {title}, {unit}",
            unit=unit,
            x_label=_X_LABELS.get(self.x, self.x),
            x=[x for x, _ in points],
            values=values,
            x_range=self.x_range,
            y_max=_nice_ceiling(max(peak, average or 0.0)),
            legend=legend,
            average=average,
        )

    def to_svg(self) -> str:
        return "".join(line_chart_svg(self.panel(name)) for name in self.panels)

    def _repr_html_(self) -> str:
        if len(self.rows) < 2:
            return f"<p>{html.escape(repr(self))}: not enough epochs to draw yet</p>"
        # Images rather than inline <svg>: JupyterLab's sanitizer keeps them in saved notebooks.
        return f'<div class="samza-job-chart">{svg_image(self.to_svg())}</div>'

    def __repr__(self) -> str:
        return f"JobChart({self.app_name!r}, {len(self.rows)} epochs, panels={list(self.panels)})"


@dataclass
class LagHeatmap:
    """Lag per task (rows) and input stream partition (columns), as committed: the darker the
    cell, the more messages that task has not read from that partition yet.

    ``cells``: (task, ``stream#partition``) → messages not read yet.
    """

    cells: dict[tuple[str, str], int] = field(default_factory=dict)

    @property
    def tasks(self) -> list[str]:
        return sorted({task for task, _ in self.cells})

    @property
    def columns(self) -> list[str]:
        def order(key: str) -> tuple[str, int]:
            stream, _, partition = key.rpartition("#")
            return stream, int(partition) if partition.isdigit() else 0

        return sorted({column for _, column in self.cells}, key=order)

    def to_frame(self) -> Any:
        import pandas as pd

        frame = pd.DataFrame(0, index=self.tasks, columns=self.columns)
        for (task, column), lag in self.cells.items():
            frame.loc[task, column] = lag
        return frame

    def _repr_html_(self) -> str:
        peak = max(self.cells.values(), default=0)
        cell_style = f"border:1px solid {_GRID};padding:2px 6px;text-align:right;font-size:11px"
        head = "".join(
            f'<th style="{cell_style};color:{_TEXT}">{html.escape(c)}</th>' for c in self.columns
        )
        rows = []
        for task in self.tasks:
            cells = []
            for column in self.columns:
                if (task, column) not in self.cells:
                    cells.append(f'<td style="{cell_style}"></td>')
                    continue
                lag = self.cells[(task, column)]
                strength = lag / peak if peak else 0.0
                # Blue with the lag's share of the peak as opacity: text stays dark on light
                # cells, white on dark ones.
                colour = "#ffffff" if strength > 0.55 else _TEXT
                cells.append(
                    f'<td class="samza-lag" data-lag="{lag}" style="{cell_style};'
                    f"background:rgba(9,105,218,{strength:.2f});color:{colour}\">{lag:,}</td>"
                )
            rows.append(
                f'<tr><th style="{cell_style};text-align:left;color:{_TEXT}">{html.escape(task)}</th>'
                f"{''.join(cells)}</tr>"
            )
        return (
            f'<table class="samza-lag-heatmap" style="border-collapse:collapse;font-family:{_FONT};'
            f'color:{_TEXT}"><caption style="text-align:left;font-weight:600;padding:2px 0">'
            f"lag per task and partition (peak {peak:,})</caption>"
            f'<thead><tr><th style="{cell_style}"></th>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>"
        )

    def __repr__(self) -> str:
        total = sum(self.cells.values())
        return f"LagHeatmap({len(self.tasks)} tasks × {len(self.columns)} partitions, lag {total:,})"

"""A job's numbers drawn: its history over time (``job.plot()``), lag per task and partition
(``job.lag_heatmap()``) and sparklines for the live views.

Plain SVG and HTML with inline styles (no plotting library, no CSS a theme must provide), so a
saved notebook or an offline export shows them as they were. Colours are JupyterLab's theme
variables with light-theme fallbacks, readable on the dark theme too.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from samza_nb.plan.drawing import sparkline_points, svg_image

__all__ = ["JobChart", "LagHeatmap", "line_chart_svg", "sparkline_svg"]

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


def line_chart_svg(
    x: Sequence[float],
    series: Mapping[str, Sequence[float]],
    *,
    x_label: str,
    title: str,
    width: int = 640,
    height: int = 190,
) -> str:
    """One panel: each series a line over ``x``, each scaled to its own maximum (the legend
    gives every maximum), a left axis in percent of it."""
    left, right, top, bottom = 40, 12, 40, 30
    inner_w, inner_h = width - left - right, height - top - bottom
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="samza-chart" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" font-family="{_FONT}" font-size="11" '
        f'style="max-width:100%;height:auto">',
        f'<text x="{left}" y="14" fill="{_TEXT}" font-weight="600">{html.escape(title)}</text>',
    ]
    for fraction in (0.0, 0.5, 1.0):
        y = top + inner_h * (1 - fraction)
        out.append(
            f'<line x1="{left}" x2="{left + inner_w}" y1="{_fmt(y)}" y2="{_fmt(y)}" stroke="{_GRID}"/>'
            f'<text x="{left - 4}" y="{_fmt(y + 4)}" text-anchor="end" fill="{_TEXT}">'
            f"{int(fraction * 100)}%</text>"
        )
    lo, hi = (min(x), max(x)) if x else (0.0, 1.0)
    span = (hi - lo) or 1.0
    out.append(
        f'<text x="{left}" y="{height - 8}" fill="{_TEXT}">{_short(lo)}</text>'
        f'<text x="{left + inner_w}" y="{height - 8}" text-anchor="end" fill="{_TEXT}">'
        f"{_short(hi)} {html.escape(x_label)}</text>"
    )
    legend_x = left
    for index, (name, values) in enumerate(series.items()):
        colour = _COLOURS[index % len(_COLOURS)]
        peak = max(values, default=0.0)
        top_value = peak or 1.0
        points = " ".join(
            f"{_fmt(left + inner_w * (xi - lo) / span)},{_fmt(top + inner_h * (1 - v / top_value))}"
            for xi, v in zip(x, values, strict=True)
        )
        if len(values) > 1:
            out.append(
                f'<polyline class="samza-series" data-series="{html.escape(name)}" points="{points}" '
                f'fill="none" stroke="{colour}" stroke-width="1.8"/>'
            )
        out.append(
            f'<text x="{legend_x}" y="30" fill="{colour}">■ {html.escape(name)} '
            f"(max {_short(peak)})</text>"
        )
        legend_x += 160
    out.append("</svg>")
    return "".join(out)


@dataclass
class JobChart:
    """What ``job.plot()`` returns: the job's history as charts (SVG) and as data.

    ``rows``: one dict per committed epoch, oldest first (``seconds`` since the first, ``epoch``,
    ``messages_in``, ``messages_out``, ``rate`` and ``lag``); ``panels``: the charts drawn.
    """

    app_name: str
    rows: list[dict[str, Any]]
    panels: tuple[str, ...] = ("rate", "lag")
    x: str = "seconds"

    def to_frame(self) -> Any:
        import pandas as pd

        return pd.DataFrame(self.rows)

    def to_svg(self) -> str:
        xs = [float(row[self.x]) for row in self.rows]
        charts = []
        titles = {
            "rate": "input messages per second",
            "lag": "input lag (messages not read yet)",
            "messages_in": "input messages read",
            "messages_out": "messages written to outputs",
            "epoch": "epochs",
        }
        for panel in self.panels:
            # Samples without the value (the first rate, lag not measured) are left out.
            points = [(x, row[panel]) for x, row in zip(xs, self.rows, strict=True) if row.get(panel) is not None]
            charts.append(
                line_chart_svg(
                    [x for x, _ in points],
                    {panel: [float(v) for _, v in points]},
                    x_label=self.x,
                    title=f"{self.app_name}: {titles.get(panel, panel)}",
                )
            )
        return "".join(charts)

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

"""Drawings of an ExecutionPlan: SVG and HTML written by hand, and a text outline.

The SVG is a left-to-right layered DAG. Operators are nodes grouped in one box per stage;
inputs (and side inputs) sit in the first column, outputs in the last, tables between the
stages that write and read them; intermediate streams are labelled edges between stages
("partition_by by-page → 4 partitions"). Layout: blocks (stage boxes, stream and table nodes)
get columns by longest path over the block graph, and rows by a barycenter pass; inside a stage
the operators are layered by longest path with a barycenter ordering of each layer.

Every element a live view may want to restyle carries a class and a data attribute:
``g.samza-stage[data-stage]``, ``g.samza-op[data-op][data-stage]``,
``g.samza-stream[data-stream]`` (edges that carry a stream, with their label) and
``g.samza-stream-node[data-stream]`` (input, output and side-input nodes),
``g.samza-table[data-table]``. :func:`render_svg` takes ``stream_styles``, ``stream_labels``,
``operator_labels`` (lines split at "\\n"), ``operator_styles``, ``stage_labels`` and
``stage_sparklines`` so a widget can colour streams and operators and show counters and trends.

Text is measured (_text_width.py) and every box grows to its text, so no label is cut; edges
run straight down past stream labels and stage titles, and edges passing other lines of blocks
take a lane right of them (_edge_routes.py), so no edge crosses a label. The SVG has a viewBox
and is drawn at ``width:100%`` up to its natural width: it scales down to a narrower box.

The sizes, colours and records of a drawing live in _drawing_parts.py, the layout of a stage in
_stage_layout.py and of the whole plan in _drawing_layout.py, edge routes and label places in
_edge_routes.py, the text outline in outline.py.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Mapping, Sequence
from html import unescape as html_unescape
from typing import TYPE_CHECKING

from samza_nb.errors import PlanError
from samza_nb.plan._drawing_layout import _layout
from samza_nb.plan._drawing_parts import (
    _ATTRIBUTE,
    _EDGE_COLOURS,
    _EDGE_DEFAULT,
    _EXTRA_LINE_H,
    _FONT,
    _PAD,
    _SPARK_W,
    _STAGE_COLOUR,
    _STAGE_FILL,
    _STAGE_STROKE,
    _TEXT,
    _TEXT_COUNTER,
    _TEXT_MUTED,
    _TEXT_STREAM,
    _TINT,
    _TITLE_H,
    FONT_SIZE,
    MAX_WIDTH,
    _fmt,
    _Node,
    escape,
    quoteattr,
)
from samza_nb.plan._edge_routes import _path
from samza_nb.plan.outline import render_text

if TYPE_CHECKING:
    from samza_nb.plan.execution_plan import ExecutionPlan

__all__ = [
    "FONT_SIZE",
    "MAX_WIDTH",
    "StreamStyle",
    "render_html",
    "render_svg",
    "render_text",
    "scroll_box",
    "sparkline_points",
    "svg_image",
]

StreamStyle = str | Mapping[str, str]
"""A colour (the stroke of the stream's edges and node) or SVG attributes for them."""


# -- SVG ------------------------------------------------------------------------------------
def _attrs(data: Mapping[str, str]) -> str:
    return "".join(f" data-{name}={quoteattr(value)}" for name, value in data.items())


def _style_attrs(style: StreamStyle | None) -> dict[str, str]:
    if style is None:
        return {}
    if isinstance(style, str):
        return {"stroke": style}
    result: dict[str, str] = {}
    for name, value in style.items():
        if not _ATTRIBUTE.match(name):
            msg = f"stream style attribute {name!r} is not an SVG attribute name"
            raise PlanError(msg)
        result[name] = str(value)
    return result


def _text_lines(node: _Node) -> str:
    parts = []
    for index, line in enumerate(node.lines):
        y = 14 + index * _EXTRA_LINE_H
        weight = ' font-weight="600"' if index == 0 else ""
        colour = _TEXT if index < 2 else _TEXT_COUNTER
        parts.append(
            f'<text x="{_fmt(node.w / 2)}" y="{_fmt(y)}" text-anchor="middle" '
            f'style="fill:{colour}"{weight}>{escape(line)}</text>'
        )
    return "".join(parts)


def render_svg(
    plan: ExecutionPlan,
    *,
    stream_styles: Mapping[str, StreamStyle] | None = None,
    stream_labels: Mapping[str, str] | None = None,
    operator_labels: Mapping[str, str] | None = None,
    stage_labels: Mapping[int, str] | None = None,
    operator_styles: Mapping[str, StreamStyle] | None = None,
    stage_sparklines: Mapping[int, Sequence[float]] | None = None,
    folded: Iterable[int] = (),
    max_width: float = MAX_WIDTH,
    scale: float = 1.0,
) -> str:
    """The plan as an SVG document (a string), about ``max_width`` px wide at its natural size.

    Every label is measured and its box sized to it, so none is cut; the SVG has a viewBox
    and is drawn at ``width:100%`` up to its natural width, so it scales down to fit a
    narrower box instead of overflowing it.

    ``stream_styles`` maps stream ids to a colour or to SVG attributes for the stream's edges
    and node; ``stream_labels`` adds text to a stream (its node, or its edge label for
    intermediate streams); ``operator_labels`` adds lines (split at "\\n") to operator nodes;
    ``operator_styles`` maps operator ids to a colour or SVG attributes for their box;
    ``stage_labels`` adds text to stage titles; ``stage_sparklines`` draws a small line of
    each stage's values (oldest first) at its box's top right. Use them for live counters.
    ``folded`` stages are drawn as one box (title and counters) instead of their operators;
    a ``scale`` other than 1 (a zoom) draws the SVG at that multiple of its natural width,
    scrolling in its box when larger (the layout does not change).
    """
    if not scale > 0:
        msg = f"scale must be a positive number, got {scale!r}"
        raise PlanError(msg)
    styles = {sid: _style_attrs(style) for sid, style in (stream_styles or {}).items()}
    op_styles = {op_id: _style_attrs(style) for op_id, style in (operator_styles or {}).items()}
    trends = stage_sparklines or {}
    stage_texts = stage_labels or {}
    layout = _layout(
        plan,
        stream_labels or {},
        operator_labels or {},
        folded=frozenset(folded),
        stage_labels=stage_texts,
        max_width=max_width,
        sparklines=frozenset(sid for sid, values in trends.items() if len(values) >= 2),
    )
    natural = f"{_fmt(layout.width)}px"
    if scale == 1:
        size = f"width:100%;max-width:{natural};height:auto"
    else:
        size = f"width:{_fmt(layout.width * scale)}px;max-width:none;height:auto"
    out: list[str] = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="samza-plan" '
        f'viewBox="0 0 {_fmt(layout.width)} {_fmt(layout.height)}" style="{size}" '
        f'font-family="{_FONT}" font-size="{FONT_SIZE}" data-app={quoteattr(plan.app_name)} '
        f"data-job-id={quoteattr(plan.job_id)}>",
        f"<title>{escape(f'plan of {plan.app_name} (job {plan.job_id})')}</title>",
        # The theme's background inline; white where the theme's variables are unknown (the
        # drawing as an image in a saved notebook), so the dark text never lies on a dark page.
        '<rect class="samza-background" width="100%" height="100%" '
        'style="fill:var(--jp-layout-color0,#ffffff)"/>',
        '<defs><marker id="samza-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
        'fill="context-stroke"/></marker></defs>',
    ]
    for block in layout.blocks:
        if block.kind != "stage":
            continue
        stage_id = int(block.data["stage"])
        trend = ""
        if len(trends.get(stage_id, ())) >= 2:
            spark_w = _SPARK_W
            points = sparkline_points(trends[stage_id], width=spark_w, height=_TITLE_H)
            trend = (
                f'<g class="samza-sparkline" data-stage="{stage_id}" transform="translate('
                f'{_fmt(block.x + block.w - _PAD - spark_w)},{_fmt(block.y + _PAD / 2)})">'
                f'<polyline points="{points}" fill="none" stroke="{_STAGE_COLOUR}" '
                'stroke-width="1.5"/></g>'
            )
        out.append(
            f'<g class="samza-stage"{_attrs(block.data)}>'
            f'<rect x="{_fmt(block.x)}" y="{_fmt(block.y)}" width="{_fmt(block.w)}" '
            f'height="{_fmt(block.h)}" rx="8" stroke-dasharray="4 3" '
            f'style="fill:{_STAGE_FILL};stroke:{_STAGE_STROKE}"/>'
            f'<text x="{_fmt(block.x + block.title_x)}" y="{_fmt(block.y + _PAD + 8)}" '
            f'style="fill:{_TEXT_MUTED}" font-weight="600">'
            f"{escape(block.title)}</text>{trend}</g>"
        )
    for edge in layout.edges:
        colour = _EDGE_COLOURS.get(edge.kind, _EDGE_DEFAULT)
        attributes = {
            "fill": "none",
            "stroke": colour,
            "stroke-width": "1.6" if edge.kind == "intermediate" else "1.2",
        }
        if edge.kind in ("table", "side_input"):
            attributes["stroke-dasharray"] = "5 3"
        if edge.stream is not None:
            attributes.update(styles.get(edge.stream, {}))
        attr_text = "".join(f" {name}={quoteattr(value)}" for name, value in attributes.items())
        path = f'<path d="{_path(edge)}"{attr_text} marker-end="url(#samza-arrow)"/>'
        label = ""
        if edge.label is not None and edge.label_box is not None:
            label = _edge_label(edge.label, edge.label_box)
        if edge.stream is not None:
            out.append(
                f'<g class="samza-stream samza-edge samza-edge-{edge.kind.replace("_", "-")}" '
                f"data-stream={quoteattr(edge.stream)}>{path}{label}</g>"
            )
        elif edge.table is not None:
            out.append(
                f'<g class="samza-edge samza-edge-table" data-table={quoteattr(edge.table)}>{path}</g>'
            )
        else:
            src_op, dst_op = edge.src.data.get("op", ""), edge.dst.data.get("op", "")
            out.append(
                f'<g class="samza-edge samza-edge-op" data-from={quoteattr(src_op)} '
                f"data-to={quoteattr(dst_op)}>{path}</g>"
            )
    for key, node in layout.nodes.items():
        if node.block is None:
            continue
        rx = 14 if key.startswith("stream:") else 6
        stroke_attrs = {
            "fill": node.fill,
            "fill-opacity": _TINT,
            "stroke": node.stroke,
            "stroke-width": "1.2",
        }
        if key.startswith("stream:"):
            stroke_attrs.update(styles.get(key[len("stream:") :], {}))
        elif "op" in node.data:
            stroke_attrs.update(op_styles.get(node.data["op"], {}))
        rect_attrs = "".join(f" {name}={quoteattr(value)}" for name, value in stroke_attrs.items())
        out.append(
            f'<g class="{node.classes}"{_attrs(node.data)} transform="translate({_fmt(node.x)},{_fmt(node.y)})">'
            f"<title>{escape(node.title)}</title>"
            f'<rect width="{_fmt(node.w)}" height="{_fmt(node.h)}" rx="{rx}"{rect_attrs}/>'
            f"{_text_lines(node)}</g>"
        )
    out.append("</svg>")
    return "".join(out)


def sparkline_points(values: Sequence[float], *, width: float, height: float) -> str:
    """An SVG polyline's points for ``values`` (oldest first) across ``width``, scaled to
    their maximum within ``height`` (1 px margins); needs at least two values."""
    top = max(max(values), 1e-9)
    step = width / (len(values) - 1)
    return " ".join(
        f"{_fmt(i * step)},{_fmt(height - 2 - (height - 4) * v / top)}" for i, v in enumerate(values)
    )


def _edge_label(text: str, box: tuple[float, float, float, float]) -> str:
    """A stream's label in its box (placed by _edge_routes.py), on a halo of the background."""
    return (
        f'<text class="samza-stream-label" x="{_fmt(box[0])}" y="{_fmt(box[3] - 3)}" '
        f'style="fill:{_TEXT_STREAM};stroke:var(--jp-layout-color0,#ffffff);stroke-width:3px;'
        f'paint-order:stroke">{escape(text)}</text>'
    )


def render_html(plan: ExecutionPlan, **options: object) -> str:
    """The SVG of :func:`render_svg` (same options) under a one-line summary, in a box that
    scrolls (both ways, its scrollbars at the drawing) when the drawing is larger."""
    svg = render_svg(plan, **options)  # type: ignore[arg-type]
    summary = (
        f"<b>{escape(plan.app_name)}</b> (job {escape(plan.job_id)}): "
        f"{len(plan.stages)} stage{'s' if len(plan.stages) != 1 else ''}, "
        f"{len(plan.operators)} operators, {len(plan.inputs)} input"
        f"{'s' if len(plan.inputs) != 1 else ''}, {len(plan.outputs)} output"
        f"{'s' if len(plan.outputs) != 1 else ''}, {len(plan.intermediate_streams)} intermediate"
        f" stream{'s' if len(plan.intermediate_streams) != 1 else ''}"
    )
    if plan.window_ms is not None:
        summary += f", task.window.ms={plan.window_ms}"
    return (
        f'<div class="samza-plan-view" data-app={quoteattr(plan.app_name)}>'
        f'<div style="font-family:{_FONT};font-size:12px;margin:2px 0 6px;color:{_TEXT}">'
        f"{summary}</div>{scroll_box(svg)}</div>"
    )


def svg_image(html: str) -> str:
    """``html`` with each inline ``<svg>`` drawing turned into an ``<img>`` of it (a data URI).

    For snapshots kept in saved notebooks: JupyterLab's sanitizer drops ``<svg>`` from
    untrusted notebooks (leaving its text as a jumble) but keeps an ``<img>``, shown once the
    notebook is trusted and, until then, reduced to its alt text; nbconvert and trusted
    notebooks show the image. Like the drawing, it scales down to its box.
    """

    def image(match: re.Match[str]) -> str:
        svg = match.group(0)
        root = re.match(r'<svg [^>]*width="([\d.]+)" height="([\d.]+)"', svg)
        view = re.match(r'<svg [^>]*viewBox="0 0 ([\d.]+) ([\d.]+)"', svg)
        size, style = "", "max-width:none"
        if root:
            size = f' width="{root.group(1)}" height="{root.group(2)}"'
        elif view:
            # A drawing sized by its viewBox (render_svg): as wide as the box, up to its own width.
            size = f' width="{view.group(1)}" height="{view.group(2)}"'
            style = f"width:100%;max-width:{view.group(1)}px;height:auto"
        title = re.search(r"<title>([^<]*)</title>", svg)
        alt = f"drawing: {html_unescape(title.group(1))}" if title else "drawing"
        data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
        return (
            f'<img class="samza-plan-image" src="data:image/svg+xml;base64,{data}"{size} '
            f"alt={quoteattr(alt + ' (shown once the notebook is trusted)')} "
            f'style="{style}"/>'
        )

    return re.sub(r"<svg .*?</svg>", image, html, flags=re.DOTALL)


def scroll_box(svg: str) -> str:
    """A box as wide as the cell (never wider) and at most 70% of the window high around a
    drawing: a larger drawing scrolls inside it, with its scrollbars right at the drawing."""
    return (
        # width:0 and min-width:100%: as wide as its container, while adding nothing to the
        # container's own width (a flex item in a widget would otherwise grow to the drawing
        # and be clipped, its scrollbar nowhere near the drawing).
        f'<div class="samza-plan-scroll" style="overflow:auto;width:0;min-width:100%;'
        f'max-width:100%;max-height:70vh;box-sizing:border-box">{svg}</div>'
    )

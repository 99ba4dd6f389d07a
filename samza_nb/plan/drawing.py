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
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape as _escape
from html import unescape as html_unescape
from typing import TYPE_CHECKING

from samza_nb.plan.operators import (
    BroadcastOperatorSpec,
    InputOperatorSpec,
    OpCode,
    OperatorSpec,
    OutputOperatorSpec,
    PartitionByOperatorSpec,
    SendToTableOperatorSpec,
    StreamTableJoinOperatorSpec,
)

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

_NODE_W = 140.0
_NODE_H = 36.0
_EXTRA_LINE_H = 13.0
_LAYER_GAP = 26.0
_ROW_GAP = 12.0
_LINE_GAP = 26.0
_PAD = 12.0
_TITLE_H = 18.0
_BAND_GAP = 48.0
_BLOCK_GAP = 26.0
_LABEL_H = 13.0
_CHAR_W = 6.4
_MARGIN = 14.0
_SPARK_W = 60.0
_FONT = "-apple-system,BlinkMacSystemFont,'Segoe UI',Helvetica,Arial,sans-serif"
#: The width the layout keeps to (a notebook cell is about 900 px wide): stages wrap their
#: operators into lines and bands wrap their blocks rather than grow wider.
MAX_WIDTH = 880.0
#: Text size in px; the drawing is never scaled down, so this is the size people read.
FONT_SIZE = 11

# Colours that read on JupyterLab's light and dark themes: nodes are a faint tint of their
# stroke colour over the theme's background, text and boxes take the theme's CSS variables
# (with light-theme fallbacks where the variables are not defined: a file, nbconvert, GitHub).
_TEXT = "var(--jp-content-font-color1,#24292f)"
_TEXT_MUTED = "var(--jp-content-font-color2,#57606a)"
_TEXT_COUNTER = "var(--jp-content-link-color,#0550ae)"
_TEXT_STREAM = "var(--jp-warn-color0,#9a4a0e)"
_STAGE_FILL = "var(--jp-layout-color2,#f6f8fa)"
_STAGE_STROKE = "var(--jp-border-color1,#afb8c1)"
_TINT = "0.16"

_OP_COLOURS = {
    "io": "#6e7781",
    "shuffle": "#c9661f",
    "stateful": "#8250df",
    "stateless": "#3b7dd8",
}
_STREAM_COLOURS = {"input": "#2da44e", "side_input": "#2da44e", "output": "#bf8700"}
_TABLE_COLOUR = "#8250df"
_STAGE_COLOUR = "#3b7dd8"
_EDGE_COLOURS = {"intermediate": "#c9661f", "table": "#8250df"}
_EDGE_DEFAULT = "#8c959f"
_ATTRIBUTE = re.compile(r"^[a-z][a-z-]*$")


def _category(opcode: OpCode) -> str:
    if opcode in (OpCode.PARTITION_BY, OpCode.BROADCAST):
        return "shuffle"
    if opcode in (OpCode.WINDOW, OpCode.JOIN):
        return "stateful"
    if opcode in (OpCode.INPUT, OpCode.SEND_TO):
        return "io"
    return "stateless"


def escape(text: str) -> str:
    """Text content for SVG/HTML (xml.sax.saxutils would import urllib: 60 ms at start-up)."""
    return _escape(text, quote=False)


def quoteattr(text: str) -> str:
    """A double-quoted, escaped attribute value."""
    return f'"{_escape(text, quote=True)}"'


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"


def _clip(text: str, width: float) -> str:
    limit = max(4, int((width - 12) / _CHAR_W))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _partitions(count: int) -> str:
    return f"{count} partition" if count == 1 else f"{count} partitions"


def _suffix(spec: OperatorSpec) -> str:
    """The user id or counter of an op id (``by-page`` of ``app-1-partition_by-by-page``)."""
    marker = f"-{spec.opcode.value}-"
    index = spec.op_id.rfind(marker)
    return spec.op_id[index + len(marker) :] if index >= 0 else spec.op_id


@dataclass(eq=False)
class _Node:
    key: str
    lines: list[str]
    title: str
    classes: str
    data: dict[str, str]
    fill: str
    stroke: str
    w: float = _NODE_W
    h: float = _NODE_H
    x: float = 0.0
    y: float = 0.0
    block: _Block | None = None

    @property
    def cy(self) -> float:
        return self.y + self.h / 2


@dataclass(eq=False)
class _Block:
    key: str
    kind: str  # "stage", "stream", "table"
    order: int
    nodes: list[_Node] = field(default_factory=list)
    w: float = _NODE_W
    h: float = _NODE_H
    x: float = 0.0
    y: float = 0.0
    column: int = 0
    title: str = ""
    data: dict[str, str] = field(default_factory=dict)

    @property
    def cy(self) -> float:
        return self.y + self.h / 2


@dataclass(eq=False)
class _Edge:
    src: _Node
    dst: _Node
    kind: str  # "op", "input", "intermediate", "output", "table", "side_input"
    stream: str | None = None
    table: str | None = None
    label: str | None = None


@dataclass
class _Layout:
    blocks: list[_Block]
    nodes: dict[str, _Node]
    edges: list[_Edge]
    width: float
    height: float


# -- layout ---------------------------------------------------------------------------------
def _op_node(plan: ExecutionPlan, spec: OperatorSpec, extra: str | None) -> _Node:
    if isinstance(spec, InputOperatorSpec):
        info = plan.streams.get(spec.stream_id)
        if info is not None and info.kind == "intermediate":
            producer = plan.operators.get(spec.stream_id)
            detail = "⇐ " + (producer.short_id if producer is not None else spec.stream_id)
        else:
            detail = "⇐ " + spec.stream_id
    elif isinstance(spec, OutputOperatorSpec):
        detail = "⇒ " + spec.stream_id
    elif isinstance(spec, SendToTableOperatorSpec | StreamTableJoinOperatorSpec):
        table = spec.table.table_id if spec.table is not None else "?"
        detail = ("⇒ table " if isinstance(spec, SendToTableOperatorSpec) else "⋈ table ") + table
    else:
        detail = _suffix(spec)
        if detail.isdigit():
            detail = "#" + detail
    lines = [spec.opcode.value, detail]
    if extra:
        lines.extend(extra.split("\n"))
    title = spec.op_id + (f"\n{spec.user_location}" if spec.user_location else "")
    fill = stroke = _OP_COLOURS[_category(spec.opcode)]
    return _Node(
        key=f"op:{spec.op_id}",
        lines=lines,
        title=title,
        classes=f"samza-node samza-op samza-op-{spec.opcode.value}",
        data={"op": spec.op_id},
        fill=fill,
        stroke=stroke,
    )


def _layout_stage(
    plan: ExecutionPlan,
    stage_id: int,
    op_ids: tuple[str, ...],
    nodes: dict[str, _Node],
    node_h: float,
    per_line: int,
) -> _Block:
    specs = [plan.operators[op_id] for op_id in op_ids]
    preds: dict[str, list[str]] = {spec.op_id: [] for spec in specs}
    for spec in specs:
        for nxt in spec.next_ops:
            preds[nxt.op_id].append(spec.op_id)
    layer: dict[str, int] = {}
    for spec in specs:  # creation order is topological
        layer[spec.op_id] = max((layer[p] + 1 for p in preds[spec.op_id]), default=0)
    last = max(layer.values(), default=0)
    for spec in specs:
        # Operators that write streams or tables go to the stage's right edge, so the edges
        # leaving the stage never cross the stage's other operators.
        writes = isinstance(
            spec,
            PartitionByOperatorSpec
            | BroadcastOperatorSpec
            | OutputOperatorSpec
            | SendToTableOperatorSpec,
        )
        if writes and not spec.next_ops:
            layer[spec.op_id] = last
    layers: list[list[str]] = [[] for _ in range(last + 1)]
    for spec in specs:
        layers[layer[spec.op_id]].append(spec.op_id)
    succs = {spec.op_id: [n.op_id for n in spec.next_ops] for spec in specs}
    _barycenter(layers, preds, succs, layer)

    # Layers run left to right and wrap into lines, like words: a stage is never wider than
    # ``per_line`` layers, so a long pipeline reads as a few lines instead of one wide row.
    row_h = node_h + _ROW_GAP
    lines = [layers[i : i + per_line] for i in range(0, len(layers), per_line)]
    line_rows = [max(len(members) for members in line) for line in lines]
    widest = min(len(layers), per_line)
    block = _Block(
        key=f"stage:{stage_id}",
        kind="stage",
        order=stage_id,
        w=2 * _PAD + widest * _NODE_W + (widest - 1) * _LAYER_GAP,
        h=2 * _PAD
        + _TITLE_H
        + sum(rows * row_h - _ROW_GAP for rows in line_rows)
        + (len(lines) - 1) * _LINE_GAP,
        data={"stage": str(stage_id)},
    )
    top = _PAD + _TITLE_H
    for line, rows in zip(lines, line_rows, strict=True):
        for index, members in enumerate(line):
            offset = (rows - len(members)) * row_h / 2
            for row, op_id in enumerate(members):
                node = nodes[op_id]
                node.block = block
                node.h = node_h
                node.x = _PAD + index * (_NODE_W + _LAYER_GAP)
                node.y = top + offset + row * row_h
                node.data["stage"] = str(stage_id)
                block.nodes.append(node)
        top += rows * row_h - _ROW_GAP + _LINE_GAP
    return block


def _collapsed_stage(
    stage_id: int, op_ids: tuple[str, ...], extra: str | None, node_h: float
) -> tuple[_Block, _Node]:
    """A folded stage: one box with its title and counters, standing for all its operators."""
    count = len(op_ids)
    lines = [f"stage {stage_id}", f"{count} operator{'' if count == 1 else 's'} (folded)"]
    if extra:
        lines.append(extra)
    node = _Node(
        key=f"stage:{stage_id}",
        lines=lines,
        title=f"stage {stage_id}, folded: " + ", ".join(op_ids),
        classes="samza-node samza-stage-folded",
        data={"stage": str(stage_id)},
        fill=_STAGE_COLOUR,
        stroke=_STAGE_COLOUR,
        w=max(_NODE_W + 40, min(len(extra or "") * _CHAR_W + 16, MAX_WIDTH / 2)),
        h=node_h,
    )
    block = _Block(
        key=f"stage:{stage_id}",
        kind="folded",
        order=stage_id,
        w=node.w,
        h=node.h,
        data={"stage": str(stage_id)},
    )
    node.block = block
    block.nodes.append(node)
    return block, node


def _barycenter(
    layers: list[list[str]],
    preds: Mapping[str, list[str]],
    succs: Mapping[str, list[str]],
    layer: Mapping[str, int],
) -> None:
    """Reorder each layer by the mean centred position of its neighbours (two sweeps)."""

    def positions() -> dict[str, float]:
        return {
            op_id: row - (len(members) - 1) / 2
            for members in layers
            for row, op_id in enumerate(members)
        }

    for _ in range(2):
        for forward in (True, False):
            indices = range(1, len(layers)) if forward else range(len(layers) - 2, -1, -1)
            for index in indices:
                pos = positions()
                neighbours = preds if forward else succs

                def key(
                    op_id: str,
                    pos: dict[str, float] = pos,
                    nb: Mapping[str, list[str]] = neighbours,
                    i: int = index,
                ) -> float:
                    linked = [pos[n] for n in nb[op_id] if layer[n] != i]
                    return sum(linked) / len(linked) if linked else pos[op_id]

                layers[index].sort(key=key)


def _stream_node(
    stream_id: str, kind: str, partitions: int, extra: str | None, node_h: float
) -> _Node:
    fill = stroke = _STREAM_COLOURS[kind]
    label = {"input": "input", "output": "output", "side_input": "side input"}[kind]
    lines = [stream_id, f"{label} · {_partitions(partitions)}"]
    if extra:
        lines.append(extra)
    # A stream node is as wide as its text (within reason): it stands alone in its band.
    width = min(max(_NODE_W, max(len(line) for line in lines) * _CHAR_W + 16), 2 * _NODE_W)
    return _Node(
        w=width,
        key=f"stream:{stream_id}",
        lines=lines,
        title=f"{label} stream {stream_id} ({_partitions(partitions)})",
        classes=f"samza-node samza-stream-node samza-stream-{kind.replace('_', '-')}",
        data={"stream": stream_id},
        fill=fill,
        stroke=stroke,
        h=node_h,
    )


def _layout(
    plan: ExecutionPlan,
    stream_labels: Mapping[str, str],
    operator_labels: Mapping[str, str],
    *,
    folded: frozenset[int] = frozenset(),
    stage_labels: Mapping[int, str] | None = None,
    max_width: float = MAX_WIDTH,
) -> _Layout:
    # Streams, tables and folded stages hold one line of counters; operators as many as
    # their labels have (rate, lag, watermark, state).
    node_h = _NODE_H + (_EXTRA_LINE_H if stream_labels or operator_labels else 0.0)
    op_lines = max((label.count("\n") + 1 for label in operator_labels.values()), default=0)
    op_h = max(node_h, _NODE_H + _EXTRA_LINE_H * op_lines)
    op_nodes = {
        op_id: _op_node(plan, spec, operator_labels.get(op_id))
        for op_id, spec in plan.operators.items()
    }
    nodes: dict[str, _Node] = {node.key: node for node in op_nodes.values()}
    blocks: list[_Block] = []

    def single(node: _Node, kind: str) -> _Block:
        block = _Block(key=node.key, kind=kind, order=len(blocks), w=node.w, h=node.h)
        node.block = block
        block.nodes.append(node)
        nodes[node.key] = node
        blocks.append(block)
        return block

    for stream_id, count in [*plan.inputs.items(), *plan.side_inputs.items()]:
        kind = plan.streams[stream_id].kind
        single(_stream_node(stream_id, kind, count, stream_labels.get(stream_id), node_h), "stream")
    per_line = max(
        1, int((max_width - 2 * _MARGIN - 2 * _PAD + _LAYER_GAP) // (_NODE_W + _LAYER_GAP))
    )
    edge_nodes = dict(op_nodes)
    for stage in plan.stages:
        if stage.id in folded:
            extra = (stage_labels or {}).get(stage.id)
            block, node = _collapsed_stage(stage.id, stage.operators, extra, node_h)
            nodes[node.key] = node
            for op_id in stage.operators:
                edge_nodes[op_id] = node
        else:
            block = _layout_stage(plan, stage.id, stage.operators, op_nodes, op_h, per_line)
            count = len(stage.operators)
            block.title = f"stage {stage.id} · {count} op{'' if count == 1 else 's'}"
            if stage.id in (stage_labels or {}):
                block.title += f" · {(stage_labels or {})[stage.id]}"
            # Wide enough for its title (counters included), up to the drawing's width.
            title_w = len(block.title) * _CHAR_W + 2 * _PAD
            block.w = min(max(block.w, title_w), max(block.w, max_width - 2 * _MARGIN))
        block.order = len(blocks)
        blocks.append(block)
    for table_id in plan.tables:
        fill = stroke = _TABLE_COLOUR
        node = _Node(
            key=f"table:{table_id}",
            lines=["table", table_id],
            title=f"table {table_id}",
            classes="samza-node samza-table",
            data={"table": table_id},
            fill=fill,
            stroke=stroke,
            h=node_h,
        )
        single(node, "table")
    output_blocks = [
        single(
            _stream_node(stream_id, "output", count, stream_labels.get(stream_id), node_h), "stream"
        )
        for stream_id, count in plan.outputs.items()
    ]

    edges = _edges(plan, nodes, edge_nodes, stream_labels)
    if folded:
        # Edges inside a folded stage vanish; edges into it from several operators become one.
        seen: set[tuple[str, str, str, str | None, str | None]] = set()
        kept = []
        for edge in edges:
            key = (edge.src.key, edge.dst.key, edge.kind, edge.stream, edge.table)
            if edge.src is not edge.dst and key not in seen:
                seen.add(key)
                kept.append(edge)
        edges = kept
    _assign_columns(blocks, edges, set(map(id, output_blocks)))
    _place(blocks, edges, max_width)
    width = max((b.x + b.w for b in blocks), default=0.0) + _MARGIN
    height = max((b.y + b.h for b in blocks), default=0.0) + _MARGIN
    return _Layout(blocks=blocks, nodes=nodes, edges=edges, width=width, height=height)


def _edges(
    plan: ExecutionPlan,
    nodes: Mapping[str, _Node],
    op_nodes: Mapping[str, _Node],
    stream_labels: Mapping[str, str],
) -> list[_Edge]:
    edges: list[_Edge] = []
    for op_id, spec in plan.operators.items():
        node = op_nodes[op_id]
        for nxt in spec.next_ops:
            edges.append(_Edge(node, op_nodes[nxt.op_id], "op"))
        if isinstance(spec, InputOperatorSpec) and spec.stream_id in plan.inputs:
            edges.append(
                _Edge(nodes[f"stream:{spec.stream_id}"], node, "input", stream=spec.stream_id)
            )
        elif isinstance(spec, OutputOperatorSpec) and f"stream:{spec.stream_id}" in nodes:
            edges.append(
                _Edge(node, nodes[f"stream:{spec.stream_id}"], "output", stream=spec.stream_id)
            )
        elif isinstance(spec, PartitionByOperatorSpec | BroadcastOperatorSpec):
            reader = plan.input_operators.get(spec.stream_id)
            if reader is None:
                continue
            label = f"{spec.opcode.value} {_suffix(spec)} → {_partitions(plan.intermediate_streams[spec.stream_id])}"
            if spec.stream_id in stream_labels:
                label += f" · {stream_labels[spec.stream_id]}"
            edges.append(
                _Edge(
                    node, op_nodes[reader.op_id], "intermediate", stream=spec.stream_id, label=label
                )
            )
        elif isinstance(spec, SendToTableOperatorSpec) and spec.table is not None:
            table_id = spec.table.table_id
            edges.append(_Edge(node, nodes[f"table:{table_id}"], "table", table=table_id))
        elif isinstance(spec, StreamTableJoinOperatorSpec) and spec.table is not None:
            table_id = spec.table.table_id
            edges.append(_Edge(nodes[f"table:{table_id}"], node, "table", table=table_id))
    for stream_id, table_ids in plan.side_input_tables.items():
        for table_id in table_ids:
            edges.append(
                _Edge(
                    nodes[f"stream:{stream_id}"],
                    nodes[f"table:{table_id}"],
                    "side_input",
                    stream=stream_id,
                )
            )
    return edges


def _block_links(edges: list[_Edge]) -> tuple[dict[int, list[_Block]], dict[int, list[_Block]]]:
    succs: dict[int, list[_Block]] = {}
    preds: dict[int, list[_Block]] = {}
    for edge in edges:
        a, b = edge.src.block, edge.dst.block
        if a is None or b is None or a is b:
            continue
        if b not in succs.setdefault(id(a), []):
            succs[id(a)].append(b)
            preds.setdefault(id(b), []).append(a)
    return succs, preds


def _assign_columns(blocks: list[_Block], edges: list[_Edge], outputs: set[int]) -> None:
    """Longest-path columns over the block graph, back edges (cycles through a table or a
    stage reading what it writes) ignored; outputs go to the last column."""
    succs, _ = _block_links(edges)
    state: dict[int, int] = {}  # 1 = on the DFS stack, 2 = done
    forward: dict[int, list[_Block]] = {}
    order: list[_Block] = []
    for root in blocks:
        if id(root) in state:
            continue
        stack: list[tuple[_Block, int]] = [(root, 0)]
        state[id(root)] = 1
        while stack:
            block, index = stack[-1]
            children = succs.get(id(block), [])
            if index < len(children):
                stack[-1] = (block, index + 1)
                child = children[index]
                if state.get(id(child)) == 1:
                    continue  # a back edge
                forward.setdefault(id(block), []).append(child)
                if id(child) not in state:
                    state[id(child)] = 1
                    stack.append((child, 0))
            else:
                state[id(block)] = 2
                order.append(block)
                stack.pop()
    for block in blocks:
        block.column = 0
    for block in reversed(order):  # reverse post-order: a topological order of forward edges
        for child in forward.get(id(block), []):
            child.column = max(child.column, block.column + 1)
    last = max((b.column for b in blocks if id(b) not in outputs), default=-1) + 1
    for block in blocks:
        if id(block) in outputs:
            block.column = last


def _place(blocks: list[_Block], edges: list[_Edge], max_width: float) -> None:
    """Top to bottom: one band per column of the block graph (inputs first, outputs last), the
    blocks of a band side by side, wrapping into another line of the band when the next block
    would pass ``max_width``. Within a band, blocks are ordered by where their predecessors
    sit, which keeps edges from crossing. Streams between bands get the band gap for their
    labels."""
    bands: dict[int, list[_Block]] = {}
    for block in blocks:
        bands.setdefault(block.column, []).append(block)
    _, preds = _block_links(edges)
    labels: dict[int, int] = {}
    for edge in edges:
        if edge.label and edge.src.block is not None:
            labels[id(edge.src.block)] = labels.get(id(edge.src.block), 0) + 1
    y = _MARGIN
    for column in sorted(bands):
        members = bands[column]

        def where(block: _Block, column: int = column) -> tuple[float, int]:
            xs = [p.x + p.w / 2 for p in preds.get(id(block), []) if p.column < column]
            return (sum(xs) / len(xs) if xs else 0.0, block.order)

        members.sort(key=where)
        x, line_top, line_h = _MARGIN, y, 0.0
        for block in members:
            if x > _MARGIN and x + block.w > max_width - _MARGIN:
                x, line_top = _MARGIN, line_top + line_h + _BLOCK_GAP
                line_h = 0.0
            block.x, block.y = x, line_top
            x += block.w + _BLOCK_GAP
            line_h = max(line_h, block.h)
        label_room = max((labels.get(id(b), 0) for b in members), default=0) * _LABEL_H
        y = line_top + line_h + _BAND_GAP + max(0.0, label_room - _LABEL_H)
    for block in blocks:
        for node in block.nodes:
            if block.kind == "stage":
                node.x += block.x
                node.y += block.y
            else:
                node.x, node.y = block.x, block.y


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
            raise ValueError(msg)
        result[name] = str(value)
    return result


def _path(edge: _Edge) -> str:
    """Left to right between neighbours on one line of a stage; otherwise down from the
    source's bottom to the target's top (an S-curve through the gap between them); a target
    that is not below its source (a cycle through a table, a stage reading what it writes)
    is reached around the right-hand side."""
    src, dst = edge.src, edge.dst
    same_line = src.block is dst.block and abs(src.y - dst.y) < src.h and dst.x > src.x
    if same_line:
        sx, sy, tx, ty = src.x + src.w, src.cy, dst.x, dst.cy
        d = max(8.0, (tx - sx) / 2)
        return (
            f"M{_fmt(sx)},{_fmt(sy)} C{_fmt(sx + d)},{_fmt(sy)} {_fmt(tx - d)},{_fmt(ty)} "
            f"{_fmt(tx)},{_fmt(ty)}"
        )
    sx, sy = src.x + src.w / 2, src.y + src.h
    tx, ty = dst.x + dst.w / 2, dst.y
    if ty - sy >= 8:
        d = max(10.0, (ty - sy) / 2)
        return (
            f"M{_fmt(sx)},{_fmt(sy)} C{_fmt(sx)},{_fmt(sy + d)} {_fmt(tx)},{_fmt(ty - d)} "
            f"{_fmt(tx)},{_fmt(ty)}"
        )
    right = max((b.x + b.w for b in (src.block, dst.block) if b is not None), default=src.x + src.w)
    return (
        f"M{_fmt(src.x + src.w)},{_fmt(src.cy)} H{_fmt(right + 12)} V{_fmt(dst.cy)} "
        f"H{_fmt(dst.x + dst.w)}"
    )


def _text_lines(node: _Node) -> str:
    parts = []
    for index, line in enumerate(node.lines):
        y = 14 + index * _EXTRA_LINE_H
        weight = ' font-weight="600"' if index == 0 else ""
        colour = _TEXT if index < 2 else _TEXT_COUNTER
        parts.append(
            f'<text x="{_fmt(node.w / 2)}" y="{_fmt(y)}" text-anchor="middle" '
            f'style="fill:{colour}"{weight}>{escape(_clip(line, node.w))}</text>'
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
    """The plan as an SVG document (a string), at most about ``max_width`` px wide.

    ``stream_styles`` maps stream ids to a colour or to SVG attributes for the stream's edges
    and node; ``stream_labels`` adds text to a stream (its node, or its edge label for
    intermediate streams); ``operator_labels`` adds lines (split at "\\n") to operator nodes;
    ``operator_styles`` maps operator ids to a colour or SVG attributes for their box;
    ``stage_labels`` adds text to stage titles; ``stage_sparklines`` draws a small line of
    each stage's values (oldest first) at its box's top right. Use them for live counters. ``folded`` stages
    are drawn as one box (title and counters) instead of their operators; ``scale`` sets the
    drawn size (the layout, and so what fits in ``max_width``, does not change).
    """
    if not scale > 0:
        msg = f"scale must be a positive number, got {scale!r}"
        raise ValueError(msg)
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
    )
    out: list[str] = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="samza-plan" '
        f'width="{_fmt(layout.width * scale)}" height="{_fmt(layout.height * scale)}" '
        f'viewBox="0 0 {_fmt(layout.width)} {_fmt(layout.height)}" '
        # Never scaled down to the cell (JupyterLab's max-width:100%): the text stays readable
        # and the container around the drawing scrolls instead.
        f'style="max-width:none;height:auto" '
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
        title_room = block.w - _PAD
        if len(trends.get(stage_id, ())) >= 2:
            spark_w = _SPARK_W
            points = sparkline_points(trends[stage_id], width=spark_w, height=_TITLE_H)
            trend = (
                f'<g class="samza-sparkline" data-stage="{stage_id}" transform="translate('
                f'{_fmt(block.x + block.w - _PAD - spark_w)},{_fmt(block.y + _PAD / 2)})">'
                f'<polyline points="{points}" fill="none" stroke="{_STAGE_COLOUR}" '
                'stroke-width="1.5"/></g>'
            )
            title_room -= spark_w + _PAD
        out.append(
            f'<g class="samza-stage"{_attrs(block.data)}>'
            f'<rect x="{_fmt(block.x)}" y="{_fmt(block.y)}" width="{_fmt(block.w)}" '
            f'height="{_fmt(block.h)}" rx="8" stroke-dasharray="4 3" '
            f'style="fill:{_STAGE_FILL};stroke:{_STAGE_STROKE}"/>'
            f'<text x="{_fmt(block.x + _PAD)}" y="{_fmt(block.y + _PAD + 8)}" '
            f'style="fill:{_TEXT_MUTED}" font-weight="600">'
            f"{escape(_clip(block.title, title_room))}</text>{trend}</g>"
        )
    labels_below: dict[int, int] = {}
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
        if edge.label is not None and edge.src.block is not None:
            label = _edge_label(edge, edge.src.block, labels_below, layout.width)
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


def _edge_label(edge: _Edge, block: _Block, below: dict[int, int], width: float) -> str:
    """A stream's label in the gap under the block that writes it, beside its edge (left of
    it when the right side has no room), one line per stream that block writes."""
    text = edge.label or ""
    index = below.get(id(block), 0)
    below[id(block)] = index + 1
    sx = edge.src.x + edge.src.w / 2
    y = block.y + block.h + _LABEL_H + index * _LABEL_H
    room_right = width - _MARGIN - (sx + 6)
    if len(text) * _CHAR_W <= room_right or sx - 6 < room_right:
        x, anchor, room = sx + 6, "start", room_right
    else:
        x, anchor, room = sx - 6, "end", sx - 6 - _MARGIN
    return (
        f'<text class="samza-stream-label" x="{_fmt(x)}" y="{_fmt(y)}" text-anchor="{anchor}" '
        f'style="fill:{_TEXT_STREAM};stroke:var(--jp-layout-color0,#ffffff);stroke-width:3px;'
        f'paint-order:stroke">{escape(_clip(text, room + 12))}</text>'
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
    notebooks show the image. Not scaled down: it scrolls in its box like the drawing.
    """

    def image(match: re.Match[str]) -> str:
        svg = match.group(0)
        root = re.match(r'<svg [^>]*width="([\d.]+)" height="([\d.]+)"', svg)
        size = f' width="{root.group(1)}" height="{root.group(2)}"' if root else ""
        title = re.search(r"<title>([^<]*)</title>", svg)
        alt = f"drawing: {html_unescape(title.group(1))}" if title else "drawing"
        data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
        return (
            f'<img class="samza-plan-image" src="data:image/svg+xml;base64,{data}"{size} '
            f"alt={quoteattr(alt + ' (shown once the notebook is trusted)')} "
            'style="max-width:none"/>'
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


# -- text -----------------------------------------------------------------------------------
def render_text(plan: ExecutionPlan) -> str:
    """A readable outline for terminals and papermill logs."""
    lines = [
        f"ExecutionPlan {plan.app_name!r} (job {plan.job_id}): {len(plan.stages)} "
        f"stage{'s' if len(plan.stages) != 1 else ''}, {len(plan.operators)} operators"
    ]

    def stream_line(title: str, stream_ids: Mapping[str, int]) -> None:
        if not stream_ids:
            return
        entries = []
        for stream_id, count in stream_ids.items():
            info = plan.streams[stream_id]
            kind = " broadcast" if info.is_broadcast else ""
            entries.append(f"{stream_id} [{info.system_name}, {_partitions(count)}{kind}]")
        lines.append(f"  {title:<13} " + ", ".join(entries))

    stream_line("inputs:", plan.inputs)
    stream_line("side inputs:", plan.side_inputs)
    stream_line("intermediate:", plan.intermediate_streams)
    stream_line("outputs:", plan.outputs)
    if plan.tables:
        lines.append(f"  {'tables:':<13} " + ", ".join(plan.tables))
    if plan.window_ms is not None:
        lines.append(f"  {'window:':<13} task.window.ms={plan.window_ms}")
    prefix = f"{plan.app_name}-{plan.job_id}-"
    for stage in plan.stages:
        reads = ", ".join(stage.input_streams) or "-"
        writes = ", ".join(stage.output_streams) or "-"
        lines.append(f"  stage {stage.id}: reads {reads}; writes {writes}")
        for op_id in stage.operators:
            spec = plan.operators[op_id]
            name = op_id[len(prefix) :] if op_id.startswith(prefix) else op_id
            targets = [
                nxt.op_id[len(prefix) :] if nxt.op_id.startswith(prefix) else nxt.op_id
                for nxt in spec.next_ops
            ]
            text = f"    {name}"
            if isinstance(spec, InputOperatorSpec):
                text += f" ⇐ {spec.stream_id}"
            if isinstance(
                spec, OutputOperatorSpec | PartitionByOperatorSpec | BroadcastOperatorSpec
            ):
                text += f" ⇒ {spec.stream_id}"
            if (
                isinstance(spec, SendToTableOperatorSpec | StreamTableJoinOperatorSpec)
                and spec.table
            ):
                text += f" ({'⇒' if isinstance(spec, SendToTableOperatorSpec) else '⋈'} table {spec.table.table_id})"
            if targets:
                text += " → " + ", ".join(targets)
            lines.append(text)
    return "\n".join(lines)

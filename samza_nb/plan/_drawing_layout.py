"""The layout of a whole plan drawing: stage boxes, stream and table nodes placed in columns by
longest path over the block graph and in rows by a barycenter pass, and the edges between them
(plan/drawing.py)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from samza_nb.plan._drawing_parts import (
    _BAND_GAP,
    _BLOCK_GAP,
    _EXTRA_LINE_H,
    _LABEL_H,
    _LAYER_GAP,
    _MARGIN,
    _NODE_H,
    _NODE_W,
    _PAD,
    _SPARK_W,
    _STREAM_COLOURS,
    _TABLE_COLOUR,
    MAX_WIDTH,
    _Block,
    _Edge,
    _Layout,
    _lines_w,
    _Node,
    _partitions,
    _suffix,
    _text_w,
)
from samza_nb.plan._edge_routes import (
    _assign_lanes,
    _assign_sides,
    _place_labels,
    _title_clear_of_edges,
)
from samza_nb.plan._stage_layout import _collapsed_stage, _layout_stage, _op_node
from samza_nb.plan.operators import (
    BroadcastOperatorSpec,
    InputOperatorSpec,
    OutputOperatorSpec,
    PartitionByOperatorSpec,
    SendToTableOperatorSpec,
    StreamTableJoinOperatorSpec,
)

if TYPE_CHECKING:
    from samza_nb.plan.execution_plan import ExecutionPlan


def _stream_node(
    stream_id: str, kind: str, partitions: int, extra: str | None, node_h: float
) -> _Node:
    fill = stroke = _STREAM_COLOURS[kind]
    label = {"input": "input", "output": "output", "side_input": "side input"}[kind]
    lines = [stream_id, f"{label} · {_partitions(partitions)}"]
    if extra:
        lines.append(extra)
    # A stream node is as wide as its text: it stands alone in its band.
    return _Node(
        w=max(_NODE_W, _lines_w(lines)),
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
    sparklines: frozenset[int] = frozenset(),
) -> _Layout:
    """Every node, block and edge placed; labels are measured, never cut: a box grows to
    its text, and the drawing's width to its widest line (it scales down to its box)."""
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
    # Every operator is as wide as the widest operator's text, so layers line up.
    op_w = max((node.w for node in op_nodes.values()), default=_NODE_W)
    per_line = max(
        1, int((max_width - 2 * _MARGIN - 2 * _PAD + _LAYER_GAP) // (op_w + _LAYER_GAP))
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
            block = _layout_stage(
                plan, stage.id, stage.operators, op_nodes, op_h, per_line, node_w=op_w
            )
            count = len(stage.operators)
            block.title = f"stage {stage.id} · {count} op{'' if count == 1 else 's'}"
            if stage.id in (stage_labels or {}):
                block.title += f" · {(stage_labels or {})[stage.id]}"
        block.order = len(blocks)
        blocks.append(block)
    for table_id in plan.tables:
        fill = stroke = _TABLE_COLOUR
        node = _Node(
            w=max(_NODE_W, _lines_w(["table", table_id])),
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
    for block in blocks:
        if block.kind == "stage":
            # Wide enough for its title (counters included), clear of the edges coming in,
            # and its sparkline.
            title_w = _text_w(block.title, bold=True)
            _title_clear_of_edges(block, edges, title_w)
            spark = _SPARK_W + _PAD if int(block.data["stage"]) in sparklines else 0.0
            block.w = max(block.w, block.title_x + title_w + _PAD + spark)
    _assign_columns(blocks, edges, set(map(id, output_blocks)))
    _place(blocks, edges, max_width)
    _assign_sides(blocks, edges)
    _place_labels(blocks, edges, max_width)
    label_right = max((e.label_box[2] for e in edges if e.label_box is not None), default=0.0)
    right = max(max((b.x + b.w for b in blocks), default=0.0), label_right)
    # Whole pixels: a browser lays the drawing out at its max-width exactly, unscaled.
    width = float(math.ceil(_assign_lanes(blocks, edges, right) + _MARGIN))
    height = float(math.ceil(max((b.y + b.h for b in blocks), default=0.0) + _MARGIN))
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
        lines: list[list[_Block]] = [[]]
        x = _MARGIN
        for block in members:
            if lines[-1] and x + block.w > max_width - _MARGIN:
                lines.append([])
                x = _MARGIN
            lines[-1].append(block)
            block.x = x
            x += block.w + _BLOCK_GAP
        for index, line in enumerate(lines):
            for block in line:
                block.y = y
            bottom = y + max(block.h for block in line)
            # One row per stream label of the line, under it; edges turn below the rows.
            rows = sum(labels.get(id(block), 0) for block in line)
            exit_y = bottom + (rows * _LABEL_H + 6 if rows else 0.0)
            for block in line:
                block.exit_y = exit_y
            gap = _BAND_GAP if index == len(lines) - 1 else _BLOCK_GAP
            y = exit_y + gap - (6 if rows else 0)
    for block in blocks:
        for node in block.nodes:
            if block.kind == "stage":
                node.x += block.x
                node.y += block.y
            else:
                node.x, node.y = block.x, block.y

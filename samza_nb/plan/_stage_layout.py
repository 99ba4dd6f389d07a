"""The layout inside one stage box of a plan drawing: operators layered by longest path, each
layer ordered by a barycenter pass; a folded stage is drawn as one node (plan/drawing.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from samza_nb.plan._drawing_parts import (
    _LAYER_GAP,
    _LINE_GAP,
    _NODE_W,
    _OP_COLOURS,
    _PAD,
    _ROW_GAP,
    _STAGE_COLOUR,
    _TITLE_H,
    _Block,
    _category,
    _lines_w,
    _Node,
    _suffix,
)
from samza_nb.plan.operators import (
    BroadcastOperatorSpec,
    InputOperatorSpec,
    OperatorSpec,
    OutputOperatorSpec,
    PartitionByOperatorSpec,
    SendToTableOperatorSpec,
    StreamTableJoinOperatorSpec,
)

if TYPE_CHECKING:
    from samza_nb.plan.execution_plan import ExecutionPlan


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
        if isinstance(spec, PartitionByOperatorSpec) and spec.combine_into is not None:
            detail += " (combined)"
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
        w=max(_NODE_W, _lines_w(lines)),
    )


def _layout_stage(
    plan: ExecutionPlan,
    stage_id: int,
    op_ids: tuple[str, ...],
    nodes: dict[str, _Node],
    node_h: float,
    per_line: int,
    node_w: float = _NODE_W,
) -> _Block:
    """The stage's box with its operators placed inside it, every node ``node_w`` wide."""
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
        w=2 * _PAD + widest * node_w + (widest - 1) * _LAYER_GAP,
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
                node.w = node_w
                node.x = _PAD + index * (node_w + _LAYER_GAP)
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
        w=max(_NODE_W + 40, _lines_w(lines)),
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

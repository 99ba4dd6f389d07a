"""Where a plan drawing's edges run and where their labels sit: every edge leaving a line of
blocks runs straight down to below the line's stream labels before it bends towards its
target, and each label takes its own row beside its edge, clear of every edge going down
through the rows (plan/drawing.py)."""

from __future__ import annotations

from samza_nb.plan._drawing_parts import _LABEL_H, _MARGIN, _Block, _Edge, _fmt, _text_w

#: Between an edge and the label beside it.
_LABEL_GAP = 6.0
#: Between lanes, and between a lane's turns and the lines of blocks it leaves and enters.
_LANE_GAP = 8.0


def _start(edge: _Edge) -> tuple[str, float, float]:
    """The path's first move and where it then runs down from (x, y): the source's bottom
    centre, or, with a ``side_x``, out of its right side into the gap beside it."""
    src = edge.src
    if edge.side_x is None:
        x, y = _down_x(edge), src.y + src.h
        return f"M{_fmt(x)},{_fmt(y)}", x, y
    x, y = edge.side_x, src.cy
    return f"M{_fmt(src.x + src.w)},{_fmt(y)} H{_fmt(x)}", x, y


def _down_x(edge: _Edge) -> float:
    """The x where the edge runs down out of its source's line."""
    return edge.side_x if edge.side_x is not None else edge.src.x + edge.src.w / 2


def _lane_path(edge: _Edge, lane: float, leave_y: float, enter_y: float) -> str:
    """Down from the source to below its line's labels, right to the lane, down the lane past
    the lines of blocks in between, left above the target's line and down into the target."""
    head, _sx, _sy = _start(edge)
    tx = edge.dst.x + edge.dst.w / 2
    return (
        f"{head} V{_fmt(leave_y)} H{_fmt(lane)} "
        f"V{_fmt(enter_y)} H{_fmt(tx)} V{_fmt(edge.dst.y)}"
    )


def _assign_sides(blocks: list[_Block], edges: list[_Edge]) -> None:
    """A ``side_x`` for each edge leaving a stage from an operator with another operator
    below it (straight down it would run through that one): the middle of the gap right of
    its source, edges sharing a gap 3 px apart."""
    taken: dict[tuple[int, float], int] = {}
    for edge in edges:
        src, block = edge.src, edge.src.block
        if block is None or block.kind != "stage" or edge.dst.block is block:
            continue
        if not _goes_down(edge):
            continue
        centre = src.x + src.w / 2
        if not any(n is not src and n.y > src.y and n.x < centre < n.x + n.w for n in block.nodes):
            continue
        right = src.x + src.w
        gap_end = min((n.x for n in block.nodes if n.x >= right), default=block.x + block.w)
        index = taken.get((id(block), right), 0)
        taken[(id(block), right)] = index + 1
        offset = min(index * 3.0, max(0.0, (gap_end - right) / 2 - 2))
        edge.side_x = (right + gap_end) / 2 + offset


def _assign_lanes(blocks: list[_Block], edges: list[_Edge], right: float) -> float:
    """A lane right of ``right`` for each edge whose target lies past another line of
    blocks below its source (an edge straight down would cross that line's boxes and
    titles); returns the right edge of the last lane (``right`` when there is none)."""
    tops = sorted({b.y for b in blocks})
    for edge in edges:
        src, dst = edge.src.block, edge.dst.block
        if src is None or dst is None or src is dst or not _goes_down(edge):
            continue
        if any(src.exit_y < top < dst.y for top in tops):
            right += _LANE_GAP
            edge.lane = right
    return right


def _goes_down(edge: _Edge) -> bool:
    """Whether the edge leaves its source's bottom for a target below it."""
    src, dst = edge.src, edge.dst
    same_line = src.block is dst.block and abs(src.y - dst.y) < src.h and dst.x > src.x
    return not same_line and dst.y - (src.y + src.h) >= 8


def _path(edge: _Edge) -> str:
    """Left to right between neighbours on one line of a stage; otherwise down from the
    source's bottom, straight to below its line's labels (its block's ``exit_y``), then an
    S-curve to the target's top; a target that is not below its source (a cycle through a
    table, a stage reading what it writes) is reached around the right-hand side."""
    src, dst = edge.src, edge.dst
    if edge.lane is not None and src.block is not None and dst.block is not None:
        return _lane_path(edge, edge.lane, src.block.exit_y + _LANE_GAP, dst.block.y - _LANE_GAP)
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
        head, sx, sy = _start(edge)
        turn = src.block.exit_y if src.block is not None and src.block is not dst.block else sy
        straight = ""
        if sy < turn <= ty - 8:
            straight, sy = f" V{_fmt(turn)}", turn
        # Into an operator of another stage: the curve ends at the stage's top and the edge
        # runs straight down past the stage's title (which starts right of it) to the operator.
        end, tail = ty, ""
        into = dst.block
        if into is not None and into.kind == "stage" and into is not src.block:
            if sy + 8 <= into.y < ty:
                end, tail = into.y, f" V{_fmt(ty)}"
        d = max(10.0, (end - sy) / 2)
        return (
            f"{head}{straight} C{_fmt(sx)},{_fmt(sy + d)} "
            f"{_fmt(tx)},{_fmt(end - d)} {_fmt(tx)},{_fmt(end)}{tail}"
        )
    right = max((b.x + b.w for b in (src.block, dst.block) if b is not None), default=src.x + src.w)
    return (
        f"M{_fmt(src.x + src.w)},{_fmt(src.cy)} H{_fmt(right + 12)} V{_fmt(dst.cy)} "
        f"H{_fmt(dst.x + dst.w)}"
    )


def _title_clear_of_edges(block: _Block, edges: list[_Edge], title_w: float) -> None:
    """Start a stage's title right of the edges that come down into its operators (their
    x relative to the block, before the block is placed)."""
    xs = [
        e.dst.x + e.dst.w / 2
        for e in edges
        if e.dst.block is block and e.src.block is not block
    ]
    left = block.title_x
    while any(left - 4 <= x <= left + title_w + 4 for x in xs):
        left = max(x for x in xs if left - 4 <= x <= left + title_w + 4) + 8
    block.title_x = left


def _place_labels(blocks: list[_Block], edges: list[_Edge], max_width: float) -> None:
    """Each labelled edge's ``label_box``: a row of its own under its source's line of
    blocks, beside its edge, never across another edge going down through the rows; when
    both sides are crossed, right of every such edge (the drawing widens: it scales down to
    its box, nothing is cut)."""
    # Right of the edge while that keeps within the blocks, else left, else right up to
    # max_width: a label widens the drawing only when it has to.
    widest = max((b.x + b.w for b in blocks), default=0.0)
    lines: dict[float, list[_Block]] = {}
    for block in blocks:
        lines.setdefault(block.exit_y, []).append(block)
    for line in lines.values():
        members = set(map(id, line))
        leaving = [e for e in edges if e.src.block is not None and id(e.src.block) in members]
        labelled = sorted((e for e in leaving if e.label and _goes_down(e)), key=_down_x)
        if not labelled:
            continue
        downs = [_down_x(e) for e in leaving if _goes_down(e)]
        top = max(b.y + b.h for b in line) + 3

        def clear(left: float, right: float, downs: list[float] = downs) -> bool:
            return left >= _MARGIN and not any(left - 2 <= x <= right + 2 for x in downs)

        for row, edge in enumerate(labelled):
            sx = _down_x(edge)
            width = _text_w(edge.label or "")
            right_side = (sx + _LABEL_GAP, sx + _LABEL_GAP + width)
            left_side = (sx - _LABEL_GAP - width, sx - _LABEL_GAP)
            if clear(*right_side) and right_side[1] <= widest:
                left, right = right_side
            elif clear(*left_side):
                left, right = left_side
            elif clear(*right_side) and right_side[1] <= max_width - _MARGIN:
                left, right = right_side
            elif clear(*right_side):
                left, right = right_side
            else:
                left = max(downs) + _LABEL_GAP
                right = left + width
            y = top + row * _LABEL_H
            edge.label_box = (left, y, right, y + _LABEL_H)

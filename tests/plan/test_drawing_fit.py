"""The stage graph fits its box and never cuts a label (issue 42, item 4): every text's
measured width lies inside its node, stage or the drawing, no edge crosses a stream label, and
the SVG scales down to its box (a viewBox, width:100%, max-width its natural width)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from samza_nb.api import KV, StreamApplication, Windows
from samza_nb.plan._text_width import text_width
from samza_nb.plan.drawing import FONT_SIZE, render_svg, svg_image
from samza_nb.plan.execution_plan import ExecutionPlan
from samza_nb.systems import EmbeddedSystem

SVG = "{http://www.w3.org/2000/svg}"
Box = tuple[float, float, float, float]


def one_stage(path: Path) -> ExecutionPlan:
    system = EmbeddedSystem("embedded", path=path / "log")
    app = StreamApplication("clicks", job_id="1")
    out = app.output(system.output("clean-clicks-with-a-long-name", partitions=4))
    app.input(system.input("raw-clicks", partitions=4)).filter(lambda v: True).map(
        lambda v: v
    ).send_to(out)
    return app.plan()


def two_stages(path: Path) -> ExecutionPlan:
    system = EmbeddedSystem("embedded", path=path / "log")
    app = StreamApplication("page-counts", job_id="1")
    out = app.output(system.output("counts", partitions=2))
    (
        app.input(system.input("page-views", partitions=4))
        .partition_by(lambda v: v["page"], lambda v: v, op_id="by-page")
        .window(Windows.keyed_tumbling(lambda kv: kv.key, timedelta(seconds=10)), op_id="count")
        .map(lambda pane: KV(pane.key.key, pane.message))
        .send_to(out)
    )
    return app.plan({"job.intermediate.stream.partitions": 32})


def three_stages(path: Path) -> ExecutionPlan:
    system = EmbeddedSystem("embedded", path=path / "log")
    app = StreamApplication("sessions", job_id="1")
    out = app.output(system.output("session-lengths", partitions=2))
    (
        app.input(system.input("page-views", partitions=4))
        .partition_by(lambda v: v["user"], lambda v: v, op_id="by-user")
        .window(Windows.keyed_tumbling(lambda kv: kv.key, timedelta(minutes=30)), op_id="sessions")
        .map(lambda pane: pane)
        .partition_by(lambda s: s, lambda s: s, op_id="by-length")
        .window(Windows.keyed_tumbling(lambda kv: kv.key, timedelta(minutes=10)), op_id="count")
        .map(lambda pane: KV(pane.key.key, pane.message))
        .send_to(out)
    )
    return app.plan()


PLANS = [one_stage, two_stages, three_stages]


def live_options(plan: ExecutionPlan) -> dict[str, Any]:
    """StageGraph's longest counters (20k everywhere, a backpressured operator)."""
    return {
        "stream_labels": {sid: "in 20.0k · out 20.0k · lag 20.0k" for sid in plan.streams},
        "operator_labels": {
            op_id: "in 20.0k · dropped 1.2k\n1.2k/s · lag 20.0k\nwm 12:00:00\nbackpressured"
            for op_id in plan.operators
        },
        "stage_labels": {s.id: "in 20.0k · out 20.0k · lag 20.0k · 1.2k/s" for s in plan.stages},
        "stage_sparklines": {s.id: [1.0, 3.0, 2.0] for s in plan.stages},
    }


def live_svg(plan: ExecutionPlan) -> str:
    """The drawing with StageGraph's longest counters."""
    return render_svg(plan, **live_options(plan))


def drawings(plan: ExecutionPlan) -> list[str]:
    return [render_svg(plan), live_svg(plan)]


def width(text: str, *, bold: bool = False) -> float:
    return text_width(text, FONT_SIZE, bold=bold)


def inside(inner: Box, outer: Box) -> bool:
    return (
        inner[0] >= outer[0] - 0.01
        and inner[1] >= outer[1] - 0.01
        and inner[2] <= outer[2] + 0.01
        and inner[3] <= outer[3] + 0.01
    )


def rect_box(g: ET.Element) -> Box:
    match = re.match(r"translate\(([-\d.]+),([-\d.]+)\)", g.get("transform", "0,0"))
    dx, dy = (float(match.group(1)), float(match.group(2))) if match else (0.0, 0.0)
    rect = g.find(f"{SVG}rect")
    assert rect is not None
    x, y = dx + float(rect.get("x", 0)), dy + float(rect.get("y", 0))
    return x, y, x + float(rect.get("width", 0)), y + float(rect.get("height", 0))


def label_boxes(root: ET.Element) -> list[Box]:
    """The boxes of the stream labels (between blocks)."""
    boxes = []
    for text in root.iter(f"{SVG}text"):
        if text.get("class") == "samza-stream-label":
            x, y = float(text.get("x", 0)), float(text.get("y", 0))
            assert text.get("text-anchor") is None
            boxes.append((x, y - 10, x + width(text.text or ""), y + 3))
    return boxes


def title_boxes(root: ET.Element) -> list[Box]:
    """The boxes of the stage titles (at the top of each stage box)."""
    boxes = []
    for g in root.iter(f"{SVG}g"):
        if "samza-stage" in g.get("class", "").split():
            text = g.find(f"{SVG}text")
            assert text is not None
            x, y = float(text.get("x", 0)), float(text.get("y", 0))
            boxes.append((x, y - 10, x + width(text.text or "", bold=True), y + 3))
    return boxes


def path_points(d: str) -> list[tuple[float, float]]:
    """Points every pixel or so along an SVG path made of M, H, V and C commands."""
    points: list[tuple[float, float]] = []
    x = y = 0.0
    for command, args in re.findall(r"([MHVC])([^MHVC]*)", d):
        numbers = [float(n) for n in re.findall(r"-?[\d.]+", args)]
        if command == "M":
            x, y = numbers
            points.append((x, y))
            continue
        if command in "HV":
            tx, ty = (numbers[0], y) if command == "H" else (x, numbers[0])
            steps = max(2, int(abs(tx - x) + abs(ty - y)))
            points += [
                (x + (tx - x) * i / steps, y + (ty - y) * i / steps) for i in range(steps + 1)
            ]
            x, y = tx, ty
            continue
        x1, y1, x2, y2, tx, ty = numbers
        for i in range(201):
            t = i / 200
            a, b, c, e = (1 - t) ** 3, 3 * (1 - t) ** 2 * t, 3 * (1 - t) * t**2, t**3
            points.append((a * x + b * x1 + c * x2 + e * tx, a * y + b * y1 + c * y2 + e * ty))
        x, y = tx, ty
    return points


@pytest.mark.parametrize("make", PLANS, ids=["1-stage", "2-stages", "3-stages"])
def test_the_svg_scales_down_to_its_box(make, tmp_path) -> None:
    for svg in drawings(make(tmp_path)):
        root = ET.fromstring(svg)
        view = [float(v) for v in root.get("viewBox", "").split()]
        assert len(view) == 4 and view[2] > 0 and view[3] > 0
        # No fixed size: as wide as its box, never wider than its natural width.
        assert root.get("width") is None and root.get("height") is None
        assert (
            root.get("style")
            == f"width:100%;max-width:{root.get('viewBox', '').split()[2]}px;height:auto"
        )
        # The snapshot image scales the same way.
        image = svg_image(svg)
        assert 'style="width:100%;max-width:' in image and "max-width:none" not in image


@pytest.mark.parametrize("make", PLANS, ids=["1-stage", "2-stages", "3-stages"])
def test_no_label_is_cut_or_leaves_its_container(make, tmp_path) -> None:
    plan = make(tmp_path)
    for svg in drawings(plan):
        root = ET.fromstring(svg)
        view = [float(v) for v in root.get("viewBox", "").split()]
        drawing: Box = (0.0, 0.0, view[2], view[3])
        assert "…" not in "".join(root.itertext())
        checked = 0
        for g in root.iter(f"{SVG}g"):
            classes = g.get("class", "").split()
            if "samza-node" in classes:
                box = rect_box(g)
                assert inside(box, drawing)
                for index, text in enumerate(g.findall(f"{SVG}text")):
                    half = width(text.text or "", bold=index == 0) / 2
                    centre = box[0] + float(text.get("x", 0))
                    assert text.get("text-anchor") == "middle"
                    assert box[0] + 4 <= centre - half and centre + half <= box[2] - 4, (
                        f"{text.text!r} ({2 * half:.0f} px) leaves its {box[2] - box[0]:.0f} px node"
                    )
                    checked += 1
            elif "samza-stage" in classes:
                box = rect_box(g)
                assert inside(box, drawing)
                title = g.find(f"{SVG}text")
                assert title is not None and title.text
                right = float(title.get("x", 0)) + width(title.text, bold=True)
                spark = g.find(f"{SVG}g")
                limit = box[2] - 4
                if spark is not None:
                    match = re.match(r"translate\(([-\d.]+),", spark.get("transform", ""))
                    assert match is not None
                    limit = float(match.group(1)) - 4
                assert right <= limit, f"stage title {title.text!r} passes {limit:.0f}"
                checked += 1
        labels = label_boxes(root)
        assert len(labels) == len(plan.intermediate_streams)
        assert all(inside(label, drawing) for label in labels)
        assert checked > len(plan.operators)


def assert_no_edge_crosses_a_label(svg: str) -> None:
    root = ET.fromstring(svg)
    labels = [*label_boxes(root), *title_boxes(root)]
    for path in root.iter(f"{SVG}path"):
        d = path.get("d", "")
        if path.get("marker-end") is None:
            continue
        for x, y in path_points(d):
            for left, top, right, bottom in labels:
                assert not (left < x < right and top < y < bottom), (
                    f"edge {d!r} crosses the label box {(left, top, right, bottom)}"
                )


@pytest.mark.parametrize("size", [20, 50, 100])
def test_edges_passing_lines_of_blocks_take_a_lane_clear_of_labels(size: int) -> None:
    """Generated plans: inputs and shuffles read several lines of blocks further down."""
    from .test_drawing import _generated

    plan = _generated(size)
    for svg in drawings(plan):
        assert_no_edge_crosses_a_label(svg)
        assert "…" not in svg


@pytest.mark.parametrize("make", PLANS, ids=["1-stage", "2-stages", "3-stages"])
def test_edges_do_not_cross_labels(make, tmp_path) -> None:
    for svg in drawings(make(tmp_path)):
        assert_no_edge_crosses_a_label(svg)
        root = ET.fromstring(svg)
        labels = label_boxes(root)
        nodes = [
            rect_box(g)
            for g in root.iter(f"{SVG}g")
            if {"samza-node", "samza-stage"} & set(g.get("class", "").split())
        ]
        for label in labels:
            # Labels lie in the gaps, clear of every node and stage box.
            assert not any(
                label[0] < n[2] and n[0] < label[2] and label[1] < n[3] and n[1] < label[3]
                for n in nodes
            )
        assert len(title_boxes(root)) == len(make(tmp_path).stages)
        # Nor through a node: edges start and end on a node's border.
        node_boxes = [
            rect_box(g) for g in root.iter(f"{SVG}g") if "samza-node" in g.get("class", "").split()
        ]
        for path in root.iter(f"{SVG}path"):
            if path.get("marker-end") is None:
                continue
            points = path_points(path.get("d", ""))
            for left, top, right, bottom in node_boxes:
                assert not any(
                    left + 1 < x < right - 1 and top + 1 < y < bottom - 1 for x, y in points
                ), f"edge {path.get('d')!r} runs through the node at {(left, top)}"


def test_live_labels_are_drawn_whole(tmp_path) -> None:
    """The texts issue 42 found cut are drawn in full."""
    plan = three_stages(tmp_path)
    text = "".join(ET.fromstring(live_svg(plan)).itertext())
    assert "stage 0 · 2 ops · in 20.0k · out 20.0k · lag 20.0k · 1.2k/s" in text
    assert "partition_by by-user → 4 partitions · in 20.0k · out 20.0k · lag 20.0k" in text

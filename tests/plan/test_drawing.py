"""Drawings: the SVG parses, shows every operator and stream, and lays out without overlaps."""

from __future__ import annotations

import json
import random
import re
import warnings
import xml.etree.ElementTree as ET
from datetime import timedelta

import pytest

from samza_nb.api import KV, LocalTable, MessageStream, StreamApplication, Windows
from samza_nb.errors import PlanError
from samza_nb.plan.drawing import render_html, render_svg, render_text
from samza_nb.plan.execution_plan import ExecutionPlan
from samza_nb.plan.unused import PlanWarning

from ._support import Streams

SVG = "{http://www.w3.org/2000/svg}"


def _page_views(streams: Streams) -> ExecutionPlan:
    app = StreamApplication("page-views")
    out = app.output(streams.output("output1"))
    table = app.table(LocalTable("profiles", side_inputs=(streams.input("input3"),)))
    (
        app.input(streams.input("input1"))
        .filter(lambda v: True)
        .partition_by(lambda v: v["page"], op_id="by-page")
        .join_table(table, lambda m, kv: m)
        .window(Windows.keyed_tumbling(lambda kv: kv.key, timedelta(seconds=10)), op_id="count")
        .map(lambda pane: KV(pane.key.key, pane.message))
        .send_to(out)
    )
    return app.plan({"job.intermediate.stream.partitions": 32})


def _generated(n: int, seed: int = 3) -> ExecutionPlan:
    rng = random.Random(seed)
    from samza_nb.systems import EmbeddedSystem

    system = EmbeddedSystem("embedded", path="/nonexistent-unused")
    app = StreamApplication("big")
    pool: list[MessageStream] = [app.input(system.input(f"in{i}", partitions=4)) for i in range(3)]
    out = app.output(system.output("out", partitions=4))
    shuffles = 0
    while len(app.operator_ids) < n:
        source = rng.choice(pool)
        roll = rng.random()
        if roll < 0.5:
            pool.append(source.map(lambda m: m))
        elif roll < 0.65:
            shuffles += 1
            pool.append(source.partition_by(lambda m: m, op_id=f"p{shuffles}"))
        elif roll < 0.75:
            shuffles += 1
            pool.append(source.broadcast(op_id=f"b{shuffles}"))
        elif roll < 0.85:
            pool.append(source.merge(rng.choice(pool)))
        else:
            source.send_to(out)
    with warnings.catch_warnings():
        # A random graph may leave one of its inputs unread; the drawing is what is tested.
        warnings.simplefilter("ignore", PlanWarning)
        return app.plan()


def _box(element: ET.Element) -> tuple[float, float, float, float]:
    match = re.match(r"translate\(([-\d.]+),([-\d.]+)\)", element.get("transform", ""))
    assert match is not None
    rect = element.find(f"{SVG}rect")
    assert rect is not None
    x, y = float(match.group(1)), float(match.group(2))
    return x, y, x + float(rect.get("width", 0)), y + float(rect.get("height", 0))


def _overlap(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def test_svg_parses_and_shows_every_operator_and_stream(streams: Streams) -> None:
    plan = _page_views(streams)
    root = ET.fromstring(render_svg(plan))
    assert root.tag == f"{SVG}svg"
    ops = {
        g.get("data-op") for g in root.iter(f"{SVG}g") if "samza-op" in g.get("class", "").split()
    }
    assert ops == set(plan.operators)
    drawn_streams = {g.get("data-stream") for g in root.iter(f"{SVG}g") if g.get("data-stream")}
    assert drawn_streams == set(plan.streams)
    stages = {
        g.get("data-stage") for g in root.iter(f"{SVG}g") if "samza-stage" in g.get("class", "")
    }
    assert stages == {str(stage.id) for stage in plan.stages}
    tables = {g.get("data-table") for g in root.iter(f"{SVG}g") if g.get("data-table")}
    assert tables == {"profiles"}
    text = "".join(root.itertext())
    assert "partition_by by-page → 32 partitions" in text
    assert "input1" in text and "output1" in text and "side input" in text


def test_operators_carry_their_stage(streams: Streams) -> None:
    plan = _page_views(streams)
    root = ET.fromstring(render_svg(plan))
    for g in root.iter(f"{SVG}g"):
        if "samza-op" in g.get("class", "").split():
            op_id = g.get("data-op")
            assert op_id is not None
            assert g.get("data-stage") == str(plan.stage_of(op_id).id)


def test_live_styles_and_labels(streams: Streams) -> None:
    plan = _page_views(streams)
    intermediate = next(iter(plan.intermediate_streams))
    svg = render_svg(
        plan,
        stream_styles={
            intermediate: "#ff0000",
            "input1": {"stroke": "#00ff00", "stroke-width": "3"},
        },
        stream_labels={intermediate: "1,024 msgs", "output1": "12 written"},
        operator_labels={"page-views-1-window-count": "3 panes"},
        stage_labels={0: "epoch 4"},
    )
    root = ET.fromstring(svg)
    edge = next(g for g in root.iter(f"{SVG}g") if g.get("data-stream") == intermediate)
    path = edge.find(f"{SVG}path")
    assert path is not None and path.get("stroke") == "#ff0000"
    text = "".join(root.itertext())
    assert "1,024 msgs" in text and "12 written" in text and "3 panes" in text and "epoch 4" in text
    with pytest.raises(PlanError, match="not an SVG attribute"):
        render_svg(plan, stream_styles={"input1": {"onload='x'": "1"}})


def test_special_characters_are_escaped(tmp_path) -> None:
    from samza_nb.systems import EmbeddedSystem

    app = StreamApplication("esc")
    app.input(EmbeddedSystem("sys", path=tmp_path).input("a_b-c", partitions=1)).sink(print)
    svg = render_svg(app.plan(), stream_labels={"a_b-c": "<&>\"'"})
    assert "<&>" not in svg
    ET.fromstring(svg)


@pytest.mark.filterwarnings("ignore::samza_nb.plan.planner.PlanWarning")
@pytest.mark.parametrize("size", [60, 120])
def test_large_plans_lay_out_without_overlaps(size: int) -> None:
    plan = _generated(size)
    assert len(plan.operators) >= size
    root = ET.fromstring(render_svg(plan))
    nodes = [_box(g) for g in root.iter(f"{SVG}g") if "samza-node" in g.get("class", "").split()]
    assert len(nodes) == len(plan.operators) + len(plan.inputs) + len(plan.outputs)
    for i, a in enumerate(nodes):
        for b in nodes[i + 1 :]:
            assert not _overlap(a, b)
    stage_boxes = []
    for g in root.iter(f"{SVG}g"):
        if "samza-stage" in g.get("class", "").split():
            rect = g.find(f"{SVG}rect")
            assert rect is not None
            x, y = float(rect.get("x", 0)), float(rect.get("y", 0))
            stage_boxes.append(
                (x, y, x + float(rect.get("width", 0)), y + float(rect.get("height", 0)))
            )
    for i, a in enumerate(stage_boxes):
        for b in stage_boxes[i + 1 :]:
            assert not _overlap(a, b)


def test_text_outline(streams: Streams) -> None:
    plan = _page_views(streams)
    text = repr(plan)
    assert text.startswith("ExecutionPlan 'page-views' (job 1): 2 stages, 8 operators")
    assert "inputs:" in text and "input1 [system1, 64 partitions]" in text
    assert "side inputs:" in text and "input3 [system1, 32 partitions]" in text
    assert "page-views-1-partition_by-by-page [system1, 32 partitions]" in text
    assert "stage 0: reads input1; writes page-views-1-partition_by-by-page" in text
    assert "partition_by-by-page ⇒ page-views-1-partition_by-by-page" in text
    assert "join-4 (⋈ table profiles) → window-count" in text
    assert "task.window.ms=10000" in text
    assert render_text(plan) == text


def test_html_and_app_display(streams: Streams) -> None:
    plan = _page_views(streams)
    html = plan._repr_html_()
    assert html == render_html(plan)
    assert "<svg" in html and "2 stages, 8 operators" in html
    assert plan._repr_svg_().startswith("<svg")
    app = StreamApplication("broken")
    app.input(streams.input("input1")).join(
        app.input(streams.input("input2")), lambda a, b: a, ttl=1, op_id="j"
    )
    assert "cannot plan: Unable to resolve input partitions" in app._repr_html_()
    assert app._repr_svg_() is None


def test_to_json_describes_the_plan(streams: Streams) -> None:
    plan = _page_views(streams)
    data = json.loads(plan.to_json())
    assert [op["op_id"] for op in data["operators"]] == plan.operator_ids
    window = next(op for op in data["operators"] if op["opcode"] == "window")
    assert window["window"]["default_trigger"] == {"type": "time", "duration_ms": 10000}
    streams_by_id = {s["stream_id"]: s for s in data["streams"]}
    assert streams_by_id["page-views-1-partition_by-by-page"]["producer_streams"] == ["input1"]
    assert streams_by_id["input3"]["kind"] == "side_input"
    assert data["tables"] == [
        {
            "table_id": "profiles",
            "key_serde": "json",
            "value_serde": "json",
            "side_inputs": ["input3"],
        }
    ]


def test_networkx_graph(streams: Streams) -> None:
    plan = _page_views(streams)
    graph = plan.graph
    assert graph.nodes["page-views-1-window-count"]["stage"] == 1
    assert graph.nodes["stream:input1"]["stream_kind"] == "input"
    intermediate = "stream:page-views-1-partition_by-by-page"
    assert graph.nodes[intermediate]["partitions"] == 32
    assert graph.has_edge("page-views-1-partition_by-by-page", intermediate)
    assert graph.has_edge(intermediate, "page-views-1-input-3")
    assert graph.has_edge("stream:input3", "table:profiles")
    assert graph.has_edge("table:profiles", "page-views-1-join-4")
    import networkx as nx

    assert nx.is_directed_acyclic_graph(graph)


# -- readable at a notebook cell's width (issue 18) ----------------------------------------------
CELL_WIDTH = 900


def _three_stages(tmp_path) -> ExecutionPlan:
    """Notebook 02's sessions app: two shuffles, three stages."""
    from samza_nb.systems import EmbeddedSystem

    system = EmbeddedSystem("embedded", path=tmp_path / "log")
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


def _fifty_operators(tmp_path) -> ExecutionPlan:
    """A 50-operator pipeline: long chains of maps with a shuffle every twelve operators."""
    from samza_nb.systems import EmbeddedSystem

    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    app = StreamApplication("fifty", job_id="1")
    stream = app.input(system.input("in", partitions=4))
    for i in range(47):
        if i % 12 == 11:
            stream = stream.partition_by(lambda m: m, lambda m: m, op_id=f"p{i}")
        else:
            stream = stream.map(lambda m: m)
    stream.send_to(app.output(system.output("out", partitions=4)))
    plan = app.plan()
    assert len(plan.operators) >= 50
    return plan


def _drawn_size(svg: str) -> tuple[float, float, float]:
    """Width and height the browser draws the SVG at, and its text size in px."""
    root = ET.fromstring(svg)
    view = [float(v) for v in root.get("viewBox", "").split()]
    style = root.get("style", "")
    # At its natural size: as wide as the box up to its viewBox width; zoomed: a fixed width.
    match = re.search(r"(?:max-width|^width):([\d.]+)px", style)
    assert match is not None, style
    width = float(match.group(1))
    scale = width / view[2]
    return width, view[3] * scale, float(root.get("font-size", 0)) * scale


@pytest.mark.parametrize("make", [_three_stages, _fifty_operators], ids=["3-stages", "50-ops"])
def test_plans_fit_a_notebook_cell_at_a_readable_text_size(make, tmp_path) -> None:
    plan = make(tmp_path)
    live = render_svg(
        plan,
        stream_labels={sid: "in 2.0k · out 2.0k · lag 0" for sid in plan.streams},
        operator_labels={op_id: "in 2.0k" for op_id in plan.operators},
        stage_labels={stage.id: "in 20k · out 20k · lag 0 · 1.2k/s" for stage in plan.stages},
    )
    for svg in (render_svg(plan), live):
        width, _height, font_px = _drawn_size(svg)
        assert width <= CELL_WIDTH, f"{width} px wide does not fit a {CELL_WIDTH} px cell"
        assert font_px >= 11
        root = ET.fromstring(svg)
        nodes = [_box(g) for g in root.iter(f"{SVG}g") if "samza-node" in g.get("class", "")]
        assert all(box[2] <= width for box in nodes)
        assert len(nodes) == len(plan.operators) + len(plan.inputs) + len(plan.outputs)
    # Stages are stacked top to bottom: each starts below the previous one.
    root = ET.fromstring(render_svg(plan))
    tops = [
        float(rect.get("y", 0))
        for g in root.iter(f"{SVG}g")
        if "samza-stage" in g.get("class", "").split()
        for rect in [g.find(f"{SVG}rect")]
        if rect is not None
    ]
    assert len(tops) == len(plan.stages) and tops == sorted(tops) and len(set(tops)) == len(tops)


def test_the_html_scrolls_in_a_box_at_the_drawing(tmp_path) -> None:
    plan = _fifty_operators(tmp_path)
    html = render_html(plan)
    box = re.search(r'<div class="samza-plan-scroll" style="([^"]*)">', html)
    assert box is not None
    assert "overflow:auto" in box.group(1) and "max-height:70vh" in box.group(1)
    assert "max-width:100%" in box.group(1)
    # Larger than the box: drawn bigger (zoom), never smaller than 11 px text.
    width, _height, font_px = _drawn_size(render_svg(plan, scale=1.5))
    assert width > CELL_WIDTH and font_px == 16.5
    with pytest.raises(PlanError, match="scale"):
        render_svg(plan, scale=0)


def test_colours_follow_the_jupyterlab_theme_with_fallbacks(tmp_path) -> None:
    svg = render_svg(_three_stages(tmp_path))
    root = ET.fromstring(svg)
    texts = list(root.iter(f"{SVG}text"))
    assert texts and all("var(--jp-" in (t.get("style") or "") for t in texts)
    # Each variable has a fallback, for files and exports without JupyterLab's CSS.
    assert all(
        re.fullmatch(r"var\(--jp-[a-z0-9-]+,#[0-9a-f]{6}\)", value)
        for value in re.findall(r"var\([^)]*\)", svg)
    )
    for g in root.iter(f"{SVG}g"):
        if "samza-node" in g.get("class", ""):
            rect = g.find(f"{SVG}rect")
            assert rect is not None and float(rect.get("fill-opacity", 1)) < 0.3  # a tint


def test_folded_stages_are_one_box(tmp_path) -> None:
    plan = _fifty_operators(tmp_path)
    folded = {stage.id for stage in plan.stages[1:3]}
    root = ET.fromstring(render_svg(plan, folded=folded, stage_labels={1: "in 7"}))
    ops = {g.get("data-op") for g in root.iter(f"{SVG}g") if g.get("data-op")}
    hidden = {op for stage in plan.stages if stage.id in folded for op in stage.operators}
    assert ops == set(plan.operators) - hidden
    boxes = [g for g in root.iter(f"{SVG}g") if "samza-stage-folded" in g.get("class", "")]
    assert sorted(g.get("data-stage") for g in boxes) == sorted(str(i) for i in folded)
    text = "".join(root.itertext())
    assert "13 operators (folded)" in text and "in 7" in text
    # The streams between folded and open stages are still drawn.
    drawn = {g.get("data-stream") for g in root.iter(f"{SVG}g") if g.get("data-stream")}
    assert drawn == set(plan.streams)

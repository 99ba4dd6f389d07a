"""notebooks/02-stages-and-shuffles.ipynb run live in JupyterLab (the harness: _lab.py): the
StageGraph's counters, the drawing at a readable size inside the cell with its own scrollbar,
scaled down in a narrow window, zoomed and folded, and the dark theme's tables readable after a
reload (the kernel and its widgets stay).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from ._lab import RENDER_TIMEOUT_S, Lab, check_live, open_copy

pytestmark = [pytest.mark.slow, pytest.mark.spark]


def _graph_geometry(cell: Any) -> dict[str, float]:
    """Sizes inside a StageGraph's output: the drawing, its text, its scroll box and the cell
    (empty while the widget swaps its drawing for a new one)."""
    return dict(
        cell.locator("svg.samza-plan").last.evaluate(
            """svg => {
                const box = svg.closest('.samza-plan-scroll');
                const text = svg.querySelector('g.samza-op text, g.samza-node text');
                const area = svg.closest('.jp-Cell');
                if (!box || !text || !area) return {};
                return {
                    svgWidth: svg.getBoundingClientRect().width,
                    fontPx: parseFloat(getComputedStyle(text).fontSize)
                        * svg.getBoundingClientRect().width / svg.viewBox.baseVal.width,
                    boxClient: box.clientWidth,
                    boxScroll: box.scrollWidth,
                    boxRight: box.getBoundingClientRect().right,
                    svgRight: svg.getBoundingClientRect().right,
                    areaRight: area.getBoundingClientRect().right,
                    areaWidth: area.getBoundingClientRect().width,
                };
            }"""
        )
    )



def test_02_stages_live_fold_zoom_and_dark_theme(browser: Any, lab: Lab) -> None:
    nb = open_copy(browser, lab, "02-stages-and-shuffles")
    nb.command("Run", "runmenu:run-all")
    nb.wait_idle()
    check_live(nb)
    nb.assert_no_traceback()
    # The live StageGraph (the one with counters): per-stage in/out/lag/rate.
    graph_cell = nb.cells().filter(has_text="sessions (job 1): finished").last
    text = graph_cell.inner_text()
    assert "rate" in text and "/s" in text
    # The drawing fits the cell at a readable size, inside its own scroll box.
    geometry = _graph_geometry(graph_cell)
    assert geometry["svgWidth"] <= geometry["areaWidth"], geometry
    assert geometry["fontPx"] >= 11, geometry
    # At 100% it fits its box: no nested scrollbar, nothing past the box's right edge.
    assert geometry["boxScroll"] <= geometry["boxClient"], geometry
    assert geometry["svgRight"] <= geometry["boxRight"] + 0.5, geometry
    # In a window narrower than the drawing it scales down to its box instead of overflowing.
    nb.page.set_viewport_size({"width": 640, "height": 1000})

    def fits() -> bool:
        sizes = _graph_geometry(graph_cell)
        return (
            bool(sizes)
            and sizes["boxScroll"] <= sizes["boxClient"]
            and sizes["svgRight"] <= sizes["boxRight"] + 0.5
            and sizes["svgWidth"] < geometry["svgWidth"]
        )

    nb.wait_until(fits, "the drawing scaling down to a narrow window", timeout=RENDER_TIMEOUT_S)
    graph_cell.scroll_into_view_if_needed()
    nb.shot("narrow")
    nb.page.set_viewport_size({"width": 1280, "height": 1000})
    # Zoom: larger than the cell, it scrolls in its box, whose right edge stays in the cell.
    graph_cell.locator("select").first.select_option(label="200%")

    def scrolls() -> bool:
        sizes = _graph_geometry(graph_cell)
        return bool(sizes) and sizes["boxScroll"] > sizes["boxClient"] + 50

    nb.wait_until(scrolls, "the zoomed drawing scrolling in its box", timeout=RENDER_TIMEOUT_S)
    zoomed = _graph_geometry(graph_cell)
    assert zoomed["fontPx"] == 22, zoomed
    assert zoomed["boxRight"] <= zoomed["areaRight"] + 1, zoomed
    graph_cell.locator("select").first.select_option(label="100%")
    # Fold a stage: it becomes one box.
    graph_cell.locator("button", has_text="stage 1").click()
    nb.wait_until(
        lambda: graph_cell.locator("g.samza-stage-folded").count() == 1,
        "stage 1 folding",
        timeout=RENDER_TIMEOUT_S,
    )
    assert "operators (folded)" in graph_cell.inner_text()
    nb.shot("live")

    # The dark theme: table headers and text stay readable (the page reloads; the kernel and
    # its widgets stay).
    lab.api(
        "PUT",
        "/lab/api/settings/@jupyterlab/apputils-extension:themes",
        {"raw": json.dumps({"theme": "JupyterLab Dark"})},
    )
    try:
        nb.save()
        nb.page.reload()
        nb.answer_kernel_dialog(kernel=True)
        nb.page.wait_for_selector(
            "body[data-jp-theme-light='false']", state="attached", timeout=60_000
        )
        nb.wait_until(
            lambda: nb.page.locator(".jupyter-widgets th").count() > 0,
            "the widgets after the reload",
            timeout=60,
        )
        nb.wait_widgets()
        contrast = nb.page.locator(".jupyter-widgets th").first.evaluate(
            """th => {
                const lum = c => {
                    const [r, g, b] = c.match(/\\d+/g).slice(0, 3).map(Number);
                    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
                };
                const s = getComputedStyle(th);
                return [lum(s.color), lum(s.backgroundColor)];
            }"""
        )
        text_lum, background_lum = contrast
        assert abs(text_lum - background_lum) > 100, contrast  # light text on a dark header
        nb.shot("dark")
    finally:
        lab.api(
            "PUT",
            "/lab/api/settings/@jupyterlab/apputils-extension:themes",
            {"raw": json.dumps({"theme": "JupyterLab Light"})},
        )
    assert not nb.widget_console_errors(), nb.widget_console_errors()
    nb.close()

"""The stage graph in a real browser (Chromium through Playwright, issue 42 item 4): in a
630 px output box the drawing scales down to the box (no horizontal scrollbar, nothing past
its right edge), and every text, drawn in the browser's own fonts, stays inside its node, its
stage box or the drawing and is no wider than the width the layout measured for it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from samza_nb.plan._text_width import text_width
from samza_nb.plan.drawing import FONT_SIZE, render_html

from .test_drawing_fit import PLANS, live_options

pytestmark = [pytest.mark.slow]

CHROMIUM = Path("/usr/bin/chromium")
SHOTS = Path(__file__).resolve().parents[2] / ".artifacts" / "browser"
BOX_PX = 630

_GEOMETRY = """() => {
    const box = document.querySelector('.samza-plan-scroll');
    const svg = box.querySelector('svg');
    const texts = [];
    for (const text of svg.querySelectorAll('text')) {
        const g = text.closest('g.samza-node, g.samza-stage');
        const rect = g ? g.querySelector('rect') : null;
        const spark = g ? g.querySelector('g.samza-sparkline') : null;
        const b = text.getBBox();
        texts.push({
            text: text.textContent,
            bold: text.getAttribute('font-weight') === '600',
            left: b.x, right: b.x + b.width, width: b.width,
            rectLeft: rect ? rect.x.baseVal.value : null,
            rectRight: rect ? rect.x.baseVal.value + rect.width.baseVal.value : null,
            sparkLeft: spark ? spark.transform.baseVal[0].matrix.e : null,
        });
    }
    const s = svg.getBoundingClientRect(), o = box.getBoundingClientRect();
    return {
        svgLeft: s.left, svgRight: s.right, boxLeft: o.left, boxRight: o.right,
        scrollWidth: box.scrollWidth, clientWidth: box.clientWidth,
        viewWidth: svg.viewBox.baseVal.width, texts: texts,
    };
}"""


@pytest.fixture(scope="module")
def page() -> Iterator[Any]:
    if not CHROMIUM.is_file():
        pytest.skip(f"missing {CHROMIUM}: run bash engine/install-browser-deps.sh")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
        )
        try:
            yield browser.new_page(viewport={"width": 1400, "height": 900})
        finally:
            browser.close()


@pytest.mark.parametrize("make", PLANS, ids=["1-stage", "2-stages", "3-stages"])
def test_the_graph_fits_a_630px_box_and_no_text_leaves_its_container(
    make: Any, page: Any, tmp_path: Path
) -> None:
    plan = make(tmp_path)
    html = render_html(plan, **live_options(plan))
    # JupyterLab's rule for drawings in outputs, and an output area 630 px wide.
    page.set_content(
        "<style>svg{max-width:100%}</style>"
        f'<div class="output" style="width:{BOX_PX}px">{html}</div>',
        wait_until="load",
    )
    geometry = page.evaluate(_GEOMETRY)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.locator(".output").screenshot(path=str(SHOTS / f"graph-fit-{plan.app_name}.png"))
    assert geometry["scrollWidth"] <= geometry["clientWidth"], geometry  # no horizontal scrollbar
    assert geometry["boxLeft"] - 0.5 <= geometry["svgLeft"], geometry
    assert geometry["svgRight"] <= geometry["boxRight"] + 0.5, geometry
    assert geometry["texts"]
    for text in geometry["texts"]:
        measured = text_width(text["text"], FONT_SIZE, bold=text["bold"])
        assert text["width"] <= measured + 0.5, f"{text} drawn wider than measured ({measured:.1f})"
        assert 0 <= text["left"] and text["right"] <= geometry["viewWidth"], text
        if text["rectLeft"] is not None:
            right = text["sparkLeft"] if text["sparkLeft"] is not None else text["rectRight"]
            assert text["rectLeft"] <= text["left"] and text["right"] <= right, text

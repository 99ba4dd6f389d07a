"""A notebook executed by papermill keeps its views: a plain, offline ``jupyter nbconvert --to
html`` of it shows every widget's final state, with no JavaScript and nothing from a CDN.

The mechanism (samza_nb/notebook/widgets/_live.py): a final view that a batch run displayed
and no frontend drew is re-published under its display id as its snapshot alone (text/html
and text/plain, no widget view), so the saved output is plain HTML. notebooks/03-drain.ipynb
is executed with small parameters (the run the other notebook tests share), exported with the ``jupyter nbconvert`` command, and the
HTML is checked: the StageGraph's drawing (an image of the SVG) shows the three stages, the
DrainStates table shows every SSP drained, and no output is a widget view that would need a
widget manager. The page is opened in headless Chromium with every host name unresolvable;
the drawings must load (they are data URIs). The screenshot is kept in ``.artifacts/``.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import nbformat
import pytest

from ._execution import ARTIFACTS

CHROMIUM = Path("/usr/bin/chromium")
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
SVG = "{http://www.w3.org/2000/svg}"
NOTEBOOK = "03-drain"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    # Offline: no host name resolves, so nothing can load from outside 127.0.0.1.
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]


def _drawing(img: object) -> ET.Element:
    src = str(img.get("src"))  # type: ignore[attr-defined]
    prefix = "data:image/svg+xml;base64,"
    assert src.startswith(prefix), src[:80]
    return ET.fromstring(base64.b64decode(src[len(prefix) :]))


def _export(executed: Path, out_dir: Path) -> Path:
    """``jupyter nbconvert --to html`` exactly as a user runs it (default template)."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "nbconvert",
            "--to",
            "html",
            "--output-dir",
            str(out_dir),
            str(executed),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return out_dir / f"{executed.stem}.html"


@pytest.mark.slow
@pytest.mark.spark
def test_drain_notebook_exports_offline_with_every_views_final_state(
    tmp_path: Path, executed_notebook: Callable[[str], Path]
) -> None:
    from bs4 import BeautifulSoup

    executed = executed_notebook(NOTEBOOK)
    notebook = nbformat.read(executed, as_version=4)
    outputs = [o for cell in notebook.cells for o in cell.get("outputs", [])]
    # Every view was frozen into its snapshot: no output needs a widget manager any more.
    views = [o for o in outputs if WIDGET_VIEW in o.get("data", {})]
    assert not views, [o["data"].get("text/plain", "")[:80] for o in views]

    html_path = _export(executed, tmp_path)
    html = html_path.read_text(encoding="utf-8")
    (ARTIFACTS / f"{NOTEBOOK}.html").write_text(html, encoding="utf-8")
    page = BeautifulSoup(html, "html.parser")
    assert not page.find_all("script", type=WIDGET_VIEW)

    # The StageGraph of the drained job (the last one in the notebook): three stages, final
    # counters, the drawing as an image that needs nothing but the page.
    images = page.select("img.samza-plan-image")
    assert images, "no drawing in the export"
    stage_graph = _drawing(images[-1])
    stages = {g.get("data-stage") for g in stage_graph.iter(f"{SVG}g") if g.get("data-stage")}
    assert {"0", "1", "2"} <= stages
    text = page.get_text(" ")
    assert "drainer (job 1): drained, epoch" in text
    # The DrainStates view: every task and SSP drained, and its summary at the final epoch.
    tables = [
        table
        for table in page.find_all("table")
        if "upstream drains" in [th.get_text() for th in table.find_all("th")]
    ]
    assert tables, "the DrainStates table is missing from the export"
    rows = [[td.get_text() for td in tr.find_all("td")] for tr in tables[-1].select("tbody tr")]
    assert rows and all(row[2] == "✓" for row in rows), rows
    assert "SSPs drained · job drained" in text

    # Opened offline in Chromium, the drawings load (data URIs) and are drawn full size.
    if not CHROMIUM.is_file():
        msg = f"{CHROMIUM} is missing: run bash engine/install-browser-deps.sh"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    from playwright.sync_api import sync_playwright

    screenshot = ARTIFACTS / f"{NOTEBOOK}.export.png"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page_ = browser.new_page(viewport={"width": 1100, "height": 900})
            page_.goto(html_path.as_uri())
            sizes = page_.eval_on_selector_all(
                "img.samza-plan-image", "els => els.map(e => [e.complete, e.naturalWidth])"
            )
            assert sizes and all(done and width > 0 for done, width in sizes), sizes
            page_.screenshot(path=str(screenshot), full_page=True)
        finally:
            browser.close()
    assert screenshot.stat().st_size > 10_000

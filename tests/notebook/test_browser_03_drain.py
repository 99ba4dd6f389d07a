"""notebooks/03-drain.ipynb run live in JupyterLab (the harness: _lab.py), in two halves around
a click on a DrainStates view's Drain button: the button drains the running job, then the
view's slider replays the drain from an epoch where nothing was drained yet.
"""

from __future__ import annotations

import re
import time
from typing import Any

import nbformat
import pytest

from ._lab import RENDER_TIMEOUT_S, Lab, check_live, markdown_before, open_copy

pytestmark = [pytest.mark.slow, pytest.mark.spark]


def _drain_by_button(notebook: Any) -> None:
    """Before the drain cell, a DrainStates view of the running job; the drain cell then only
    waits for the drain its button started."""
    index = next(
        i for i, cell in enumerate(notebook.cells) if "%samza drain job --wait" in cell.source
    )
    notebook.cells[index].source = "job.wait(timeout=120)\ndrain_view = ui\ndrain_view"
    notebook.cells.insert(
        index,
        nbformat.v4.new_code_cell(
            "from samza_nb.notebook.widgets import DrainStatesWidget\n\nui = DrainStatesWidget(job)\nui"
        ),
    )


def test_03_drain_button_and_slider_live(browser: Any, lab: Lab) -> None:
    nb = open_copy(browser, lab, "03-drain", edit=_drain_by_button)
    sources = [c.inner_text() for c in nb.cells().all()]
    drain_cell = next(i for i, s in enumerate(sources) if "drain_view = ui" in s)
    nb.select_cell(drain_cell)
    nb.command("Run", "notebook:run-all-above")
    nb.wait_idle(upto=sum(1 for s in sources[:drain_cell] if s.strip()) - markdown_before(nb, drain_cell))
    check_live(nb)
    view = nb.cells().nth(drain_cell - 1)
    assert "job running" in view.inner_text()
    started = time.monotonic()
    view.locator("button", has_text="Drain").click()
    nb.wait_until(
        lambda: "job drained" in view.inner_text(), "the drain the button started", timeout=120
    )
    drained_in = time.monotonic() - started
    assert view.locator("button", has_text="Drain").is_disabled()
    nb.select_cell(drain_cell)
    nb.command("Run", "notebook:run-all-below")
    nb.wait_idle()
    check_live(nb)
    nb.assert_no_traceback()
    # The slider replays the drain: its first epoch shows nothing drained yet.
    summary = view.locator(".widget-html-content").first
    final = summary.inner_text()
    assert re.search(r"after epoch \d+: (\d+) of \1 SSPs drained · job drained", final), final
    readout = view.locator(".widget-readout").first
    low = int(float(view.locator(".widget-slider").first.evaluate(
        "el => el.querySelector('.noUi-handle').getAttribute('aria-valuemin')"
    )))
    readout.click()
    readout.press("Control+a")
    readout.type(str(low))
    readout.press("Enter")
    nb.wait_until(
        lambda: f"replaying epoch {low} of" in summary.inner_text(),
        "the slider replaying an early epoch",
        timeout=RENDER_TIMEOUT_S,
    )
    assert re.search(r": 0 of \d+ SSPs drained", summary.inner_text()), summary.inner_text()
    nb.shot("live")
    print(f"03: the Drain button drained the job in {drained_in:.1f} s")
    nb.close()

"""Notebooks opened in JupyterLab without their kernel (the harness: _lab.py).

A notebook saved from JupyterLab with live StageGraph, DrainStates and GrouperExplorer views is
run, clicked, saved, closed and reopened: each view shows its fallback
(samza_nb/notebook/widgets/_fallback.py), no "Error displaying widget". Then the
papermill-executed copy of each notebook of notebooks/ (the run the other notebook tests share)
is opened without a kernel: every view must still show its final snapshot (views that survive,
samza_nb/notebook/widgets/_live.py).
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
import pytest

from ._lab import (
    NOTEBOOKS_BY_STEM,
    RENDER_TIMEOUT_S,
    Lab,
    Notebook,
    check_live,
    explorer_summary,
)

pytestmark = [pytest.mark.slow, pytest.mark.spark]

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


_VIEWS_CELLS = [
    "%load_ext samza_nb\n"
    "from samza_nb.api import StreamApplication\n"
    "from samza_nb.notebook.widgets import DrainStatesWidget, GrouperExplorer, StageGraph\n"
    "from samza_nb.systems import EmbeddedSystem\n"
    "from samza_nb.testing import run_local\n"
    "system = EmbeddedSystem('embedded', path={log!r})\n"
    "system.create_stream('numbers', 2)\n"
    "system.write('numbers', list(range(40)))\n"
    "system.end_stream('numbers')\n"
    "app = StreamApplication('survivor')\n"
    "out = app.output(system.output('out', partitions=2))\n"
    "app.input(system.input('numbers', partitions=2)).partition_by(\n"
    "    lambda n: n % 5, lambda n: n, op_id='by-rest'\n"
    ").send_to(out)\n"
    "job = run_local(app)",
    "StageGraph(job)",
    "DrainStatesWidget(job)",
    "explorer = GrouperExplorer(tasks=6, processors=3)\nexplorer",
]


def test_views_saved_from_jupyterlab_survive_a_reopen_without_their_kernel(
    browser: Any, lab: Lab
) -> None:
    """StageGraph, DrainStates and GrouperExplorer, drawn live, clicked, saved and reopened: a
    kernel no longer holds their models, so each shows its fallback (its last snapshot) where
    JupyterLab showed "Error displaying widget: model not found"."""
    data = Path(tempfile.mkdtemp(prefix="views-", dir=lab.data))
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell(source.replace("{log!r}", repr(str(data / "log"))))
        for source in _VIEWS_CELLS
    ]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nbformat.write(notebook, lab.root / "views.ipynb")

    nb = Notebook(browser, lab, "views.ipynb")
    nb.command("Run", "runmenu:run-all")
    nb.wait_idle()
    check_live(nb)
    nb.assert_no_traceback()
    widgets = nb.page.locator(".jp-OutputArea-output > .jupyter-widgets")
    assert widgets.count() == 3
    # Live, each view shows once: the fallbacks are hidden while their widgets are drawn.
    fallbacks = nb.page.locator(".samza-nb-fallback")
    assert fallbacks.count() == 3
    assert not any(fallbacks.nth(i).is_visible() for i in range(3))
    # A click changes the explorer; its fallback follows.
    explorer = nb.cells().nth(3)
    explorer.locator("button", has_text="Add processor").click()
    nb.wait_until(
        lambda: "over 4 processors" in explorer_summary(explorer),
        "the explorer adding a processor",
        timeout=RENDER_TIMEOUT_S,
    )
    nb.wait_until(
        lambda: "over 4 processors" in fallbacks.nth(2).inner_html(),
        "the explorer's fallback following the click",
        timeout=RENDER_TIMEOUT_S,
    )
    nb.save()
    nb.close()
    lab.shutdown_kernels()

    reopened = Notebook(browser, lab, "views.ipynb", kernel=False)
    time.sleep(3)  # give the widget manager time to give up on the models
    assert not reopened.widget_errors(), reopened.widget_errors()
    shown = reopened.page.locator(".samza-nb-fallback")
    assert shown.count() == 3
    assert all(shown.nth(i).is_visible() for i in range(3))
    texts = [shown.nth(i).inner_text() for i in range(3)]
    assert "survivor (job 1)" in texts[0], texts[0]
    assert shown.nth(0).locator("img, svg").count() > 0  # the drawing
    assert "SSP" in texts[1], texts[1]
    assert "over 4 processors" in texts[2], texts[2]
    reopened.shot("reopened")
    reopened.close()


# In the reverse of test_notebooks.py's order: when both files run at once on two workers, each
# executes about half of the notebooks and finds the other half done, instead of one waiting
# for every notebook the other is executing.
@pytest.mark.parametrize("stem", sorted(NOTEBOOKS_BY_STEM, reverse=True))
def test_papermill_output_opened_without_a_kernel_shows_every_view(
    browser: Any, lab: Lab, stem: str, executed_notebook: Callable[[str], Path]
) -> None:
    executed = executed_notebook(stem)
    saved = lab.root / "saved"
    saved.mkdir(exist_ok=True)
    shutil.copyfile(executed, saved / executed.name)
    notebook = nbformat.read(executed, as_version=4)
    snapshots = [
        output["data"]["text/plain"].splitlines()[0]
        for cell in notebook.cells
        for output in cell.get("outputs", [])
        if "text/html" in output.get("data", {})
        and output["data"].get("text/plain", "").startswith(
            ("StageGraph", "RunProgress", "DrainStates", "GrouperExplorer")
        )
    ]
    # The kernel the copy names (papermill's) is not known to this server: JupyterLab either
    # asks (the test answers "No Kernel") or starts its default kernel, a fresh one. Either
    # way no kernel holds the widgets' models: only what the file saved can be shown.
    nb = Notebook(browser, lab, f"saved/{executed.name}", kernel=False)
    outputs = [output for cell in notebook.cells for output in cell.get("outputs", [])]
    if any(WIDGET_VIEW in output.get("data", {}) for output in outputs):
        # Give the widget manager time to complain about the views it was asked to draw (a file
        # without widget views asks it for nothing, so there is nothing to wait for).
        time.sleep(3)
    assert not nb.widget_errors(), nb.widget_errors()
    text = nb.text()
    for line in snapshots:
        # Each view's snapshot heading (what its text/html starts with) is on the page.
        head = line.split(":")[0].split("(")[0].strip()
        assert head, line
    if stem == "03-drain":
        assert "SSPs drained · job drained" in text
        assert re.search(r"drainer \(job 1\): drained, epoch \d+", text)
    if stem == "01-quickstart":
        assert "input messages read (100%)" in text
    if stem == "02-stages-and-shuffles":
        assert "sessions (job 1): finished" in text
    nb.shot("saved")
    assert not nb.widget_console_errors(), nb.widget_console_errors()
    nb.close()

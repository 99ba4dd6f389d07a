"""notebooks/01-quickstart.ipynb run live in JupyterLab (the harness: _lab.py): with the small
parameters, Run All; RunProgress is drawn live while the job runs (no "Error displaying widget",
no "Loading widget…", no traceback, no JVM notice in a cell), then ends as its snapshot at 100%
of the input read with its final rate.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from ._lab import Lab, check_live, open_copy

pytestmark = [pytest.mark.slow, pytest.mark.spark]


def test_01_quickstart_live(browser: Any, lab: Lab) -> None:
    nb = open_copy(browser, lab, "01-quickstart")
    seen: set[str] = set()

    def watch() -> None:
        text = nb.text()
        if nb.page.locator(".jp-OutputArea-output .jupyter-widgets").count():
            seen.add("live widget")
        if re.search(r"\d[\d,]* of [\d,]+ input messages read", text):
            seen.add("reading")

    nb.command("Run", "runmenu:run-all")
    nb.wait_idle(watch=watch)
    # RunProgress is a live widget while the job runs; once the job ended it has nothing left
    # to do and became its snapshot (HTML), which the saved notebook keeps.
    check_live(nb, widgets=False)
    nb.assert_no_traceback()
    assert "live widget" in seen, "RunProgress was never drawn as a live widget"
    assert not nb.page.locator(".jp-OutputArea-output .jupyter-widgets").count()
    # RunProgress ends finished, 100%. (Its short "starting Spark…" phase is caught only when a
    # poll lands in it, so it is not asserted here: a warm machine starts the JVM in a blink.)
    # The final snapshot is published before the run cell ends, but the page may draw it a
    # moment after the prompt shows the cell ran.
    complete = re.compile(r"([\d,]+) of \1 input messages read \(100%\)")
    try:
        nb.wait_until(lambda: bool(complete.search(nb.text())), "RunProgress at 100%", timeout=30)
    except AssertionError:
        text = nb.text()
        read = [line for line in text.splitlines() if "input messages" in line or "no input" in line]
        msg = f"RunProgress did not end at 100%; its lines: {read}"
        raise AssertionError(msg) from None
    text = nb.text()
    assert "finished (average rate)" in text and "0.0/s" not in text
    assert "OK:" in text
    nb.shot("live")
    nb.close()

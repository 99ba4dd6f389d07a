"""notebooks/04-groupers-and-host-affinity.ipynb run live in JupyterLab (the harness: _lab.py):
the grouper explorer's grouper, kill, add and Apply, without a job and on a running one.
"""

from __future__ import annotations

from typing import Any

import pytest

from ._lab import (
    RENDER_TIMEOUT_S,
    Lab,
    cell_index,
    check_live,
    explorer_summary,
    markdown_before,
    open_copy,
)

pytestmark = [pytest.mark.slow, pytest.mark.spark]


def test_04_groupers_explorer_live(browser: Any, lab: Lab) -> None:
    """The grouper explorer as a person uses it: without a job (change grouper, kill, add;
    Apply off), on the running job (the count grouper's containers land on live processors, so
    Apply stays on; add a processor, Apply, the job regroups), then the rest of the notebook and
    Apply off on the finished job."""
    nb = open_copy(browser, lab, "04-groupers-and-host-affinity")
    finish = cell_index(nb, 'system.write("page-views", views[half:])')
    nb.select_cell(finish)
    nb.command("Run", "notebook:run-all-above")
    nb.wait_idle(upto=finish - markdown_before(nb, finish))
    check_live(nb)
    nb.assert_no_traceback()

    # Without a job: the notebook killed "1"; the kill list holds the live processors.
    alone = nb.cells().nth(cell_index(nb, "explorer = GrouperExplorer(tasks=6"))
    assert explorer_summary(alone).startswith("host-affinity over 2 processors: 2 of 6 tasks move")
    kill_list = alone.locator("select").nth(1)
    assert kill_list.evaluate("s => [...s.options].map(o => o.text)") == ["0", "2"]
    assert kill_list.input_value() == "0"
    alone.locator("select").first.select_option(label="group-by-container-count")
    nb.wait_until(
        lambda: explorer_summary(alone).startswith("group-by-container-count over 2 processors"),
        "the explorer regrouping with another grouper",
        timeout=RENDER_TIMEOUT_S,
    )
    alone.locator("button", has_text="Add processor").click()
    nb.wait_until(
        lambda: "over 3 processors" in explorer_summary(alone),
        "the explorer adding a processor",
        timeout=RENDER_TIMEOUT_S,
    )
    assert "added processor 3 at host-3 (draft only until Apply)" in alone.inner_text()
    assert alone.locator("button", has_text="Apply").is_disabled()

    # On the running job (processors 0 and 2 after the notebook's kill).
    live = nb.cells().nth(cell_index(nb, "GrouperExplorer(job)"))
    assert "job runs" not in live.inner_text()
    apply = live.locator("button", has_text="Apply")
    live.locator("select").first.select_option(label="group-by-container-count")
    # Count groupers name containers 0 … N-1: container 1 goes to processor 2, a live one.
    nb.wait_until(
        lambda: explorer_summary(live).startswith("group-by-container-count over 2 processors"),
        "the running job's explorer regrouping with the count grouper",
        timeout=RENDER_TIMEOUT_S,
    )
    assert "not live processors" not in live.inner_text()
    assert not apply.is_disabled()
    live.locator("select").first.select_option(label="host-affinity")
    live.locator("button", has_text="Add processor").click()
    nb.wait_until(lambda: not apply.is_disabled(), "Apply on", timeout=RENDER_TIMEOUT_S)
    apply.click()
    nb.wait_until(
        lambda: "applied: the job runs 3 processors" in live.inner_text(),
        "the job regrouping to the proposal",
        timeout=60,
    )
    nb.shot("applied")

    # The rest of the notebook: the job finishes with the same result as an undisturbed run.
    nb.select_cell(finish)
    nb.command("Run", "notebook:run-all-below")
    nb.wait_idle()
    check_live(nb)
    nb.assert_no_traceback()
    assert "pages equal in both runs" in nb.text()
    nb.wait_until(
        lambda: "Apply is off: the job has finished" in live.inner_text(),
        "Apply off once the job finished",
        timeout=RENDER_TIMEOUT_S,
    )
    assert apply.is_disabled()
    nb.shot("live")
    nb.close()

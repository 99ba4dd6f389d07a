"""A live view displayed where a person works has a fallback output just before it: its
snapshot, kept current, that JupyterLab shows when no kernel holds the view's model
(samza_nb/notebook/widgets/_fallback.py). The browser check is in test_browser_saved.py."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

_CELLS = """
from samza_nb.api import StreamApplication
from samza_nb.notebook.widgets import GrouperExplorer, StageGraph
from samza_nb.systems import EmbeddedSystem

system = EmbeddedSystem("embedded", path={log!r})
app = StreamApplication("fallback")
out = app.output(system.output("out", partitions=2))
app.input(system.input("numbers", partitions=2)).partition_by(
    lambda n: n, lambda n: n, op_id="by-number"
).send_to(out)
graph = StageGraph(app.plan())
explorer = GrouperExplorer(tasks=6, processors=3)
display(graph)
display(explorer)
"""


def _kernel_messages(code: str, later: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The iopub messages of two cells run in a fresh kernel, as JupyterLab sends them
    (execute requests that accept input), the second 2.5 s after the first."""
    from jupyter_client.manager import KernelManager

    manager = KernelManager(kernel_name="python3")
    manager.start_kernel()
    client = manager.client()
    first: list[dict[str, Any]] = []
    second: list[dict[str, Any]] = []
    try:
        client.start_channels()
        client.wait_for_ready(timeout=60)
        reply = client.execute_interactive(code, timeout=120, output_hook=first.append, allow_stdin=True)
        assert reply["content"]["status"] == "ok", first
        reply = client.execute_interactive(later, timeout=60, output_hook=second.append, allow_stdin=True)
        assert reply["content"]["status"] == "ok", second
        time.sleep(2.5)
        # The fallback updates of the second cell's change come from a timer thread.
        while True:
            try:
                second.append(client.get_iopub_msg(timeout=1))
            except Exception:  # queue.Empty: nothing more
                break
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    return first, second


def _html(message: dict[str, Any]) -> str:
    return str(message["content"].get("data", {}).get("text/html", ""))


def test_each_live_view_has_a_fallback_before_it_that_follows_its_changes(tmp_path: Path) -> None:
    first, second = _kernel_messages(
        _CELLS.format(log=str(tmp_path / "log")),
        "explorer.add('host-9')",
    )
    displays = [m for m in first if m["msg_type"] == "display_data"]
    kinds = [
        "widget" if "application/vnd.jupyter.widget-view+json" in m["content"]["data"]
        else "fallback" if "samza-nb-fallback" in _html(m)
        else "other"
        for m in displays
    ]
    assert kinds == ["fallback", "widget", "fallback", "widget"], kinds
    graph_fallback, explorer_fallback = displays[0], displays[2]
    assert "StageGraph" in graph_fallback["content"]["data"]["text/plain"]
    assert "<svg" in _html(graph_fallback) or "<img" in _html(graph_fallback)
    assert ":has(" in _html(graph_fallback)  # the rules that swap it for an undrawn widget
    explorer_id = explorer_fallback["content"]["transient"]["display_id"]
    # A change made to the view (here through its API, as a click does) reaches its fallback.
    updates = [
        m for m in second
        if m["msg_type"] == "update_display_data"
        and m["content"]["transient"]["display_id"] == explorer_id
    ]
    assert updates, [m["msg_type"] for m in second]
    assert "host-9" in _html(updates[-1])

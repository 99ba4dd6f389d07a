"""Feedback at once for a wait: ``run(app, background=True)`` in a cell shows a status line
while Spark starts (samza_nb/notebook/status_line.py, registered by ``%load_ext samza_nb``)."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

import pytest

_SETUP = """
%load_ext samza_nb
from samza_nb import StreamApplication, run
from samza_nb.systems import EmbeddedSystem
system = EmbeddedSystem("embedded", path={log!r})
system.create_stream("numbers", 1)
system.write("numbers", [1, 2, 3])
system.end_stream("numbers")
app = StreamApplication("waiting")
out = app.output(system.output("out", partitions=1))
app.input(system.input("numbers", partitions=1)).map(lambda n: n + 1).send_to(out)
"""
_RUN = 'job = run(app, {"spark.master": "local[1]"}, background=True)\njob.wait(timeout=120)'


@pytest.mark.slow
@pytest.mark.spark
def test_a_cell_that_starts_spark_shows_a_status_line_first(tmp_path: Path) -> None:
    from jupyter_client.manager import KernelManager

    manager = KernelManager(kernel_name="python3")
    manager.start_kernel(env={"SPARK_LOCAL_IP": "127.0.0.1", **os.environ})
    client = manager.client()
    messages: list[tuple[float, dict[str, Any]]] = []
    try:
        client.start_channels()
        client.wait_for_ready(timeout=60)
        setup = client.execute_interactive(_SETUP.format(log=str(tmp_path / "log")), timeout=60)
        assert setup["content"]["status"] == "ok"
        began = time.monotonic()
        reply = client.execute_interactive(
            _RUN, timeout=180, output_hook=lambda m: messages.append((time.monotonic() - began, m))
        )
        assert reply["content"]["status"] == "ok", [m for _, m in messages]
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    kinds = ("display_data", "update_display_data", "stream")
    shown = [(at, m) for at, m in messages if m["msg_type"] in kinds]
    first_at, first = shown[0]
    assert first["msg_type"] == "display_data"
    assert first["content"]["data"]["text/plain"].startswith("starting Spark on local[1]")
    final = [
        m["content"]["data"]["text/plain"]
        for _, m in shown
        if m["msg_type"] == "update_display_data"
        and m["content"]["transient"]["display_id"] == first["content"]["transient"]["display_id"]
    ]
    assert final and final[-1].startswith("Spark started on local[1] in ")
    # Meanwhile the seconds pass on the line (a JVM takes seconds to start).
    assert any(re.search(r"… \d+ s$", text) for text in final[:-1]), final
    print(f"status line after {first_at:.2f} s; Spark ready after {float(final[-1].split()[-2]):.1f} s")

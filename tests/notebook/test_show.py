"""``%samza show`` (a live ShowView of ``job.show``) and RunProgress's sparkline, on the
in-process executor."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from samza_nb.api import StreamApplication
from samza_nb.notebook.magics import SamzaMagics, Session
from samza_nb.notebook.widgets import RunProgress, ShowView
from samza_nb.systems import EmbeddedSystem
from samza_nb.testing import run_local


def _app(system: EmbeddedSystem) -> StreamApplication:
    app = StreamApplication("showing")
    out = app.output(system.output("doubled", partitions=2))
    app.input(system.input("numbers", partitions=2)).map(lambda n: n * 2).send_to(out)
    return app


@pytest.fixture
def system(tmp_path: Path) -> EmbeddedSystem:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream("numbers", 2)
    system.write("numbers", list(range(30)))
    return system


@pytest.fixture(scope="module")
def shell() -> InteractiveShell:
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "samza_nb")
    return shell


@pytest.fixture
def magics(shell: InteractiveShell) -> Iterator[SamzaMagics]:
    magics = shell.magics_manager.registry["SamzaMagics"]
    assert isinstance(magics, SamzaMagics)
    magics.session = Session(shell)
    before = set(shell.user_ns)
    yield magics
    magics.short_errors = None
    for name in set(shell.user_ns) - before:
        del shell.user_ns[name]


def test_samza_show_is_a_live_view_of_job_show(
    shell: InteractiveShell, magics: SamzaMagics, system: EmbeddedSystem
) -> None:
    system.end_stream("numbers")
    shell.push({"j": run_local(_app(system))})
    view = shell.run_line_magic("samza", "show doubled -n 3 --job j")
    assert isinstance(view, ShowView) and not view.auto_refreshing  # the job is done
    assert "showing: latest messages of doubled · finished" in view.heading.value
    assert "latest 3 messages of output stream doubled" in view.view.value
    assert len(view.shown.rows) == 3  # type: ignore[union-attr]
    assert {row["value"] % 2 for row in view.shown.rows} == {0}  # type: ignore[union-attr]
    glance = shell.run_line_magic("samza", "show --job j")
    assert "samza-lag-heatmap" in glance.view.value
    assert glance.snapshot_text().startswith("showing · finished")
    assert "JobStatus(state='finished'" in glance.snapshot_text()
    shown = view.snapshot_text().splitlines()  # the table as text: caption, header, 3 rows
    assert shown[1] == "latest 3 messages of output stream doubled" and shown[2].split() == ["partition", "offset", "key", "value"]
    assert len(shown) == 6
    magics.short_errors = True
    with pytest.raises(UsageError, match="^%samza show: 'nope' is neither a stream nor an operator"):
        shell.run_line_magic("samza", "show nope --job j")
    with pytest.raises(UsageError, match="no job yet"):
        shell.run_line_magic("samza", "show doubled")


def test_run_progress_draws_a_sparkline_of_the_rate_while_the_job_runs(system: EmbeddedSystem) -> None:
    job = run_local(_app(system), until="forever", background=True)
    try:
        progress = RunProgress(job, auto_refresh=False, clock=itertools.count(0.0, 1.0).__next__)
        for batch in range(4):
            read = progress.messages_in
            system.write("numbers", list(range(10)))
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                progress.refresh()
                if progress.messages_in >= read + 10 or batch == 0 and progress.messages_in >= 40:
                    break
                time.sleep(0.02)
        deadline = time.monotonic() + 30
        while progress.messages_in < 70 and time.monotonic() < deadline:
            time.sleep(0.02)
            progress.refresh()
        assert progress.messages_in == 70  # the 30 written first and the four batches of 10
        assert any(rate > 0 for rate in progress.rates), progress.rates
        assert len(progress.rates) >= 2
        assert 'class="samza-sparkline"' in progress.counters.value
        assert progress.spark_ui is None  # the in-process executor has no UI
    finally:
        job.stop()


def test_the_stage_graph_labels_operators_with_what_they_dropped_and_skipped(tmp_path: Path) -> None:
    from samza_nb.notebook.widgets import StageGraph

    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream("numbers", 1)
    system.write("numbers", list(range(20)))
    system.end_stream("numbers")
    app = StreamApplication("dropping")
    out = app.output(system.output("out", partitions=1))
    (
        app.input(system.input("numbers", partitions=1))
        .map(lambda n: n if n % 2 else None)
        .map(lambda n: 1 // (n % 5))
        .send_to(out)
    )
    job = run_local(app, {"task.errors.skip": "true"})
    svg = StageGraph(job).graph.value
    # Odd numbers pass (10); of those, 5 and 15 divide by zero and are skipped.
    assert "in 20 · dropped 10" in svg and "in 10 · skipped 2" in svg

"""The notebook widgets, driven without a browser: set values, click buttons, call refresh()."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

from samza_nb.api import StreamApplication
from samza_nb.errors import ConfigError
from samza_nb.grouping import (
    GrouperMetadata,
    HostAffinityGrouper,
    check_standby_invariants,
    moved_tasks,
    task_assignment,
)
from samza_nb.job import Job, run
from samza_nb.model import JobModel, TaskMode, TaskModel
from samza_nb.notebook.widgets import DrainStatesWidget, GrouperExplorer, RunProgress, StageGraph
from samza_nb.notebook.widgets._html import rate as format_rate
from samza_nb.notebook.widgets._operator_load import format_watermark
from samza_nb.notebook.widgets.drain_states import DRAINED_COLOUR
from samza_nb.notebook.widgets.grouper_explorer import tasks_of_plan
from samza_nb.systems import EmbeddedSystem

SECRET = "hunter2-do-not-show"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def shuffle_app(system: EmbeddedSystem, name: str) -> StreamApplication:
    """events (2 partitions) → map → partition_by(user) → send_to(out): two stages."""
    app = StreamApplication(name)
    out = app.output(system.output("out", partitions=2))
    (
        app.input(system.input("events", partitions=2))
        .map(lambda e: {**e, "seen": True})
        .partition_by(lambda e: e["user"], lambda e: e, op_id="by-user")
        .map(lambda kv: kv.value)
        .send_to(out)
    )
    return app


def events(start: int, count: int) -> list[dict[str, Any]]:
    return [{"user": f"u{i % 5}", "i": i} for i in range(start, start + count)]


def host_affinity_moves(current: JobModel, live: dict[str, str]) -> list[Any]:
    """What HostAffinityGrouper moves when only ``live`` processors remain (the oracle)."""
    tasks = list(current.active_tasks().values())
    after = HostAffinityGrouper().group(tasks, GrouperMetadata.from_job_model(current, live))
    return moved_tasks(current, after)


# -- the grouper explorer, pure grouping ----------------------------------------------------------
@pytest.mark.parametrize("killed", ["0", "1", "2", "3"])
def test_kill_in_the_explorer_reports_exactly_the_host_affinity_moves(killed: str) -> None:
    explorer = GrouperExplorer(tasks=10, processors=4, locations=["a", "a", "b", "b"])
    current = explorer.current
    explorer.kill_choice.value = killed
    explorer.kill_button.click()

    live = {
        pid: loc for pid, loc in {"0": "a", "1": "a", "2": "b", "3": "b"}.items() if pid != killed
    }
    expected = host_affinity_moves(current, live)
    assert explorer.moves == expected
    assert {move.before for move in expected} == {killed}  # only the killed processor's tasks
    assert explorer.lower_bound == len(expected)
    assert explorer.balance.is_balanced and set(explorer.balance.counts) == set(live)
    assert explorer.current is current  # Kill only edits the draft
    assert explorer.kill_choice.options == tuple(sorted(live))
    assert explorer.processors.value == 3
    assert explorer.apply_button.disabled  # no job to apply to
    html = explorer.snapshot_html()
    for move in expected:
        assert move.task in explorer.moves_table.value and move.task in html
    assert f"{killed} (killed)" in explorer.model_table.value


def test_add_resize_and_reset_edit_the_draft_only() -> None:
    explorer = GrouperExplorer(tasks=9, processors=3, locations="rack-1")
    current = explorer.current
    explorer.new_location.value = "rack-2"
    explorer.add_button.click()
    assert explorer.draft == {"0": "rack-1", "1": "rack-1", "2": "rack-1", "3": "rack-2"}
    expected = host_affinity_moves(current, explorer.draft)
    assert explorer.moves == expected and len(expected) == 2  # the new one takes ⌊9/4⌋ tasks
    assert {move.after for move in expected} == {"3"}

    explorer.processors.value = 2  # shrinking kills the highest ids
    assert list(explorer.draft) == ["0", "1"]
    assert explorer.locations.value == "rack-1, rack-1"
    # Processor 3 was added and killed again in the draft: only processor 2 is gone.
    assert explorer.moves == host_affinity_moves(current, {"0": "rack-1", "1": "rack-1"})
    explorer.reset_button.click()
    assert explorer.draft == {"0": "rack-1", "1": "rack-1", "2": "rack-1"}
    assert explorer.moves == [] and explorer.current is current


def test_locations_are_positional_and_cycle() -> None:
    explorer = GrouperExplorer(tasks=6, processors=4)
    assert explorer.locations.value == "host-0, host-1, host-2, host-3"
    explorer.locations.value = "a, b"
    assert explorer.draft == {"0": "a", "1": "b", "2": "a", "3": "b"}
    assert [c.location_id for c in explorer.proposal.containers.values()] == ["a", "b", "a", "b"]
    explorer.locations.value = " , "
    assert "at least one location" in explorer.message.value
    assert explorer.locations.value == "a, b, a, b"  # the text shows the draft again


def test_standby_placement_and_invariant_checks() -> None:
    explorer = GrouperExplorer(tasks=6, processors=3, locations=["a", "a", "b"])
    explorer.replication_factor.value = 2
    proposal = explorer.proposal
    assert explorer.error is None and explorer.violations == []
    assert len(proposal.standby_tasks()) == 6
    assert check_standby_invariants(proposal, explorer.draft, replication_factor=2) == []
    assert "✓ every standby invariant holds" in explorer.checks.value
    assert "standby placement" in explorer.standby_table.value

    explorer.replication_factor.value = 3  # three copies cannot sit on two locations
    assert explorer.proposal is None and "needs 3 distinct locations" in explorer.error
    assert "cannot group" in explorer.summary.value
    # In the explorer's words, shown once: no function or parameter names, the checkbox to
    # untick instead, and no note about what Apply would do.
    shown = explorer.snapshot_html()
    assert shown.count("needs 3 distinct locations") == 1, shown
    for internal in ("assign_with_standbys", "check_location", "job.standbytasks"):
        assert internal not in shown
    assert "untick “standbys on other locations”" in explorer.error
    assert "lower the replication factor" in explorer.error
    assert explorer.apply_note.value == ""
    explorer.check_location.value = False  # distinct processors are enough then
    assert explorer.error is None and explorer.violations == []
    assert len(explorer.proposal.standby_tasks()) == 12

    explorer.grouper.value = "group-by-container-count"  # Samza's YARN standby containers
    containers = explorer.proposal.containers
    assert {"0-0", "0-1", "1-0", "2-1"} <= set(containers)
    assert explorer.violations == [] and explorer.balance.is_balanced


def test_count_grouper_after_a_kill_puts_its_containers_on_live_processors() -> None:
    explorer = GrouperExplorer(tasks=6, processors=3, grouper="group-by-container-count")
    explorer.kill("1")
    # Its containers are "0" and "1"; "1" is gone, so that container goes to processor 2.
    assert set(explorer.active_proposal.containers) == {"0", "2"}
    assert "which are not live processors" not in explorer.checks.value
    explorer.grouper.value = "single-container"
    assert list(explorer.active_proposal.containers) == ["0"]
    explorer.grouper.value = "group-by-container-ids"
    assert set(explorer.active_proposal.containers) == {"0", "2"}


def test_explorer_sources_and_bad_input() -> None:
    with pytest.raises(ConfigError, match="exactly one of job, job_model, plan or tasks"):
        GrouperExplorer()
    with pytest.raises(ConfigError, match="exactly one"):
        GrouperExplorer(tasks=3, job_model=JobModel())
    with pytest.raises(ConfigError, match="unknown task grouper 'host-afinity'"):
        GrouperExplorer(tasks=3, grouper="host-afinity")
    with pytest.raises(ConfigError, match="replication_factor must be an int >= 1"):
        GrouperExplorer(tasks=3, replication_factor=0)
    with pytest.raises(ConfigError, match="pass a plan as plan="):
        GrouperExplorer(JobModel())  # type: ignore[arg-type]
    named = GrouperExplorer(tasks=["b", "a"], processors=1)
    assert list(named.current.containers["0"].tasks) == ["a", "b"]
    from_model = GrouperExplorer(job_model=named.current)
    assert from_model.current is named.current and from_model.draft == {"0": "host-0"}
    explorer = GrouperExplorer(tasks=2, processors=2)
    explorer.kill_choice.value = "0"
    explorer.kill_button.click()
    explorer.kill_choice.value = "1"
    explorer.kill_button.click()  # an expected error is one line in the widget
    assert "cannot kill the last processor" in explorer.message.value
    explorer.apply_button.click()
    assert "no job to apply to" in explorer.message.value


@pytest.mark.parametrize(
    ("locations", "message"),
    [
        pytest.param("", "locations= holds ''; every location must be a non-empty", id="blank"),
        pytest.param(["a", " "], "locations= holds ' '", id="one-blank"),
        pytest.param([], "locations= is empty", id="empty-list"),
        pytest.param(["a", 3], "locations= holds 3", id="not-a-string"),
    ],
)
def test_bad_locations_are_config_errors_naming_locations(locations: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        GrouperExplorer(tasks=4, processors=2, locations=locations)


def test_locations_lose_surrounding_spaces_as_in_the_text_box() -> None:
    explorer = GrouperExplorer(tasks=4, processors=2, locations=[" rack-a ", "rack-b"])
    assert explorer.draft == {"0": "rack-a", "1": "rack-b"}


def test_repeated_or_blank_task_names_are_config_errors_naming_tasks() -> None:
    with pytest.raises(ConfigError, match="tasks= names task 'a' more than once"):
        GrouperExplorer(tasks=["a", "b", "a"], processors=2)
    with pytest.raises(ConfigError, match="tasks= names task 'x' more than once"):
        GrouperExplorer(tasks=[TaskModel("x"), TaskModel("x")], processors=1)
    with pytest.raises(ConfigError, match="tasks= holds a blank task name"):
        GrouperExplorer(tasks=["a", " "], processors=1)


def test_apply_says_next_to_the_button_that_it_leaves_standbys_out() -> None:
    explorer = GrouperExplorer(tasks=4, processors=2)
    apply_row = next(
        child
        for child in explorer.children
        if explorer.apply_button in getattr(child, "children", ())
    )
    assert explorer.apply_note in apply_row.children
    note = "Apply leaves standbys out: the job runs no standby tasks"
    assert explorer.apply_note.value == "" and note not in explorer.snapshot_text()
    explorer.replication_factor.value = 2
    assert note in explorer.apply_note.value
    assert "replication factor 2" in explorer.apply_note.value
    assert note in explorer.snapshot_html() and note in explorer.snapshot_text()
    explorer.replication_factor.value = 1
    assert explorer.apply_note.value == ""


def test_explorer_displays_a_snapshot_next_to_the_widget_view() -> None:
    explorer = GrouperExplorer(tasks=4, processors=2)
    bundle = explorer._repr_mimebundle_()
    assert bundle[WIDGET_VIEW]["model_id"] == explorer.model_id
    assert "proposed JobModel" in bundle["text/html"]
    assert bundle["text/plain"].startswith("GrouperExplorer: host-affinity over 2 processors")
    assert (
        repr(explorer)
        == "GrouperExplorer('host-affinity', 2 processors, 0 moved, replication factor 1)"
    )


# -- pieces --------------------------------------------------------------------------------------
def test_rate_meter_keeps_the_average_once_done() -> None:
    from samza_nb.notebook.widgets._rate import RateMeter

    times = iter([0.0, 1.0, 2.0, 3.0, 20.0, 40.0])
    meter = RateMeter(window=10.0, clock=times.__next__)
    assert meter.add(0, done=False) is None
    assert meter.add(100, done=False) == 100.0
    assert meter.add(200, done=False) == 100.0
    assert meter.add(300, done=False) == 100.0
    # Running but idle for longer than the window: the window's rate falls.
    assert meter.add(300, done=False) == 0.0
    # Done: the average over the time it grew (0 → 3 s), not 0/s.
    assert meter.add(300, done=True) == 100.0


def test_operator_load_states_follow_rate_backlog_and_share() -> None:
    from samza_nb.notebook.widgets._operator_load import load_state
    from samza_nb.runtime.task.control import LONG_MAX

    assert load_state(None, [0, 5, 9], 10.0) == "idle"
    assert load_state(0.0, [0, 5, 9], 10.0) == "idle"
    # The backlog grew over the last three samples while it read: backpressured.
    assert load_state(4.0, [10, 10, 30], 10.0) == "backpressured"
    assert load_state(4.0, [3, 10, 30], 10.0) == "backpressured"
    # Two samples are not a trend; a backlog that shrank once is not growing.
    assert load_state(10.0, [10, 30], 10.0) == "busy"
    assert load_state(10.0, [10, 5, 30], 10.0) == "busy"
    # A steady backlog: busy at a high share of the stage's messages, active at a low one.
    assert load_state(10.0, [30, 30, 30], 12.0) == "busy"
    assert load_state(2.0, [30, 30, 30], 12.0) == "active"
    # No backlog: it keeps up.
    assert load_state(10.0, [0, 0, 0], 10.0) == "active"

    assert format_watermark(None) == format_watermark(-1) == "–"
    assert format_watermark(LONG_MAX) == "∞"  # a drain's +inf watermark
    assert format_watermark(1_700_000_000_123) == "2023-11-14 22:13:20.123Z"
    assert format_watermark(1_700_000_000_123, short=True) == "22:13:20"
    assert format_watermark(LONG_MAX - 1) == f"{LONG_MAX - 1} ms"


def test_stage_graph_colours_a_backpressured_operator_from_a_metrics_sequence(
    tmp_path: Path,
) -> None:
    """The widget fed a constructed sequence of metrics (a fake job and clock): the input
    operator reads at 10/s while its lag grows by 50 per second → backpressured."""
    from types import SimpleNamespace

    from samza_nb.notebook.widgets._operator_load import STATE_COLOURS

    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    plan = shuffle_app(system, "pressed").plan()
    stage0 = plan.stages[0]
    reader = stage0.operators[0]  # reads "events"
    seconds = [0.0]

    class Sequence:
        """What StageGraph reads of a Job, one step of the sequence per refresh."""

        plan: Any = None
        step = 0

        def status(self) -> Any:
            return SimpleNamespace(state="running", epoch=self.step, done=False, error=None)

        def metrics(self) -> dict[str, Any]:
            read, lag = 10 * self.step, 100 + 50 * self.step
            return {
                "streams": {"events": {"in": read, "lag": lag}},
                "operators": {op_id: read for op_id in stage0.operators},
                "operator_counters": {},
            }

        def operator_watermarks(self) -> dict[str, dict[str, tuple[int, int]]]:
            return {
                "Partition 0": {reader: (-1, 1_700_000_000_000)},
                "Partition 1": {reader: (-1, 1_700_000_005_000)},
            }

    job = Sequence()
    job.plan = plan
    graph = StageGraph(job, auto_refresh=False, clock=lambda: seconds[0])  # type: ignore[arg-type]
    for step in range(1, 5):
        seconds[0], job.step = float(step), step
        graph.refresh()
    load = graph.operator_loads[reader]
    assert load.rate == 10.0 and load.lag == 300 and load.state == "backpressured"
    assert load.watermark == 1_700_000_000_000  # the lowest over its tasks
    assert graph.stage_rates[stage0.id] == 10.0 and list(graph.stage_trends[stage0.id]) == [10.0] * 4
    svg = graph.graph.value
    assert f'stroke="{STATE_COLOURS["backpressured"]}" stroke-width="2.5" data-load="backpressured"' in svg
    assert ">10/s · lag 300<" in svg and ">backpressured<" in svg and "wm 22:13:20" in svg
    assert 'class="samza-sparkline" data-stage="0"' in svg
    text = graph.snapshot_text()
    assert reader in text and "backpressured" in text and "2023-11-14 22:13:20.000Z" in text
    # The backlog stops growing: it reads on a steady backlog, at the stage's whole rate.
    job.metrics = lambda: {  # type: ignore[method-assign]
        "streams": {"events": {"in": 60, "lag": 300}},
        "operators": {op_id: 60 for op_id in stage0.operators},
        "operator_counters": {},
    }
    for step in (5, 6, 7):
        seconds[0] = float(step)
        graph.refresh()
    assert graph.operator_loads[reader].state == "busy"
    assert f'stroke="{STATE_COLOURS["busy"]}" stroke-width="2.5" data-load="busy"' in graph.graph.value


def test_stage_graph_shows_a_windowed_jobs_watermark(tmp_path: Path) -> None:
    from samza_nb.api import Windows
    from samza_nb.testing import run_local

    start = 1_700_000_000_000
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream("clicks", 2)
    for part in range(2):
        system.write("clicks", [{"user": "a", "ts": start + 1_000 * i} for i in range(5)], partition=part)
        system.write_watermark("clicks", part, start + 60_000 + 1_000 * part)
    system.end_stream("clicks")
    app = StreamApplication("marks", job_id="1")
    out = app.output(system.output("marks-counts", partitions=1))
    (
        app.input(system.input("clicks", partitions=2))
        .window(
            Windows.keyed_tumbling(
                lambda e: e["user"], 10_000, initial=lambda: 0, fold=lambda e, n: n + 1,
                event_time=lambda e: e["ts"],
            ),
            op_id="count",
        )
        .map(lambda pane: pane.message)
        .send_to(out)
    )
    job = run_local(app, until="end-of-stream")
    graph = StageGraph(job)
    window = graph.operator_loads["marks-1-window-count"]
    assert window.messages_in == 10 and window.state == "idle"  # the job is done
    # The lowest of the two partitions' watermarks, as a UTC time.
    assert window.watermark == start + 60_000
    assert "wm 22:14:20" in graph.graph.value
    assert "2023-11-14 22:14:20.000Z" in graph.snapshot_text()
    assert "2023-11-14 22:14:20.000Z" in graph.operators_table.value


def test_table_headers_and_text_follow_the_theme() -> None:
    from samza_nb.notebook.widgets._html import html_table, paragraph

    table = html_table(["a", "b"], [["1", "2"]])
    head = table.split("<th ")[1]
    # The header's text colour is set with its background: never white on white, nor dark on
    # dark, whatever the theme.
    assert "background:var(--jp-layout-color2,#f6f8fa)" in head
    assert "color:var(--jp-content-font-color1,#24292f)" in head
    assert "color:var(--jp-content-font-color1,#24292f)" in paragraph("x")


def test_the_draining_colour_is_none_of_the_drawings_own() -> None:
    from samza_nb.notebook.widgets.drain_states import DRAINING_COLOUR
    from samza_nb.plan import _drawing_parts

    assert DRAINING_COLOUR.lower() not in _drawing_parts.__dict__.__repr__().lower()
    assert DRAINING_COLOUR != DRAINED_COLOUR


def test_drain_labels_read_sensibly() -> None:
    from samza_nb.notebook.widgets.drain_states import _upstream

    row = {"expected": 4, "heard": [], "drained": True}
    assert _upstream(row) == "all 4 via another partition (0 heard here)"
    assert _upstream({**row, "drained": False}) == "0 of 4"
    assert _upstream({**row, "heard": ["a", "b", "c", "d"]}) == "4 of 4"
    assert _upstream({**row, "expected": 0}) == "source"


# -- plans without a job ---------------------------------------------------------------------------
def test_stage_graph_of_a_bare_plan(tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    plan = shuffle_app(system, "bare").plan()
    graph = StageGraph(plan)
    assert graph.job is None and not graph.auto_refreshing
    assert graph.graph.value.count("<svg") == 1 and 'class="samza-stage"' in graph.graph.value
    assert "plan only" in graph.summary.value
    text = graph.snapshot_text()
    assert "bare-1-partition_by-by-user" in text and "intermediate" in text
    assert [len(stage.operators) for stage in plan.stages] == [3, 3]
    with pytest.raises(ConfigError, match="pass app.plan"):
        StageGraph(shuffle_app(system, "app"))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="nothing to refresh"):
        graph.start_auto_refresh()
    explorer = GrouperExplorer(plan=plan, processors=2)
    assert sorted(explorer.current.active_tasks()) == ["Partition 0", "Partition 1"]


def test_stage_graph_folds_stages_and_zooms(tmp_path: Path) -> None:
    import re

    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    graph = StageGraph(shuffle_app(system, "fold").plan())
    # As wide as its box, up to its natural width (which keeps to a notebook cell).
    natural = re.search(r'<svg [^>]*style="width:100%;max-width:([\d.]+)px', graph.graph.value)
    width = float(natural.group(1))
    assert width <= 900 and 'class="samza-plan-scroll"' in graph.graph.value
    graph.fold_buttons[1].value = True
    assert graph.folded == {1} and 'data-stage="1"' in graph.graph.value
    assert "samza-stage-folded" in graph.graph.value and "3 operators (folded)" in graph.graph.value
    graph.fold(folded=False)
    assert graph.folded == set() and "samza-stage-folded" not in graph.graph.value
    with pytest.raises(ConfigError, match="no stage 7"):
        graph.fold(7)
    graph.zoom.value = 2.0
    zoomed = float(re.search(r'<svg [^>]*style="width:([\d.]+)px', graph.graph.value).group(1))
    assert zoomed == 2 * width
    # The snapshot keeps the drawing as an image (JupyterLab's sanitizer keeps <img>, drops <svg>).
    html = graph.snapshot_html()
    assert "<svg" not in html and 'src="data:image/svg+xml;base64,' in html


def test_display_publishes_the_final_snapshot_under_its_display_id(tmp_path: Path) -> None:
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.display import display
    from IPython.utils.capture import capture_output

    InteractiveShell.instance()
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    graph = StageGraph(shuffle_app(system, "shown").plan())
    with capture_output() as captured:
        display(graph)
        graph.publish_snapshot()
    first, update = captured.outputs
    assert WIDGET_VIEW in first.data and "data:image/svg+xml" in first.data["text/html"]
    assert first.transient == update.transient == {"display_id": graph._display_id}
    assert update.update

    # Frozen: every display of it becomes the snapshot alone, which any frontend shows.
    with capture_output() as captured:
        graph.freeze()
    (frozen,) = captured.outputs
    assert frozen.update and frozen.transient == {"display_id": graph._display_id}
    assert set(frozen.data) == {"text/html", "text/plain"}
    assert "data:image/svg+xml" in frozen.data["text/html"] and graph.frozen
    assert set(graph._repr_mimebundle_()) == {"text/html", "text/plain"}


# -- a finished job ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def finished_job(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Job:
    system = EmbeddedSystem("embedded", path=tmp_path_factory.mktemp("finished") / "log")
    system.create_stream("events", 2)
    system.write("events", events(0, 40))
    system.end_stream("events")
    config = {"processor.locations": "host-a,host-b", "systems.embedded.password": SECRET}
    return run(shuffle_app(system, "finished"), config, processors=2, grouper="host-affinity")


@pytest.mark.spark
def test_stage_graph_counters_match_the_job_metrics(finished_job: Job) -> None:
    graph = StageGraph(finished_job)
    assert not graph.auto_refreshing  # the job is done: one refresh, no thread
    streams = finished_job.metrics()["streams"]
    assert graph.stream_counters == streams
    assert streams["events"]["in"] == 40 and streams["out"]["out"] == 40
    stage0, stage1 = finished_job.plan.stages
    assert graph.stage_counters[stage0.id] == {"in": 40, "out": 40, "lag": 0}
    assert graph.stage_counters[stage1.id]["out"] == 40
    svg = graph.graph.value
    assert "in 40 · lag 0" in svg and "out 40" in svg and "in 40 · out 40 · lag 0" in svg
    assert "finished, epoch" in graph.summary.value
    assert "40" in graph.stages_table.value and "40" in graph.streams_table.value
    bundle = graph._repr_mimebundle_()
    assert SECRET not in bundle["text/html"] + bundle["text/plain"]


@pytest.mark.spark
def test_run_progress_of_a_finished_job(finished_job: Job) -> None:
    clock = iter([100.0, 102.0]).__next__
    progress = RunProgress(finished_job, clock=clock)
    assert progress.job_status.state == "finished"
    assert (progress.messages_in, progress.messages_out, progress.lag) == (40, 40, 0)
    assert progress.processed == 80  # 40 from events, 40 from the intermediate stream
    assert (progress.bar.value, progress.bar.max, progress.bar.bar_style) == (40, 40, "success")
    # Seen only after it ended: the view saw no time over which it read; the job's own course
    # (from its start to the commit that read its last message) gives the rate, never 0.0/s.
    rate = finished_job.average_rate()
    assert rate is not None and rate > 0
    assert progress.rate == rate
    progress.refresh()
    assert progress.rate == rate and not re.search(r"(?<![\d.,])0\.0/s", progress.snapshot_text())  # 60.0/s is fine
    # job.plot() states the same average, in the same format.
    chart = finished_job.plot()
    assert chart.average_rate == progress.rate
    assert f"average {rate:,.1f}/s" in chart.to_svg() and f"{rate:,.1f}/s" in progress.snapshot_text()
    assert progress.phase == "finished (average rate)"
    assert "40 of 40 input messages read (100%)" in progress.snapshot_text()
    # The Spark UI's address when the session has one (the suite's may run without the UI).
    url = finished_job._executor.context().uiWebUrl  # type: ignore[attr-defined]
    assert progress.spark_ui == (url or None)
    assert ("Spark UI: <a href=" in progress.counters.value) == bool(url)


@pytest.mark.spark
def test_drain_button_on_an_ended_job_says_so_in_the_widget(finished_job: Job) -> None:
    widget = DrainStatesWidget(finished_job)
    assert widget.drain_button.disabled  # the job is done
    widget.drain_button.click()  # a click that raced the job's end
    assert "there is nothing to drain" in widget.message.value
    assert widget.drain_button.disabled


@pytest.mark.spark
def test_a_failing_refresh_is_shown_and_the_thread_still_ends(
    finished_job: Job, monkeypatch: pytest.MonkeyPatch
) -> None:
    progress = RunProgress(finished_job)

    def broken() -> dict[str, Any]:
        msg = "metrics unavailable"
        raise RuntimeError(msg)

    monkeypatch.setattr(finished_job, "metrics", broken)
    progress.start_auto_refresh(interval=0.01)
    assert progress.join(timeout=10)  # the job is done: the thread ends after one try
    assert progress.last_error == "RuntimeError: metrics unavailable"
    assert "refresh failed: RuntimeError: metrics unavailable" in progress.message.value
    assert "refresh failed" in progress.snapshot_html()


@pytest.mark.spark
def test_explorer_on_a_job_proposes_without_touching_it(finished_job: Job) -> None:
    explorer = GrouperExplorer(finished_job)
    model = finished_job.job_model
    assert explorer.draft == {"0": "host-a", "1": "host-b"} and explorer.locations.disabled
    explorer.kill_choice.value = "0"
    explorer.kill_button.click()
    assert explorer.moves == host_affinity_moves(model, {"1": "host-b"})
    assert explorer.moves and finished_job.job_model is model  # untouched until Apply
    explorer.locations.value = "elsewhere"
    assert "keep their locations" in explorer.message.value
    explorer.grouper.value = "group-by-container-count"
    explorer.processors.value = 3  # three containers for two tasks: Samza refuses
    assert explorer.proposal is None and "larger than task count" in str(explorer.error)
    explorer.apply_button.click()
    assert "cannot be grouped, nothing applied" in explorer.message.value
    assert finished_job.job_model is model
    assert SECRET not in explorer.snapshot_html()
    assert sorted(t.name for t in tasks_of_plan(finished_job.plan)) == sorted(model.active_tasks())


@pytest.mark.spark
def test_explorer_starts_on_the_jobs_grouper_and_its_options(spark: Any, tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream("events", 2)
    system.write("events", events(0, 10))
    config = {"processor.locations": "host-a,host-b"}
    job = run(shuffle_app(system, "regrouped"), config, processors=2, until="forever", background=True)
    assert GrouperExplorer(job).grouper.value == job.grouper == "group-by-container-count"
    assert GrouperExplorer(job, grouper="host-affinity").grouper.value == "host-affinity"

    # One container although two processors run: the explorer keeps the job's option, so
    # regrouping moves nothing and a new processor gets no tasks either.
    model = job.rebalance("group-by-container-count", container_count=1)
    explorer = GrouperExplorer(job)
    assert explorer.moves == [] and explorer.active_proposal is not None
    assert list(explorer.active_proposal.containers) == ["0"]
    assert explorer.current_processors == job.processors == {"0": "host-a", "1": "host-b"}
    explorer.add("host-c")
    assert explorer.draft["2"] == "host-c"  # the id Job.add_processor would give it
    assert explorer.moves == [] and list(explorer.active_proposal.containers) == ["0"]
    # Another grouper does not get the count grouper's options: it spreads the tasks.
    explorer.grouper.value = "host-affinity"
    assert explorer.error is None and len(explorer.moves) == 1
    assert sorted(explorer.active_proposal.containers) == sorted(explorer.draft)
    explorer.grouper.value = "group-by-container-count"
    assert task_assignment(job.job_model) == task_assignment(model)
    # Standbys are the real thing with a job: Apply sets the replication factor on it.
    explorer.replication_factor.value = 2
    assert explorer.proposal is not None and explorer.proposal.standby_tasks()
    assert "Apply sets replication factor 2 on the running job" in explorer.apply_note.value
    # A proposal that cannot be made: Apply is off, said once, and nothing invites to Apply.
    explorer.replication_factor.value = 4
    assert explorer.error is not None and explorer.apply_button.disabled
    assert "Apply sets" not in explorer.apply_note.value
    assert "Apply is off: the draft cannot be grouped (see above)" in explorer.apply_note.value
    assert explorer.snapshot_html().count(explorer.error) == 1
    for internal in ("assign_with_standbys", "check_location", "job.standbytasks"):
        assert internal not in explorer.snapshot_html(), explorer.error
    explorer.replication_factor.value = 2
    assert explorer.apply() is job.job_model
    assert job.replication_factor == 2 and job.job_model.standby_tasks()
    assert check_standby_invariants(job.job_model, replication_factor=2) == []
    assert job.grouper_options == {"container_count": 1}
    job.stop()


# -- a live job -------------------------------------------------------------------------------------
@pytest.mark.spark
def test_widgets_follow_a_running_job_to_its_drain(spark: Any, tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream("events", 2)
    system.write("events", events(0, 200))
    config = {
        "task.max.epoch.messages": "20",
        "job.drain-monitor.poll.interval.ms": "20",
        "processor.locations": "host-a,host-b",
    }
    job = run(
        shuffle_app(system, "live"),
        config,
        processors=2,
        grouper="host-affinity",
        until="forever",
        background=True,
    )
    graph = StageGraph(job, interval=0.1)
    progress = RunProgress(job, interval=0.1)
    drain = DrainStatesWidget(job, interval=0.1)
    explorer = GrouperExplorer(job, interval=0.1)
    assert all(w.auto_refreshing for w in (graph, progress, drain, explorer))
    deadline = time.monotonic() + 60
    while (job.epoch < 2 or len(graph.stage_trends[0]) < 2) and time.monotonic() < deadline:
        time.sleep(0.05)

    new_id = explorer.add("host-c")
    proposal = task_assignment(explorer.active_proposal)
    before = job.job_model
    explorer.apply_button.click()
    assert task_assignment(job.job_model, mode=TaskMode.ACTIVE) == proposal
    assert new_id in job.job_model.containers
    assert explorer.applied_moves == moved_tasks(before, job.job_model)
    assert explorer.current is job.job_model and explorer.moves == []
    assert "applied" in explorer.message.value and "differs" not in explorer.message.value

    drain.drain_button.click()
    assert drain.drain_button.disabled
    # The drain reads as one while it runs: the button and the summary say so.
    with drain._lock:
        if not drain.job_status.done:
            assert drain.drain_button.description == "Draining…"
            assert "job draining" in drain.summary.value
    assert job.wait(timeout=120).state == "drained"
    for widget in (graph, progress, drain, explorer):
        assert widget.join(timeout=10) and not widget.auto_refreshing
        assert widget.last_error is None

    assert progress.job_status.state == "drained" and progress.bar.bar_style == "success"
    assert progress.messages_in == job.metrics()["streams"]["events"]["in"] > 0
    assert graph.job_status.state == "drained"
    assert graph.stream_counters == job.metrics()["streams"]

    # The slider follows the newest epoch; every SSP drained there.
    assert drain.epoch_slider.value == drain.epoch_slider.max == job.epoch
    assert drain.rows and all(row["drained"] for row in drain.rows)
    assert set(drain.stream_states.values()) == {"drained"}
    assert DRAINED_COLOUR in drain.graph.value and "✓" in drain.table.value
    assert drain.drain_button.description == "Drained" and "job drained" in drain.summary.value
    # Replaying: at the first epoch nothing had drained; inputs drain before the shuffle's stream.
    drain.epoch_slider.value = drain.epoch_slider.min
    assert not any(row["drained"] for row in drain.rows)
    assert DRAINED_COLOUR not in drain.graph.value
    intermediate = "live-1-partition_by-by-user"
    for epoch in drain.epochs:
        drain.epoch_slider.value = epoch
        if drain.stream_states.get(intermediate) == "drained":
            assert drain.stream_states["events"] == "drained"
    upstream = [row for row in drain.states.rows if row["stream"] == intermediate]
    # A consumer that heard both upstream drains tells the other partitions' consumers.
    assert {row["expected"] for row in upstream} == {2}
    assert any(len(row["heard"]) == 2 for row in upstream)
    assert all(row["drained"] for row in upstream)
    # The slider runs to the job's last epoch (the states above) and the summary reads as one story.
    drain.epoch_slider.value = drain.epoch_slider.max
    text = drain.snapshot_text()
    assert "2 of 2" in text and "source" in text
    if any(len(row["heard"]) < 2 for row in upstream):
        assert "all 2 via another partition" in text
    assert drain.summary.value.count("epoch") == 1
    assert f"after epoch {job.epoch}: " in drain.summary.value and "job drained" in drain.summary.value
    drain.epoch_slider.value = drain.epochs[0]
    assert f"replaying epoch {drain.epochs[0]} of {job.epoch}" in drain.summary.value
    # The rate after the end is the average while the job read, not the last window's 0/s.
    assert progress.rate is not None and progress.rate > 0
    assert progress.phase == "drained (average rate)"
    assert all(rate is not None and rate > 0 for rate in [graph.stage_rates[0]])
    # Per operator: the stage's rate while it ran (its sparkline), the average once drained.
    assert any(rate > 0 for rate in graph.stage_trends[0])
    assert 'class="samza-sparkline" data-stage="0"' in graph.graph.value
    reader = graph.operator_loads["live-1-input-0"]
    metrics = job.metrics()
    assert reader.rate is not None and reader.rate > 0 and reader.state == "idle"
    assert reader.lag == metrics["streams"]["events"]["lag"]  # a drain leaves the rest unread
    assert reader.messages_in == metrics["operators"]["live-1-input-0"]
    assert reader.watermark is not None and format_watermark(reader.watermark) == "∞"  # drained
    text = graph.snapshot_text()
    assert "watermark" in text and "live-1-input-0" in text and format_rate(reader.rate) in text


@pytest.mark.spark
def test_settle_views_makes_a_finished_jobs_views_final_before_the_cell_ends(
    spark: Any, tmp_path: Path
) -> None:
    """Under papermill a refresh after the last cell is lost: the magics that end a job
    (stop, drain --wait, status) settle its views at once."""
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.display import display
    from IPython.utils.capture import capture_output

    from samza_nb.notebook.widgets import settle_views

    InteractiveShell.instance()
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream("events", 2)
    system.write("events", events(0, 30))
    system.end_stream("events")
    job = run(shuffle_app(system, "settled"), background=True)
    # An interval far longer than the test: only settle_views can make the view final.
    progress = RunProgress(job, interval=3600)
    with capture_output() as captured:
        display(progress)
        job.wait(timeout=120)
        assert progress.auto_refreshing
        settle_views(job)
    assert not progress.auto_refreshing
    assert progress.job_status is not None and progress.job_status.state == "finished"
    assert progress.messages_in == 30
    update = captured.outputs[-1]
    assert update.update and "finished" in update.data["text/plain"]
    # RunProgress has nothing left to do once its job ended: it became its snapshot, for any
    # frontend (a notebook saved from JupyterLab keeps the final progress).
    assert progress.frozen and WIDGET_VIEW not in update.data


@pytest.mark.spark
def test_the_explorers_preview_is_the_model_the_job_then_runs(spark: Any, tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream("events", 2)
    system.write("events", events(0, 40))
    config = {"processor.locations": "host-a,host-b,host-c"}
    job = run(shuffle_app(system, "preview"), config, processors=3, grouper="host-affinity",
              until="forever", background=True)
    explorer = GrouperExplorer(job)
    explorer.kill("1")
    explorer.kill("2")
    explorer.add("host-d")
    preview = explorer.active_proposal
    assert preview is not None and not explorer.apply_button.disabled
    assert explorer.apply() == preview  # tasks, modes, changelog partitions and locations
    assert job.job_model == preview
    # A count grouper names containers 0..N-1 whatever the processor ids: the proposal puts
    # them on the live processors, so it may be applied too.
    explorer.grouper.value = "group-by-container-count"
    counted = explorer.active_proposal
    assert counted is not None and set(counted.containers) == set(preview.containers)
    assert not explorer.apply_button.disabled
    assert job.job_model == preview
    job.stop()
    explorer.grouper.value = "host-affinity"
    explorer.refresh()
    assert explorer.apply_button.disabled and "has stopped" in explorer.apply_button.tooltip


def test_explorer_summary_and_kill_list_agree_with_the_proposal() -> None:
    explorer = GrouperExplorer(tasks=6, processors=3, grouper="group-by-container-count")
    assert explorer.kill_choice.value == "0"  # the kill list starts on a live processor
    explorer.kill_choice.value = "2"
    explorer.kill_button.click()
    assert "no processor" not in explorer.message.value
    text = explorer.snapshot_text()
    # Two of three processors are left for six tasks: balanced, so the bound is stated.
    assert "any balanced assignment moves at least" in text
    explorer.grouper.value = "single-container"
    # One container takes everything: unbalanced, and no bound it could contradict.
    assert "unbalanced" in explorer.snapshot_text()
    assert "any balanced assignment moves at least" not in explorer.snapshot_text()


@pytest.mark.parametrize("warm", [False, True])
def test_run_progress_says_spark_is_starting_before_the_first_epoch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, warm: bool
) -> None:
    from pyspark import SparkContext

    from samza_nb.testing import run_local

    # A kernel with a SparkContext already starts no JVM: the widget does not promise 5-15 s.
    monkeypatch.setattr(SparkContext, "_active_spark_context", object() if warm else None)
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream("events", 2)  # a quiet input: the job never reaches its first epoch
    job = run_local(shuffle_app(system, "quiet"), until="forever", background=True)
    try:
        progress = RunProgress(job)
        assert progress.phase == "starting Spark…"
        text = progress.snapshot_text()
        if warm:
            assert "starting the job…" in text and "JVM" not in text
        else:
            assert "starting Spark… (a fresh kernel starts a JVM first" in text
    finally:
        job.stop()


def test_apply_turns_off_when_the_job_ends_under_an_open_explorer(tmp_path: Path) -> None:
    from samza_nb.testing import run_local

    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream("events", 2)
    job = run_local(
        shuffle_app(system, "ending"), {"processor.locations": "host-a,host-b"},
        processors=2, grouper="host-affinity", until="forever", background=True,
    )
    try:
        explorer = GrouperExplorer(job, auto_refresh=False)
        explorer.add()
        assert not explorer.apply_button.disabled
    finally:
        job.stop()
    # The same draft and proposal, but the job ended: the next refresh turns Apply off.
    explorer.refresh()
    assert explorer.apply_button.disabled
    assert "Apply is off: the job has stopped" in explorer.apply_note.value
    explorer.replication_factor.value = 2
    assert "Apply sets" not in explorer.apply_note.value  # no invitation beside a disabled Apply

"""Where people look at a job: ``job.show()`` (latest messages of a stream or of an operator,
sampled inside the tasks; the job at a glance), ``job.plot()`` and ``job.lag_heatmap()``.
In-process executor."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from samza_nb.api import StreamApplication
from samza_nb.errors import JobError
from samza_nb.job.charts import JobChart, LagHeatmap, sparkline_svg
from samza_nb.job.overview import JobOverview, LatestMessages
from samza_nb.systems import EmbeddedSystem
from samza_nb.testing import run_local


@pytest.fixture
def system(tmp_path: Path) -> EmbeddedSystem:
    system = EmbeddedSystem("embedded", path=tmp_path / "log")
    system.create_stream("numbers", 2)
    system.write("numbers", list(range(100)))
    system.end_stream("numbers")
    return system


def _app(system: EmbeddedSystem) -> StreamApplication:
    app = StreamApplication("shown")
    out = app.output(system.output("squares", partitions=2))
    (
        app.input(system.input("numbers", partitions=2))
        .map(lambda n: n * n)
        .partition_by(lambda n: n % 2, op_id="by-parity")
        .map(lambda kv: kv.value + 1)
        .send_to(out)
    )
    return app


def test_show_reads_back_streams_and_samples_an_operator_inside_the_tasks(tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "open")
    system.create_stream("numbers", 2)
    system.write("numbers", list(range(100)))
    app = _app(system)
    job = run_local(app, {"task.max.epoch.messages": "10"}, background=True, until="forever")
    try:
        first_map = next(op for op in job.plan.operators if "-map-" in op)
        # An operator in the middle of a stage: sampled from the next epoch on.
        sampled = job.show(first_map, n=5)
        assert isinstance(sampled, LatestMessages) and sampled.kind == "operator"
        system.write("numbers", list(range(100, 140)))
        deadline = time.monotonic() + 60
        while not job.show(first_map, n=5).rows and time.monotonic() < deadline:
            time.sleep(0.05)
        rows = job.show(first_map, n=5).rows
        assert 0 < len(rows) <= 5
        assert all(int(row["message"]) in range(140) for row in rows)
        # Only the sampled operator is tapped.
        assert set(job._driver.samples) == {first_map}
    finally:
        job.stop()
    # Streams are read back: the input, the intermediate stream (its operator) and the output.
    squares = job.show("squares", n=7)
    assert isinstance(squares, LatestMessages) and len(squares.rows) == 7
    assert {"partition", "offset", "key", "value"} <= set(squares.rows[0])
    # No timestamps: the newest of every partition, in turn.
    assert {row["partition"] for row in squares.rows} == {0, 1}
    shuffle = job.show("by-parity", n=3)
    assert shuffle.kind == "intermediate stream" and len(shuffle.rows) <= 3
    assert len(job.show("numbers", n=4).rows) == 4
    assert "latest 7 messages of output stream squares" in squares._repr_html_()
    with pytest.raises(JobError, match="neither a stream nor an operator"):
        job.show("nope")
    with pytest.raises(JobError, match="positive number"):
        job.show("squares", n=0)


def test_the_job_at_a_glance_its_course_and_its_lag_heatmap(system: EmbeddedSystem) -> None:
    job = run_local(_app(system), {"task.max.epoch.messages": "10"})
    overview = job.show()
    assert isinstance(overview, JobOverview)
    page = overview._repr_html_()
    assert "samza-lag-heatmap" in page and "latest 20 messages of output stream squares" in page
    heatmap = job.lag_heatmap()
    assert isinstance(heatmap, LagHeatmap)
    assert heatmap.tasks == ["Partition 0", "Partition 1"]
    assert "numbers#0" in heatmap.columns and sum(heatmap.cells.values()) == 0
    assert heatmap.to_frame().shape[0] == 2
    chart = job.plot()
    assert isinstance(chart, JobChart) and len(chart.rows) >= 5
    frame = chart.to_frame()
    assert list(frame["messages_in"])[-1] == 100
    assert frame["messages_in"].is_monotonic_increasing
    # The course starts with all 100 messages to read and ends with none.
    lags = [row["lag"] for row in chart.rows if row["lag"] is not None]
    assert lags[-1] == 0 and max(lags) > 0
    assert chart._repr_html_().count('<img class="samza-plan-image" src="data:image/svg+xml') == 2
    svg = chart.to_svg()
    assert svg.count("<svg") == 2 and 'data-series="rate"' in svg and 'data-series="lag"' in svg
    # Real units on one time axis from the job's start; the average is the job's own.
    rate, lag = chart.panel("rate"), chart.panel("lag")
    assert (rate.unit, lag.unit) == ("messages/s", "messages")
    assert rate.x_range == lag.x_range == (0.0, chart.rows[-1]["seconds"])
    assert chart.average_rate == job.average_rate() and rate.average == job.average_rate()
    assert max(lag.values) <= lag.y_max and max(rate.values) <= rate.y_max
    by_epoch = job.plot("messages_in", x="epoch")
    assert by_epoch.to_svg().count("<svg") == 1
    with pytest.raises(JobError, match="plot\\(\\) knows"):
        job.plot("throughput")


def test_a_sparkline_draws_a_series() -> None:
    assert sparkline_svg([1.0]) == ""
    line = sparkline_svg([0.0, 2.0, 1.0])
    assert line.startswith("<svg") and "polyline" in line


def test_the_average_rate_runs_from_the_start_to_the_commit_that_read_the_last_message() -> None:
    from samza_nb.job.history import JobHistory

    times = iter([10.0, 10.5, 12.0, 13.0, 20.0])
    history = JobHistory(clock=times.__next__)
    assert history.average_rate() is None  # not begun
    history.begin()  # at 10.0
    assert history.average_rate() is None  # nothing read
    history.add(1, 0, 0, None)  # 10.5: an epoch that read nothing
    history.add(2, 400, 0, None)  # 12.0
    history.add(3, 1_000, 10, None)  # 13.0: the last input message
    history.add(4, 1_000, 12, None)  # 20.0: idle epochs after it do not slow the average
    assert history.average_rate() == 1_000 / 3.0
